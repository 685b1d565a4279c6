package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"den.dev/den/internal/config"
)

func TestConfigUnset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(path, []byte("[agents.default]\nmodel = \"a/b\"\n\n[groups.fast]\nmembers = [\"a/b\"]\n\n[providers.x]\ntype = \"openai\"\napi_key = \"sk-cli-secret\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &globals{configPath: path}
	for _, c := range []struct {
		key, want string
	}{
		{"agents.default.model", "removed agents.default.model (was \"a/b\")\n"},
		{"groups.fast", "removed groups.fast, which held:\ngroups.fast.members = [\"a/b\"]\n"},
		{"providers.x.api_key", "removed providers.x.api_key (was ********)\n"},
	} {
		out, err := runSub(t, g, configCmd, "unset", c.key)
		if err != nil || out != c.want {
			t.Errorf("unset %s: %v\n%s", c.key, err, out)
		}
	}
	if _, err := runSub(t, g, configCmd, "unset", "groups.fast"); !errors.Is(err, config.ErrNoKey) {
		t.Errorf("unset of what is gone: %v", err)
	}
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), "fast") || strings.Contains(string(b), "sk-cli") || !strings.Contains(string(b), "[agents.default]") {
		t.Errorf("file:\n%s", b)
	}
}
