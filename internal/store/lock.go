package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ErrSessionBusy is a session another den process runs a turn in.
var ErrSessionBusy = errors.New("session is in use")

// SessionLock is a session held by this process: one writer of turns
// at a time. It is an advisory lock (flock) on a file beside the
// database, which the kernel releases when the process ends, however it
// ends: a den killed while holding it does not leave the session stuck.
type SessionLock struct {
	f *os.File
}

// LockSession takes the session for this process. Held by another, it
// fails with ErrSessionBusy naming the holder, or with wait, waits
// until it is free or ctx ends. What holds it is recorded in the file
// (pid, since, what), for the message another den prints.
func (s *Store) LockSession(ctx context.Context, sessionID, what string, wait bool) (*SessionLock, error) {
	if sessionID == "" || strings.ContainsAny(sessionID, "/\x00") || sessionID == "." || sessionID == ".." {
		return nil, fmt.Errorf("store: lock session %q: bad id", sessionID)
	}
	dir := filepath.Join(filepath.Dir(s.path), "locks")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store: lock session %s: %w", sessionID, err)
	}
	f, err := os.OpenFile(filepath.Join(dir, sessionID+".lock"), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: lock session %s: %w", sessionID, err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("store: lock session %s: %w", sessionID, err)
		}
		if !wait {
			holder := holderOf(f)
			f.Close()
			return nil, fmt.Errorf("%w: %s", ErrSessionBusy, holder)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	f.Truncate(0)
	fmt.Fprintf(f, "pid %d since %s: %s\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339), what)
	return &SessionLock{f: f}, nil
}

// Unlock frees the session. It is safe to call more than once.
func (l *SessionLock) Unlock() {
	if l == nil || l.f == nil {
		return
	}
	unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	l.f.Close()
	l.f = nil
}

func holderOf(f *os.File) string {
	b := make([]byte, 512)
	n, _ := f.ReadAt(b, 0)
	if s := strings.TrimSpace(string(b[:n])); s != "" {
		return "held by den " + s
	}
	return "held by another den"
}
