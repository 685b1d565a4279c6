package permission

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRedact(t *testing.T) {
	tests := []struct {
		name string
		in   []string
		want []string
	}{
		{"flag value", []string{"--api-key", "abc123", "--model", "x"}, []string{"--api-key", Redacted, "--model", "x"}},
		{"flag equals", []string{"--token=abc", "--password=hunter2"}, []string{"--token=" + Redacted, "--password=" + Redacted}},
		{"camel flag", []string{"-apiKey", "zzz"}, []string{"-apiKey", Redacted}},
		{"max-tokens is not secret", []string{"--max-tokens", "4096"}, []string{"--max-tokens", "4096"}},
		{"secret flag then flag", []string{"--token", "--verbose"}, []string{"--token", "--verbose"}},
		{"env assignment", []string{"OPENAI_API_KEY=whatever", "HOME=/root"}, []string{"OPENAI_API_KEY=" + Redacted, "HOME=/root"}},
		{"setting key", []string{"set", "providers.openai.api_key", "plain-value"}, []string{"set", "providers.openai.api_key", Redacted}},
		{"setting naming a variable", []string{"set", "providers.openai.api_key_env", "OPENAI_KEY"}, []string{"set", "providers.openai.api_key_env", "OPENAI_KEY"}},
		{"plain setting", []string{"set", "agents.default.model", "anthropic/claude"}, []string{"set", "agents.default.model", "anthropic/claude"}},
		{"openai key", []string{"use sk-proj-abcdefghijklmnop1234 now"}, []string{"use " + Redacted + " now"}},
		{"anthropic key", []string{"sk-ant-api03-AbCdEfGhIjKlMnOpQrStUv"}, []string{Redacted}},
		{"github", []string{"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}, []string{Redacted}},
		{"github pat", []string{"github_pat_11ABCDEFG0123456789_abcdefghij"}, []string{Redacted}},
		{"aws", []string{"key AKIAIOSFODNN7EXAMPLE!"}, []string{"key " + Redacted + "!"}},
		{"slack", []string{"xoxb-123456789012-abcdefABCDEF"}, []string{Redacted}},
		{"google", []string{"AIzaSyA-abcdefghijklmnopqrstuvwxyz01234"}, []string{Redacted}},
		{"jwt", []string{"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"}, []string{Redacted}},
		{"bearer", []string{"Authorization: Bearer abc.def-ghi_jkl"}, []string{"Authorization: " + Redacted}},
		{"url password", []string{"https://me:s3cret@example.com/x"}, []string{"https://me:" + Redacted + "@example.com/x"}},
		{"long hex", []string{"d41d8cd98f00b204e9800998ecf8427e"}, []string{Redacted}},
		{"long base64", []string{"token: QWxhZGRpbjpvcGVuIHNlc2FtZQ9aZ3xLm2Pq"}, []string{"token: " + Redacted}},
		{"pem", []string{"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----"}, []string{Redacted}},
		{"ordinary words", []string{"hello", "--title", "Build finished", "/workspace/some/Long_Path_Name2/file.txt"},
			[]string{"hello", "--title", "Build finished", "/workspace/some/Long_Path_Name2/file.txt"}},
		{"session id", []string{"show", "01jd2k3m4n5p6q7r8s9t"}, []string{"show", "01jd2k3m4n5p6q7r8s9t"}},
		{"identifier words", []string{"my-very-long-package-name-for-testing-2"}, []string{"my-very-long-package-name-for-testing-2"}},
		{"url", []string{"https://example.com/search?q=hello"}, []string{"https://example.com/search?q=hello"}},
		{"empty", nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Redact(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Redact(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestRedactKeepsLongArgsWhole(t *testing.T) {
	long := strings.Repeat("é", 1000) // 2000 bytes
	if got := Redact([]string{long})[0]; got != long {
		t.Errorf("Redact cut a long argument to %d bytes", len(got))
	}
}

func TestRedactEnv(t *testing.T) {
	got := RedactEnv(map[string]string{"GITHUB_TOKEN": "x", "LANG": "C.UTF-8", "NOTE": "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "EMPTY_SECRET": ""})
	want := map[string]string{"GITHUB_TOKEN": Redacted, "LANG": "C.UTF-8", "NOTE": Redacted, "EMPTY_SECRET": ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RedactEnv (-want +got):\n%s", diff)
	}
}
