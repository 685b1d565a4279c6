package backup

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox/sandboxtest"
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

// TestWriteFileKeepsRoom: a backup that could leave its disk less free
// than den keeps is refused before its first byte, naming what it needs
// and what is free; one during which the free space falls under that
// stops; neither leaves a file.
func TestWriteFileKeepsRoom(t *testing.T) {
	f := newFixture(t)
	o := Options{DataDir: f.data, ConfigPath: f.config}
	const disk = 100 << 30 // den keeps 5 GiB free
	for _, tc := range []struct {
		name string
		free func(looks int) uint64
		says []string
	}{
		{"too little free to start", func(int) uint64 { return 5<<30 + 64<<10 }, []string{"needs up to", "5.0 GiB is free", "leaves 5.0 GiB of it free"}},
		{"the disk fills meanwhile", func(looks int) uint64 {
			if looks > 2 {
				return 4 << 30
			}
			return 50 << 30
		}, []string{"4.0 GiB is free after", "under the 5.0 GiB den leaves free"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			looks := 0
			r := room{every: 1 << 10, statfs: func(string) (uint64, uint64, error) {
				looks++
				return tc.free(looks), disk, nil
			}}
			_, err := writeFile(context.Background(), filepath.Join(dir, "b.tar.gz"), o, r)
			if !errors.Is(err, ErrNoSpace) {
				t.Fatalf("writeFile: %v, want ErrNoSpace", err)
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("%q does not say %q", err, s)
				}
			}
			t.Log(err)
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("left in the folder: %v", ents)
			}
		})
	}
}

// TestWriteFileOnASmallDisk: on a real 16 MiB file system WriteFile
// refuses a backup before writing anything (den keeps 1 GiB free);
// and when the disk fills up even so (free space misjudged, here on
// purpose), the full disk stops the backup and the temporary file goes.
func TestWriteFileOnASmallDisk(t *testing.T) {
	sandboxtest.NeedRoot(t, "mounting a small tmpfs")
	f := newFixture(t)
	big := make([]byte, 24<<20) // more than the disk holds, and incompressible
	rand.Read(big)
	if err := os.WriteFile(filepath.Join(f.data, "agents/default/rootfs/root/big"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	small := t.TempDir()
	if err := unix.Mount("tmpfs", small, "tmpfs", 0, "size=16m"); err != nil {
		t.Fatalf("mount tmpfs: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(small, unix.MNT_DETACH) })
	o := Options{DataDir: f.data, ConfigPath: f.config}

	_, err := WriteFile(context.Background(), filepath.Join(small, "b.tar.gz"), o)
	if !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), "needs up to 24.") || !strings.Contains(err.Error(), "16.0 MiB is free") {
		t.Fatalf("WriteFile on a 16 MiB disk: %v, want ErrNoSpace naming 24 MiB needed and 16 MiB free", err)
	}
	t.Log(err)
	if ents, _ := os.ReadDir(small); len(ents) != 0 {
		t.Errorf("left on the small disk: %v", ents)
	}

	plenty := room{every: 64 << 20, statfs: func(string) (uint64, uint64, error) { return 1 << 40, 2 << 40, nil }}
	_, err = writeFile(context.Background(), filepath.Join(small, "b.tar.gz"), o, plenty)
	if !errors.Is(err, ErrNoSpace) || !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("writeFile filling the disk: %v, want ErrNoSpace from ENOSPC", err)
	}
	t.Log(err)
	if ents, _ := os.ReadDir(small); len(ents) != 0 {
		t.Errorf("left on the full disk: %v", ents)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(small, &st); err != nil || st.Bfree != st.Blocks {
		t.Errorf("the disk after the failed backup: %d of %d blocks free (%v)", st.Bfree, st.Blocks, err)
	}
}
