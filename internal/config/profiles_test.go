package config

import (
	"errors"
	"strings"
	"testing"
)

func TestProfiles(t *testing.T) {
	c, err := Load(write(t, `
[subagents]
max_running = 2
max_depth = 2

[profiles.researcher]
description = "Reads the web and reports"
model = "anthropic/claude-haiku-5-5"
instructions = "Cite your sources."
tools = ["shell_execute", "file_*", "den-model"]
trust = "restricted"
budget = "0.50"
max_turns = 30
`), true)
	if err != nil {
		t.Fatal(err)
	}
	p, ok := c.Profile("researcher")
	if !ok || p.Model != "anthropic/claude-haiku-5-5" || len(p.Tools) != 3 || p.Trust != "restricted" || p.Budget != "0.50" || p.MaxTurns != 30 {
		t.Errorf("profile %+v %v", p, ok)
	}
	if c.Subagents.Running() != 2 || c.Subagents.Depth() != 2 {
		t.Errorf("limits %+v", c.Subagents)
	}
	var none Subagents
	if none.Running() != DefaultMaxRunning || none.Depth() != DefaultMaxDepth || DefaultMaxRunning != 3 || DefaultMaxDepth != 1 {
		t.Errorf("defaults %d %d", none.Running(), none.Depth())
	}
}

func TestBadProfiles(t *testing.T) {
	for _, tc := range []struct{ toml, want string }{
		{"[profiles.a]\ntrust = \"root\"\n", "profiles.a.trust"},
		{"[profiles.a]\nbudget = \"lots\"\n", "profiles.a.budget"},
		{"[profiles.a]\ntools = [\"file_[\"]\n", "profiles.a.tools"},
		{"[profiles.a]\ntools = [\"\"]\n", "profiles.a.tools"},
		{"[profiles.a]\nmax_turns = -1\n", "profiles.a.max_turns"},
		{"[profiles.\"a b\"]\nmodel = \"x\"\n", "profile name"},
		{"[subagents]\nmax_running = 100\n", "subagents.max_running"},
		{"[subagents]\nmax_depth = -1\n", "subagents.max_depth"},
		{"[profiles.a]\ncolour = \"red\"\n", "unknown key"},
	} {
		_, err := Load(write(t, tc.toml), true)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error naming %s", tc.toml, err, tc.want)
		}
	}
}
