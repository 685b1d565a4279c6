package backup

import (
	"errors"
	"fmt"
	"io"
	"syscall"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/config"
)

// room keeps a backup file from filling its disk: before the first byte
// it refuses when the archive could take the free space den keeps
// (reserve); while writing it looks again every `every` bytes and stops
// when the free space falls under it.
type room struct {
	// statfs says how many bytes of the file system holding dir are
	// free to den and how large it is.
	statfs func(dir string) (free, size uint64, err error)
	every  int64
}

// diskRoom is room on the real disk, looked at every 64 MiB written.
func diskRoom() room { return room{statfs: statfs, every: 64 << 20} }

func statfs(dir string) (free, size uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}

// reserve is the free space a backup leaves on a disk of size bytes:
// 5% of it, at least 1 GiB, for den's database and the computers.
func reserve(size uint64) uint64 { return max(1<<30, size/20) }

// guard is one backup file's room.
type guard struct {
	room
	dir     string // the file's folder
	reserve uint64
	w       io.Writer
	written int64
	next    int64 // when to look again
}

// ready refuses a backup that could take the disk's free space but the
// reserve.
func (g *guard) ready(upper int64) error {
	free, size, err := g.statfs(g.dir)
	if err != nil {
		return fmt.Errorf("backup: free space of %s: %w", g.dir, err)
	}
	g.reserve = reserve(size)
	if free < g.reserve || uint64(upper) > free-g.reserve {
		return fmt.Errorf("backup: %w in %s: the backup needs up to %s, %s is free, and den leaves %s of it free (5%% of the disk, at least 1 GiB)",
			ErrNoSpace, g.dir, config.FormatBytes(upper), config.FormatBytes(int64(free)), config.FormatBytes(int64(g.reserve)))
	}
	g.next = g.every
	return nil
}

// Write writes to the file, and stops once the disk's free space fell
// under the reserve.
func (g *guard) Write(p []byte) (int, error) {
	if g.written >= g.next {
		g.next = g.written + g.every
		if free, _, err := g.statfs(g.dir); err == nil && free < g.reserve {
			return 0, fmt.Errorf("%w in %s: %s is free after %s written, under the %s den leaves free; the backup is stopped and removed",
				ErrNoSpace, g.dir, config.FormatBytes(int64(free)), config.FormatBytes(g.written), config.FormatBytes(int64(g.reserve)))
		}
	}
	n, err := g.w.Write(p)
	g.written += int64(n)
	return n, g.full(err)
}

// full says a full disk (or quota) is one.
func (g *guard) full(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%w in %s after %s written (%w); the backup is removed", ErrNoSpace, g.dir, config.FormatBytes(g.written), err)
	}
	return err
}
