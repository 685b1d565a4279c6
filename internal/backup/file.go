package backup

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// ErrExists is a backup file that exists: Create never replaces one.
var ErrExists = errors.New("file exists")

// WriteFile writes a backup to a new file at path, mode 0600: into a
// temporary file beside it, linked to the name once complete, so that
// a failed or interrupted backup leaves nothing under the name. A file
// at path is ErrExists, also one that appears while the backup runs.
//
// It does not fill the disk: it refuses (ErrNoSpace) a backup that
// could leave less free than 5% of the disk, at least 1 GiB, reckoned
// from the files' sizes before the first byte; and it stops, leaving
// nothing, when the free space falls under that while it writes.
func WriteFile(ctx context.Context, path string, o Options) (Summary, error) {
	return writeFile(ctx, path, o, diskRoom())
}

func writeFile(ctx context.Context, path string, o Options, r room) (Summary, error) {
	if _, err := os.Lstat(path); err == nil {
		return Summary{}, fmt.Errorf("backup: %s: %w", path, ErrExists)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+tmpMark+"*")
	if err != nil {
		return Summary{}, fmt.Errorf("backup: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	g := &guard{room: r, dir: filepath.Dir(tmp), w: f}
	s, err := createArchive(ctx, g, o, g.ready)
	if err == nil {
		if err = f.Sync(); err != nil {
			err = fmt.Errorf("backup: %w", g.full(err))
		}
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("backup: %w", g.full(cerr))
	}
	if err != nil {
		return Summary{}, err
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Summary{}, fmt.Errorf("backup: %s: %w (it appeared while the backup was written; the backup is not kept)", path, ErrExists)
		}
		// A file system without hard links.
		if err := os.Rename(tmp, path); err != nil {
			return Summary{}, fmt.Errorf("backup: %w", err)
		}
	}
	return s, nil
}

// tmpMark is in the names of the temporary files WriteFile makes.
const tmpMark = ".tmp-"

// Scheduled backups are named after the time they were made, in UTC,
// so that their names sort as their times.
const scheduledLayout = "20060102T150405Z"

var scheduledName = regexp.MustCompile(`^den-backup-(\d{8}T\d{6}Z)\.tar\.gz$`)

// ScheduledName is the file name of a scheduled backup made at t.
func ScheduledName(t time.Time) string {
	return "den-backup-" + t.UTC().Format(scheduledLayout) + ".tar.gz"
}

// Scheduled lists the scheduled backups in dir, oldest first, by the
// times their names say; files of other names are not den's to touch.
func Scheduled(dir string) (names []string, times []time.Time, err error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("backup: %w", err)
	}
	for _, e := range ents {
		m := scheduledName.FindStringSubmatch(e.Name())
		if m == nil || !e.Type().IsRegular() {
			continue
		}
		t, err := time.Parse(scheduledLayout, m[1])
		if err != nil {
			continue
		}
		names = append(names, e.Name())
		times = append(times, t)
	}
	sort.Sort(byTime{names, times})
	return names, times, nil
}

type byTime struct {
	names []string
	times []time.Time
}

func (b byTime) Len() int           { return len(b.names) }
func (b byTime) Less(i, j int) bool { return b.times[i].Before(b.times[j]) }
func (b byTime) Swap(i, j int) {
	b.names[i], b.names[j] = b.names[j], b.names[i]
	b.times[i], b.times[j] = b.times[j], b.times[i]
}

// Rotate removes all but the newest keep scheduled backups in dir, and
// the temporary files of scheduled backups that were interrupted over
// a day ago. It returns the names it removed.
func Rotate(dir string, keep int) ([]string, error) {
	names, _, err := Scheduled(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for i := 0; i < len(names)-max(keep, 1); i++ {
		if err := os.Remove(filepath.Join(dir, names[i])); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, fmt.Errorf("backup: rotate: %w", err)
		}
		removed = append(removed, names[i])
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		n := e.Name()
		if !strings.HasPrefix(n, ".den-backup-") || !strings.Contains(n, tmpMark) || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 24*time.Hour {
			os.Remove(filepath.Join(dir, n))
		}
	}
	return removed, nil
}
