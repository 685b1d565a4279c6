package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRedact: every secret's value goes, and nothing else changes: the
// comments, the other keys, the layout; the file still loads.
func TestRedact(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		keys     []string
		gone     []string // text that must not remain
		kept     []string // text that must remain
	}{{
		name: "line by line",
		in: `# my den
[agents.default]
model = "anthropic/claude-sonnet-5-5" # the usual

[providers.work]
type = "openai"
base_url = "https://bob:hunter2@llm.example.org/v1"
api_key = "sk-live-0123456789"
api_key_env = "WORK_KEY"

[providers.work.headers]
Authorization = "Bearer tok-abcdef"
X-Team = "blue"
`,
		keys: []string{"providers.work.api_key", "providers.work.base_url", "providers.work.headers.Authorization", "providers.work.headers.X-Team"},
		gone: []string{"sk-live-0123456789", "hunter2", "tok-abcdef", "blue"},
		kept: []string{"# my den", "# the usual", `model = "anthropic/claude-sonnet-5-5"`, `base_url = "https://bob@llm.example.org/v1"`, `api_key = ""`, `api_key_env = "WORK_KEY"`},
	}, {
		name: "inline table",
		in: `[providers.work]
type = "openai"
base_url = "https://llm.example.org/v1"
headers = { Authorization = "Bearer tok-inline" }
`,
		keys: []string{"providers.work.headers.Authorization"},
		gone: []string{"tok-inline"},
		kept: []string{"https://llm.example.org/v1", "written by den backup"},
	}, {
		name: "no secrets",
		in:   "[agents.default]\nmodel = \"a/b\" # keep me\n",
		kept: []string{"# keep me"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			out, keys, err := Redact([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(keys, tc.keys) {
				t.Errorf("keys %q, want %q", keys, tc.keys)
			}
			for _, s := range tc.gone {
				if strings.Contains(string(out), s) {
					t.Errorf("%q is still in:\n%s", s, out)
				}
			}
			for _, s := range tc.kept {
				if !strings.Contains(strings.ToLower(string(out)), strings.ToLower(s)) {
					t.Errorf("%q is gone from:\n%s", s, out)
				}
			}
			p := filepath.Join(t.TempDir(), "config.toml")
			os.WriteFile(p, out, 0o600)
			if _, err := Load(p, true); err != nil {
				t.Errorf("the redacted file does not load: %v\n%s", err, out)
			}
		})
	}

	if _, _, err := Redact([]byte("[x\n")); err == nil {
		t.Error("a file that does not decode: want an error")
	}
}
