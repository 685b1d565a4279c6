package computer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox"
)

// A computer's disk use is capped by measure, not by quota: the file
// systems den's data dir lives on rarely have project quotas enabled,
// and den must not need root to enforce a cap. While a command runs,
// den measures what the computer holds (its rootfs and its session and
// agent folders, not the user's folders) every few seconds; a command
// during which the use passes the cap is stopped, with a note saying
// so. Commands still run when the computer is over its cap, so that it
// can free space, but one that makes it grow further is stopped.

// errDiskCap is the cause of a command's end when it passed the cap.
var errDiskCap = errors.New("disk cap")

// diskMeter measures a computer's disk use, one measurement at a time,
// and remembers the last.
type diskMeter struct {
	trees []string

	mu   sync.Mutex
	used int64
	at   time.Time
	took time.Duration
}

// measure walks the trees and returns the bytes they take on disk (hard
// links counted once).
func (d *diskMeter) measure() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	start := time.Now()
	seen := map[[2]uint64]bool{}
	var n int64
	for _, t := range d.trees {
		filepath.WalkDir(t, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			var st unix.Stat_t
			if unix.Lstat(p, &st) != nil {
				return nil
			}
			if st.Nlink > 1 && st.Mode&unix.S_IFMT != unix.S_IFDIR {
				k := [2]uint64{st.Dev, st.Ino}
				if seen[k] {
					return nil
				}
				seen[k] = true
			}
			n += st.Blocks * 512
			return nil
		})
	}
	d.used, d.at, d.took = n, time.Now(), time.Since(start)
	return n
}

// interval is how long to wait between measurements: a few seconds,
// longer for trees that take long to walk (at most 5% of the time).
func (d *diskMeter) interval() time.Duration {
	d.mu.Lock()
	defer d.mu.Unlock()
	return max(2*time.Second, 20*d.took)
}

// guarded runs one command under the disk cap.
func (s *Session) guarded(ctx context.Context, cmd sandbox.Command, run func(context.Context, sandbox.Command) (*sandbox.Result, error)) (*sandbox.Result, error) {
	if s.disk == nil || s.diskCap <= 0 {
		return run(ctx, cmd)
	}
	start := s.disk.measure()
	limit := s.diskCap
	over := start > limit
	if over {
		// Let it free space, not take more.
		limit = start + 64<<20
	}
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(s.disk.interval()):
			}
			if s.disk.measure() > limit {
				cancel(errDiskCap)
				return
			}
		}
	})
	res, err := run(cctx, cmd)
	close(done)
	wg.Wait()
	if res == nil || ctx.Err() != nil {
		return res, err
	}
	if !errors.Is(context.Cause(cctx), errDiskCap) {
		// Finished between two measures: say so if it went over.
		if used := s.disk.measure(); used > s.diskCap && used > start {
			res.Note = strings.TrimSpace(res.Note + "\n" + fmt.Sprintf("the computer now holds %s, over its disk cap of %s: the next command that makes it grow will be stopped; free space first", humanBytes(used), humanBytes(s.diskCap)))
		}
		return res, err
	}
	used := s.disk.measure()
	res.Canceled, res.ExitCode = false, 1
	note := fmt.Sprintf("stopped: the computer's disk use passed its cap of %s (it holds %s now)", humanBytes(s.diskCap), humanBytes(used))
	if over {
		note = fmt.Sprintf("stopped: the computer was already over its disk cap of %s and this command made it grow (%s now)", humanBytes(s.diskCap), humanBytes(used))
	}
	note += ". Free space (delete files, apt-get clean, rm -rf ~/.cache) or ask the user to raise disk for this agent in den's config."
	if res.Note != "" {
		note = res.Note + "\n" + note
	}
	res.Note = note
	return res, err
}

// Run runs a command in the session's persistent shell, under the
// computer's disk cap.
func (s *Session) Run(ctx context.Context, cmd sandbox.Command) (*sandbox.Result, error) {
	return s.guarded(ctx, cmd, s.Session.Run)
}

// Exec runs a command as a fresh process, under the computer's disk
// cap.
func (s *Session) Exec(ctx context.Context, cmd sandbox.Command) (*sandbox.Result, error) {
	return s.guarded(ctx, cmd, s.Session.Exec)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// DefaultPids bounds the processes of a computer when the config names
// no limit, so that a fork bomb inside stays inside.
const DefaultPids = 4096

// DefaultLimits are the limits a computer runs with when the config
// names none: half the host's memory, 4096 processes, half the CPU
// weight of an ordinary process group (the user's own work wins under
// load), a 1 GiB /tmp and 20 GiB of disk.
func DefaultLimits() sandbox.Limits {
	return sandbox.Limits{
		MemoryBytes: hostMemory() / 2,
		Pids:        DefaultPids,
		CPUWeight:   50,
		TmpBytes:    1 << 30,
		DiskBytes:   20 << 30,
	}
}

// hostMemory is the host's memory in bytes, 0 when unknown.
func hostMemory() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// diskTrees are what a computer's disk use counts.
func (c *Computer) diskTrees() []string {
	trees := []string{c.Rootfs(), filepath.Join(c.dir, "sessions")}
	for _, d := range sandbox.AgentDirs {
		trees = append(trees, filepath.Join(c.dir, d.Name))
	}
	return trees
}

// DiskUse measures what the computer holds on disk now.
func (c *Computer) DiskUse() int64 {
	if _, err := os.Stat(c.Rootfs()); err != nil {
		return 0
	}
	return (&diskMeter{trees: c.diskTrees()}).measure()
}

// ExecStream is Exec with standard input read from r as it arrives,
// under the computer's disk cap.
func (s *Session) ExecStream(ctx context.Context, cmd sandbox.Command, r io.Reader) (*sandbox.Result, error) {
	return s.guarded(ctx, cmd, func(ctx context.Context, cmd sandbox.Command) (*sandbox.Result, error) {
		return s.Session.ExecStream(ctx, cmd, r)
	})
}
