package netns

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Gate holds a bwrap sandbox at the one moment Attach can run: after
// bwrap has set up the sandbox's loopback and before its first process
// runs. It is the computer's /etc/resolv.conf, handed to bwrap as
// `--ro-bind-data FD /etc/resolv.conf` through a pipe of one page:
//
//   - bwrap sets up the loopback of a new network namespace itself, with
//     an exclusive RTM_NEWADDR, only once --userns-block-fd is released.
//     slirp4netns --configure brings lo up first, and the kernel then
//     adds 127.0.0.1/8 on its own, so attaching while bwrap waits on
//     --userns-block-fd makes bwrap fail ("loopback: Failed
//     RTM_NEWADDR"). Attach refuses a namespace whose loopback is not
//     up yet.
//   - bwrap reads --ro-bind-data files while it builds the sandbox's
//     root, after the loopback. The pipe is filled to its capacity, so
//     it becomes writable exactly when bwrap has read the page: Wait
//     returns then. bwrap keeps reading until the pipe's end closes,
//     so it waits, inside its setup, until Open.
//
// The sequence, in bwrap's Start: NewGate; pass File to bwrap; start
// it; close File; write the id maps and release --userns-block-fd;
// Wait; Attach; Open. Without the network, no Gate is needed.
type Gate struct {
	r, w *os.File
	once sync.Once
}

// NewGate makes a gate that delivers ResolvConf, padded with a comment
// to the pipe's capacity.
func NewGate() (*Gate, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("netns: gate: %w", err)
	}
	g := &Gate{r: r, w: w}
	// Not w.Fd(), which would make the pipe blocking.
	size := 0
	rc, err := w.SyscallConn()
	if err == nil {
		cerr := rc.Control(func(fd uintptr) { size, err = unix.FcntlInt(fd, unix.F_SETPIPE_SZ, os.Getpagesize()) })
		err = errors.Join(cerr, err)
	}
	if err == nil {
		_, err = w.Write(resolvConf(size))
	}
	if err != nil {
		g.r.Close()
		g.Open()
		return nil, fmt.Errorf("netns: gate: %w", err)
	}
	return g, nil
}

// resolvConf is ResolvConf padded to exactly size bytes by a comment;
// every resolver skips comment lines, and musl skips lines too long for
// its buffer whole.
func resolvConf(size int) []byte {
	head := string(ResolvConf()) + "# den: this file reached bwrap through a pipe it had to empty; the rest is padding\n#"
	return []byte(head + strings.Repeat(" ", size-len(head)-1) + "\n")
}

// File is the end bwrap reads: pass it to bwrap (as an ExtraFiles
// entry, with --ro-bind-data N /etc/resolv.conf) and close it once
// bwrap has started.
func (g *Gate) File() *os.File { return g.r }

// Wait returns once bwrap has read the page, so it is past its loopback
// setup and held in its root setup until Open. It returns an error when
// bwrap exited first, or when ctx ends.
func (g *Gate) Wait(ctx context.Context) error {
	rc, err := g.w.SyscallConn()
	if err != nil {
		return fmt.Errorf("netns: gate: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { g.w.SetWriteDeadline(time.Unix(1, 0)) })
	defer stop()
	var revents int16
	err = rc.Write(func(fd uintptr) bool {
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		if k, err := unix.Poll(p, 0); err != nil || k == 0 {
			return false
		}
		revents = p[0].Revents
		return true
	})
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("netns: gate: %w", ctx.Err())
	case err != nil:
		return fmt.Errorf("netns: gate: %w", err)
	case revents&(unix.POLLERR|unix.POLLHUP) != 0:
		return errors.New("netns: gate: the sandbox exited before it read /etc/resolv.conf")
	}
	return nil
}

// Open lets bwrap go on: it reads the end of /etc/resolv.conf and
// finishes the sandbox. Safe to call twice; call it on every path, or
// bwrap waits until it exits.
func (g *Gate) Open() error {
	var err error
	g.once.Do(func() { err = g.w.Close() })
	return err
}
