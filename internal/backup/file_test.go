package backup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestRotate keeps the newest scheduled backups by the times in their
// names, and never touches files of other names.
func TestRotate(t *testing.T) {
	dir := t.TempDir()
	base := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	var made []string
	for i := range 5 {
		name := ScheduledName(base.Add(time.Duration(i) * 24 * time.Hour))
		made = append(made, name)
		os.WriteFile(filepath.Join(dir, name), nil, 0o600)
	}
	for _, other := range []string{"mine.tar.gz", "den-backup-latest.tar.gz"} {
		os.WriteFile(filepath.Join(dir, other), nil, 0o600)
	}
	stale := filepath.Join(dir, "."+made[0]+tmpMark+"123")
	os.WriteFile(stale, nil, 0o600)
	old := time.Now().Add(-48 * time.Hour)
	os.Chtimes(stale, old, old)

	removed, err := Rotate(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, made[:3]) {
		t.Errorf("removed %q, want %q", removed, made[:3])
	}
	names, times, _ := Scheduled(dir)
	if !slices.Equal(names, made[3:]) || !times[1].Equal(base.Add(96*time.Hour)) {
		t.Errorf("left %q %v", names, times)
	}
	for _, other := range []string{"mine.tar.gz", "den-backup-latest.tar.gz"} {
		if _, err := os.Stat(filepath.Join(dir, other)); err != nil {
			t.Errorf("%s: %v", other, err)
		}
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("an interrupted backup's temporary file older than a day is still there")
	}
}

// TestWriteFile: the file is 0600 and whole, an existing one is never
// replaced, and a failed backup leaves nothing.
func TestWriteFile(t *testing.T) {
	f := newFixture(t)
	out := filepath.Join(t.TempDir(), "b.tar.gz")
	o := Options{DataDir: f.data, ConfigPath: f.config}
	if _, err := WriteFile(context.Background(), out, o); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(out)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%v %v", fi, err)
	}
	if _, err := WriteFile(context.Background(), out, o); !errors.Is(err, ErrExists) {
		t.Errorf("over an existing file: %v, want ErrExists", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	other := filepath.Join(filepath.Dir(out), "c.tar.gz")
	if _, err := WriteFile(ctx, other, o); err == nil {
		t.Error("a canceled backup: want an error")
	}
	if ents, _ := os.ReadDir(filepath.Dir(out)); len(ents) != 1 {
		t.Errorf("the folder holds %d files, want the first backup alone", len(ents))
	}
}
