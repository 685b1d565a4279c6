package cli

import (
	"testing"

	"den.dev/den/internal/config"
)

// TestDefaultLimits: with nothing configured, a computer still has a
// memory limit (half the host's), a bounded /tmp, a disk cap, a process
// limit and a lower CPU weight; "unlimited" lifts one, sizes set one.
func TestDefaultLimits(t *testing.T) {
	o, err := sessionOptions(config.Agent{}, &computerFlags{})
	if err != nil {
		t.Fatal(err)
	}
	l := o.Limits
	if l.MemoryBytes <= 0 || l.TmpBytes != 1<<30 || l.DiskBytes != 20<<30 || l.Pids != DefaultPids || l.CPUWeight != 50 {
		t.Errorf("defaults: %+v", l)
	}
	o, err = sessionOptions(config.Agent{Memory: "unlimited", Tmp: "64MiB", Disk: "2GiB", Pids: 100, CPUWeight: 200}, &computerFlags{})
	if err != nil {
		t.Fatal(err)
	}
	l = o.Limits
	if l.MemoryBytes != 0 || l.TmpBytes != 64<<20 || l.DiskBytes != 2<<30 || l.Pids != 100 || l.CPUWeight != 200 {
		t.Errorf("configured: %+v", l)
	}
	if _, err := sessionOptions(config.Agent{Disk: "lots"}, &computerFlags{}); err == nil {
		t.Error("a bad size was accepted")
	}
}
