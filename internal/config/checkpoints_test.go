package config

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckpoints(t *testing.T) {
	for _, c := range []struct {
		text   string
		budget int64
		off    bool
		keep   int
	}{
		{"", 0, false, 0},
		{"checkpoints = \"2GiB\"\ncheckpoints_keep = 10\n", 2 << 30, false, 10},
		{"checkpoints = \"off\"\n", 0, true, 0},
	} {
		cfg, err := Load(write(t, "[agents.a]\n"+c.text), true)
		if err != nil {
			t.Fatalf("%q: %v", c.text, err)
		}
		a := cfg.Agent("a")
		budget, off, err := a.CheckpointBudget()
		if err != nil || budget != c.budget || off != c.off || a.CheckpointsKeep != c.keep {
			t.Errorf("%q: budget %d off %v keep %d err %v", c.text, budget, off, a.CheckpointsKeep, err)
		}
	}
	for _, bad := range []string{"checkpoints = \"lots\"\n", "checkpoints = \"1MiB\"\n", "checkpoints_keep = -1\n"} {
		_, err := Load(write(t, "[agents.a]\n"+bad), true)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), ":2: agents.a.checkpoints") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
