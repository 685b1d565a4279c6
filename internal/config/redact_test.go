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
		name: "switches named after secrets",
		in:   "[backup]\nwith_secrets = true\nevery = \"24h\"\n",
		kept: []string{"with_secrets = true"},
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

// TestBackupSection: [backup] is read and checked.
func TestBackupSection(t *testing.T) {
	dir := t.TempDir()
	load := func(text string) (*Config, error) {
		p := filepath.Join(dir, "config.toml")
		os.WriteFile(p, []byte(text), 0o600)
		return Load(p, true)
	}
	c, err := load("[backup]\nevery = \"12h\"\ndir = \"/srv/den\"\nkeep = 3\nexclude_computers = true\n")
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := c.Backup.Interval(); d.Hours() != 12 || c.Backup.Kept() != 3 || c.Backup.Folder("/data") != "/srv/den" || !c.Backup.ExcludeComputers {
		t.Errorf("backup %+v", c.Backup)
	}
	c, _ = load("")
	if d, _ := c.Backup.Interval(); d != 0 || c.Backup.Kept() != DefaultBackupKeep || c.Backup.Folder("/data") != "/data/backups" {
		t.Errorf("defaults %+v", c.Backup)
	}
	for _, bad := range []string{"[backup]\nevery = \"soon\"\n", "[backup]\nevery = \"10ms\"\n", "[backup]\nkeep = -1\n", "[backup]\ndir = \"rel/dir\"\n"} {
		if _, err := load(bad); err == nil || !strings.Contains(err.Error(), "backup.") {
			t.Errorf("%q: want an error naming the key, got %v", bad, err)
		}
	}
}
