package clitest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestDoctor(t *testing.T) {
	t.Parallel()
	d := newDen(t)
	// A provisioned computer: doctor starts it instead of probing the
	// network for a mirror to provision from.
	provision(t, d, "default")

	r := d.Run("doctor")
	if r.Code != 0 {
		t.Errorf("doctor: want exit 0, got %v", r)
	}
	for _, w := range []string{"isolation: namespaces", "bwrap", "seccomp", "free disk"} {
		if !strings.Contains(r.Stdout, w) {
			t.Errorf("doctor output does not mention %q:\n%s", w, r.Stdout)
		}
	}

	r = d.Run("doctor", "--json")
	var rep struct {
		OK     *bool  `json:"ok"`
		Tier   string `json:"tier"`
		Checks []any  `json:"checks"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v\n%v", err, r)
	}
	if r.Code != 0 || rep.OK == nil || !*rep.OK || rep.Tier != "namespaces" || len(rep.Checks) == 0 {
		t.Errorf("doctor --json: want exit 0, \"ok\": true, tier namespaces and checks; got %+v\n%v", rep, r)
	}
}

func TestMissingBwrapRunsNothing(t *testing.T) {
	t.Parallel()
	d := newDen(t)
	provision(t, d, "default")
	cfg := d.WriteConfig("bad-bwrap.toml", "[sandbox]\nbwrap = \"/nonexistent/bwrap\"\n")

	r := d.Run("--config", cfg, "doctor")
	if r.Code != 1 || !strings.Contains(strings.ToLower(r.Stdout), "unavailable") {
		t.Errorf("doctor with a missing bwrap: want exit 1 and \"unavailable\", got %v", r)
	}

	host := t.TempDir()
	r = d.Run("--config", cfg, "exec", "--mount", host+":/mnt/w", "--", "sh", "-c", "touch /mnt/w/ran")
	if r.Code != 125 || !strings.Contains(r.Stderr, "bubblewrap") {
		t.Errorf("exec with a missing bwrap: want exit 125 and a message to install bubblewrap, got %v", r)
	}
	if _, err := os.Stat(filepath.Join(host, "ran")); err == nil {
		t.Errorf("exec with a missing bwrap ran the command")
	}
}

func TestBadConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, text string
		lines      []int // any of them is a right answer
	}{
		{"syntax error", "[sandbox]\nbackend = \"bwrap\"\nbwrap = \n", []int{3}},
		{"unterminated string", "# den\n\n[rootfs]\nalpine_mirror = \"https://x\n", []int{4}},
		{"unknown key", "[sandbox]\nbackend = \"bwrap\"\n\n[rootfs]\nalpine_mirror = \"https://example.invalid\"\nmirror = \"x\"\n", []int{6}},
		// The unknown key is a prefix of a known key set earlier.
		{"unknown key prefix of a known one", "[rootfs]\nalpine_mirror = \"https://example.invalid\"\nalpine = \"3.21\"\n", []int{3}},
		{"unknown table", "# den\n[sandbx]\nbackend = \"bwrap\"\n", []int{2, 3}},
		{"bad value in a later agent", "[agents.default]\nnetwork = \"off\"\n\n[agents.other]\nnetwork = \"maybe\"\n", []int{5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := New(t, denBin) // den fails before it needs a sandbox
			cfg := d.WriteConfig("config.toml", c.text)
			r := d.Run("--config", cfg, "exec", "--", "true")
			if r.Code != 125 {
				t.Errorf("want exit 125, got %v", r)
			}
			ok := false
			for _, n := range c.lines {
				ok = ok || strings.Contains(r.Stderr, cfg+":"+strconv.Itoa(n)+":")
			}
			if !ok {
				t.Errorf("want the message to name %s and line %v, got:\n%s", cfg, c.lines, r.Stderr)
			}
		})
	}
}
