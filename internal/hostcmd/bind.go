package hostcmd

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"den.dev/den/internal/sandbox"
)

// The layout inside every computer.
const (
	// GuestShim is where den-hostcmd is bound, read-only.
	GuestShim = "/usr/local/bin/den-hostcmd"
	// GuestDir is where the session's socket folder is bound.
	GuestDir = "/run/den-host"
	// GuestSocket is the socket inside the computer.
	GuestSocket = GuestDir + "/" + SocketName
)

// LinkNames lists the command names that must be links to den-hostcmd
// in /usr/local/bin: den's commands and the aliases of den-open.
func LinkNames() []string {
	return []string{
		"den-open", "xdg-open", "x-www-browser", "sensible-browser", "www-browser",
		"den-notify", "den-ask", "den-model", "den-sessions", "den-config",
		"den-clipboard", "den-speak", "den-location", "den-camera", "den-mcp", "den-browser",
		"den-agent",
		"den-schedule",
	}
}

// Binds returns what a session's computer needs for host commands: the
// shim (see ShimPath) read-only at GuestShim, and the listener's folder
// (Listener.Dir) at GuestDir. The folder is bound read-only: connecting
// to a socket needs no write access to its file system, and the computer
// then cannot remove or replace the socket.
func Binds(shim, sockDir string) []sandbox.Bind {
	return []sandbox.Bind{
		{Host: shim, Guest: GuestShim, ReadOnly: true, Internal: true},
		{Host: sockDir, Guest: GuestDir, ReadOnly: true, Internal: true},
	}
}

// EnsureLinks makes usr/local/bin/NAME a symbolic link to den-hostcmd
// in rootfs for every name, and usr/local/bin/den-hostcmd an empty
// regular file for the shim to be bound over. It is idempotent, safe
// against a computer's own changes (everything goes through os.Root,
// so no symbolic link in the rootfs leads outside it), and replaces
// whatever else holds a name, except a folder. Run it before each start
// of a computer: the computer may have removed the links.
func EnsureLinks(rootfs string, names []string) error {
	r, err := os.OpenRoot(rootfs)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrLink, err)
	}
	defer r.Close()
	const bin = "usr/local/bin"
	if err := r.MkdirAll(bin, 0o755); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrLink, bin, err)
	}
	shim := path.Join(bin, path.Base(GuestShim))
	if err := ensurePlaceholder(r, shim); err != nil {
		return err
	}
	for _, n := range names {
		if n == "" || n != path.Base(n) || n == "." || n == ".." || n == path.Base(GuestShim) {
			return fmt.Errorf("%w: bad command name %q", ErrLink, n)
		}
		if err := ensureLink(r, path.Join(bin, n), path.Base(GuestShim)); err != nil {
			return err
		}
	}
	return nil
}

// ensurePlaceholder makes name a regular file. It is not executable:
// without the bind, running a command fails loudly instead of running
// an empty script.
func ensurePlaceholder(r *os.Root, name string) error {
	fi, err := r.Lstat(name)
	switch {
	case err == nil && fi.Mode().IsRegular():
		return nil
	case err == nil && fi.IsDir():
		return fmt.Errorf("%w: %s is a folder", ErrLink, name)
	case err == nil:
		if err := r.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s: %w", ErrLink, name, err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%w: %s: %w", ErrLink, name, err)
	}
	f, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil // made at the same moment by another start
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrLink, name, err)
	}
	return f.Close()
}

// ensureLink makes name a symbolic link to target, replacing anything
// but a folder atomically (a link made aside, then renamed over).
func ensureLink(r *os.Root, name, target string) error {
	fi, err := r.Lstat(name)
	if err == nil {
		if fi.Mode()&fs.ModeSymlink != 0 {
			if t, err := r.Readlink(name); err == nil && t == target {
				return nil
			}
		}
		if fi.IsDir() {
			return fmt.Errorf("%w: %s is a folder", ErrLink, name)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: %s: %w", ErrLink, name, err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	tmp := path.Join(path.Dir(name), ".den-link-"+hex.EncodeToString(b))
	if err := r.Symlink(target, tmp); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrLink, name, err)
	}
	if err := r.Rename(tmp, name); err != nil {
		r.Remove(tmp)
		return fmt.Errorf("%w: %s: %w", ErrLink, name, err)
	}
	return nil
}
