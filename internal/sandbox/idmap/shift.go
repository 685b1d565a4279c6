package idmap

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox"
)

// Identity is the map of a tree whose host owners are the inside ids
// themselves, as provisioning as root leaves it (and as den did before
// computers had ranges of their own).
var Identity = sandbox.IDMap{
	UIDs: []sandbox.IDRange{{Inside: 0, Host: 0, Count: Size}},
	GIDs: []sandbox.IDRange{{Inside: 0, Host: 0, Count: Size}},
}

// Shift moves the owners of every entry under dir (dir included) from
// map from to map to: an owner that from maps to inside id n becomes
// to's host id for n; owners from does not map, or that to does not,
// are left alone. Symbolic links are changed themselves, never
// followed. The setuid and setgid bits that a change of owner clears
// are set again; file capabilities are dropped (they grant nothing
// inside, where no_new_privs holds). progress, when set, is called
// every 4096 entries with the count so far. It returns how many entries
// changed.
//
// Nothing may run in the tree meanwhile (no session of the computer):
// the walk trusts that entries stay what it found.
func Shift(dir string, from, to sandbox.IDMap, progress func(done int)) (int, error) {
	if os.Geteuid() != 0 {
		return 0, errors.New("idmap: shift needs root")
	}
	n, seen := 0, 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		seen++
		if progress != nil && seen%4096 == 0 {
			progress(seen)
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return &fs.PathError{Op: "lstat", Path: p, Err: err}
		}
		uid, gid := st.Uid, st.Gid
		if in, ok := from.InsideUID(uid); ok {
			if h, ok := to.HostUID(in); ok {
				uid = h
			}
		}
		if in, ok := from.InsideGID(gid); ok {
			if h, ok := to.HostGID(in); ok {
				gid = h
			}
		}
		if uid == st.Uid && gid == st.Gid {
			return nil
		}
		if err := unix.Lchown(p, int(uid), int(gid)); err != nil {
			return &fs.PathError{Op: "lchown", Path: p, Err: err}
		}
		n++
		mode := st.Mode & 0o7777
		if st.Mode&syscall.S_IFMT != syscall.S_IFLNK && mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
			if err := unix.Chmod(p, mode); err != nil {
				return &fs.PathError{Op: "chmod", Path: p, Err: err}
			}
		}
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("idmap: shift %s: %w", dir, err)
	}
	if progress != nil {
		progress(seen)
	}
	return n, nil
}
