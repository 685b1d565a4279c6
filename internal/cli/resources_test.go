package cli

import (
	"testing"

	"den.dev/den/internal/resource"
)

// TestWithHostPaths: each den:// URL of an answer is followed once by
// its host path, after the Markdown around it and before the
// punctuation after it; what is not a den:// URL stays as it is.
func TestWithHostPaths(t *testing.T) {
	host := func(u resource.URL) string {
		if u.Kind.Scope() == resource.PerAgent {
			return "/data/agents/default/" + string(u.Kind) + "/" + u.Path
		}
		return "/data/s1/" + string(u.Kind) + "/" + u.Path
	}
	for _, tt := range []struct{ in, want string }{
		{"See den://workspace/report.md", "See den://workspace/report.md (/data/s1/workspace/report.md)"},
		{"See den://workspace/report.md.", "See den://workspace/report.md (/data/s1/workspace/report.md)."},
		{"den://workspace/a.png, den://memory/GLOBAL.md!", "den://workspace/a.png (/data/s1/workspace/a.png), den://memory/GLOBAL.md (/data/agents/default/memory/GLOBAL.md)!"},
		{"[the report](den://workspace/report.md) is done", "[the report](den://workspace/report.md) (/data/s1/workspace/report.md) is done"},
		{"<den://workspace/a.txt>", "<den://workspace/a.txt> (/data/s1/workspace/a.txt)"},
		{"`den://workspace/a.txt`", "`den://workspace/a.txt` (/data/s1/workspace/a.txt)"},
		{"**den://workspace/a.txt**", "**den://workspace/a.txt** (/data/s1/workspace/a.txt)"},
		{"den://workspace/my%20report.md", "den://workspace/my%20report.md (/data/s1/workspace/my report.md)"},
		{"twice: den://workspace/a and den://workspace/a", "twice: den://workspace/a (/data/s1/workspace/a) and den://workspace/a"},
		{"den://workspace/../../etc/shadow", "den://workspace/../../etc/shadow"},
		{"den://root/.ssh/id_rsa and den://workspace/%2e%2e", "den://root/.ssh/id_rsa and den://workspace/%2e%2e"},
		{"no URL at all: /workspace/a.txt, https://example.com", "no URL at all: /workspace/a.txt, https://example.com"},
		{"", ""},
	} {
		if got := withHostPaths(tt.in, host); got != tt.want {
			t.Errorf("withHostPaths(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
	if got := withHostPaths("den://workspace/a.txt", func(resource.URL) string { return "" }); got != "den://workspace/a.txt" {
		t.Errorf("without host paths: %q", got)
	}
}
