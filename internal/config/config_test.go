package config

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func write(t *testing.T, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoad(t *testing.T) {
	p := write(t, `
[sandbox]
backend = "proot"

[agents.notes]
rootfs = "debian"
network = "off"
mounts = ["/tmp:/mnt/tmp:ro"]
memory = "1.5GiB"
pids = 100
`)
	c, err := Load(p, true)
	if err != nil {
		t.Fatal(err)
	}
	a := c.Agent("notes")
	if c.Sandbox.Backend != "proot" || a.Rootfs != "debian" || a.Network != "off" || len(a.Mounts) != 1 || a.Pids != 100 {
		t.Errorf("loaded %+v %+v", c.Sandbox, a)
	}
	if n, _ := ParseBytes(a.Memory); n != 1536<<20 {
		t.Errorf("memory %d", n)
	}
}

func TestMissingFile(t *testing.T) {
	c, err := Load(filepath.Join(t.TempDir(), "none.toml"), false)
	if err != nil || len(c.Agents) != 0 {
		t.Errorf("default path missing: %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "none.toml"), true); err == nil {
		t.Error("a named missing file must be an error")
	}
}

func TestErrorsNameTheLine(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"[sandbox]\nbackend = \n", ":2:"},
		{"[sandbox]\nbackend = \"docker\"\n", ":2:"},
		{"[agents.a]\n\nnetwork = \"maybe\"\n", ":3:"},
		{"[agents.a]\nmemory = \"lots\"\n", ":2:"},
		{"[agents.a]\ncolour = \"red\"\n", "unknown key"},
		{"[agents.a]\ncpu_weight = 20000\n", "cpu_weight"},
		{"[rootfs]\nalpine_mirror = \"x\"\nalpine = \"3.21\"\n", ":3: unknown key rootfs.alpine"},
		{"# den\n[sandbx]\nbackend = \"bwrap\"\n", ":2: unknown key sandbx"},
		{"[agents.default]\nnetwork = \"off\"\n\n[agents.other]\nnetwork = \"maybe\"\n", ":5: agents.other.network"},
		{"[server]\nlisten = \"127.0.0.1:7700\"\npush_contact = \"den@example.org\"\n", ":3: server.push_contact"},
		{"[server]\npush_contact = \"http://den.example.org\"\n", ":2: server.push_contact"},
		{"[server]\npush_contact = \"mailto:\"\n", ":2: server.push_contact"},
		{"[server]\npush = \"no\"\n", "push"},
		{"[browser]\nidle = \"10m\"\nmemory = \"lots\"\n", ":3: browser.memory: size \"lots\""},
		{"[browser]\nmemory = \"512K\"\n", ":2: browser.memory: size \"512K\": at least 1 MiB"},
		{"[browser]\n\npids = -1\n", ":3: browser.pids -1"},
		{"[agents.a]\negress = \"allowlist\"\n\n[agents.a.skills.weather]\nallow = [\"bad host\"]\n", ":5: agents.a.skills.weather.allow: egress rule \"bad host\""},
	} {
		p := write(t, c.text)
		_, err := Load(p, true)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), p) {
			t.Errorf("%q: %v (want %q and the path)", c.text, err, c.want)
		}
	}
}

func TestBrowserLimits(t *testing.T) {
	for _, c := range []struct {
		memory      string
		pids        int64
		wantMem     int64
		wantPids    int64
		description string
	}{
		{"", 0, 0, 0, "unset: den's defaults"},
		{"512MiB", 256, 512 << 20, 256, "set"},
		{"1.5G", 0, 1536 << 20, 0, "fractional"},
		{"unlimited", 0, -1, 0, "no limit"},
		{"0", 0, -1, 0, "no limit"},
	} {
		p := write(t, "[browser]\nmemory = \""+c.memory+"\"\npids = "+strconv.FormatInt(c.pids, 10)+"\n")
		cfg, err := Load(p, true)
		if err != nil {
			t.Fatalf("%s: %v", c.description, err)
		}
		mem, pids, err := cfg.Browser.Limits()
		if err != nil || mem != c.wantMem || pids != c.wantPids {
			t.Errorf("%s: memory %q, pids %d: got %d, %d, %v; want %d, %d", c.description, c.memory, c.pids, mem, pids, err, c.wantMem, c.wantPids)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"1024": 1024, "1K": 1024, "2M": 2 << 20, "3GiB": 3 << 30, "1.5G": 3 << 29, "512MB": 512 << 20} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("%s: %d %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "x", "-1G", "1Q"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestSetKeepsCommentsAndGetMasksSecrets(t *testing.T) {
	p := write(t, "# my den\n[agents.default]\n# the model\nmodel = \"anthropic/claude-sonnet-4-5\"\n")
	old, err := Set(p, "agents.default.model", "openai/gpt-5")
	if err != nil || old != `"anthropic/claude-sonnet-4-5"` {
		t.Fatalf("set: %q %v", old, err)
	}
	if _, err := Set(p, "agents.default.pids", "100"); err != nil {
		t.Fatal(err)
	}
	if _, err := Set(p, "providers.local.type", "openai"); err != nil {
		t.Fatal(err)
	}
	if _, err := Set(p, "providers.local.api_key", "sk-secret-123"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	s := string(b)
	for _, want := range []string{"# my den", "# the model", `model = "openai/gpt-5"`, "pids = 100", "[providers.local]"} {
		if !strings.Contains(s, want) {
			t.Errorf("file lacks %q:\n%s", want, s)
		}
	}
	c, err := Load(p, true)
	if err != nil || c.Agent("default").Pids != 100 || c.Providers["local"].APIKey != "sk-secret-123" {
		t.Fatalf("reload: %v %+v", err, c)
	}
	got, err := Get(p, "providers")
	if err != nil || strings.Contains(got, "sk-secret") || !strings.Contains(got, "providers.local.api_key = \"********\"") {
		t.Errorf("get providers: %q %v", got, err)
	}
	if got, _ := Get(p, "agents.default.model"); got != `"openai/gpt-5"` {
		t.Errorf("get model: %q", got)
	}
	if _, err := Get(p, "agents.nobody.model"); !errors.Is(err, ErrNoKey) {
		t.Errorf("missing key: %v", err)
	}
	// A value that makes the file invalid is refused, and nothing changes.
	before, _ := os.ReadFile(p)
	if _, err := Set(p, "agents.default.network", "sometimes"); err == nil {
		t.Error("invalid value accepted")
	}
	if after, _ := os.ReadFile(p); string(after) != string(before) {
		t.Error("file changed by a refused set")
	}
}

// TestServerPush: push is on unless set to false; push_contact takes a
// mailto: address or an https: URL.
func TestServerPush(t *testing.T) {
	for _, c := range []struct {
		text    string
		on      bool
		contact string
	}{
		{"", true, ""},
		{"[server]\npush = true\n", true, ""},
		{"[server]\npush = false\n", false, ""},
		{"[server]\npush_contact = \"mailto:me@example.org\"\n", true, "mailto:me@example.org"},
		{"[server]\npush_contact = \"https://den.example.ts.net\"\n", true, "https://den.example.ts.net"},
	} {
		c2, err := Load(write(t, c.text), true)
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		if c2.Server.PushOn() != c.on || c2.Server.PushContact != c.contact {
			t.Errorf("%q: push on %v, contact %q", c.text, c2.Server.PushOn(), c2.Server.PushContact)
		}
	}
}
