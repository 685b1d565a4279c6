package hostsvc

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// GuestFS reads files of a computer from the host, by their paths
// inside it: a path under a bound folder reads from the folder's host
// side, anything else from the rootfs. Reads never leave the rootfs or
// the folder: symlinks are followed only inside them (os.Root).
type GuestFS struct {
	Rootfs string
	Binds  []GuestBind
}

// GuestBind is a host folder seen at a guest path.
type GuestBind struct{ Host, Guest string }

// MaxFileBytes bounds what a host command reads from the computer.
const MaxFileBytes = 32 << 20

// ReadFile reads a file by its path inside the computer.
func (g GuestFS) ReadFile(guest string) ([]byte, error) {
	if !path.IsAbs(guest) {
		return nil, fmt.Errorf("%s: not an absolute path", guest)
	}
	guest = path.Clean(guest)
	binds := append([]GuestBind(nil), g.Binds...)
	sort.Slice(binds, func(i, j int) bool { return len(binds[i].Guest) > len(binds[j].Guest) })
	base, rel := g.Rootfs, strings.TrimPrefix(guest, "/")
	for _, b := range binds {
		if guest == b.Guest || strings.HasPrefix(guest, b.Guest+"/") {
			base, rel = b.Host, strings.TrimPrefix(strings.TrimPrefix(guest, b.Guest), "/")
			break
		}
	}
	if rel == "" {
		return nil, fmt.Errorf("%s: is a directory", guest)
	}
	root, err := os.OpenRoot(base)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", guest, err)
	}
	defer root.Close()
	f, err := root.Open(filepath.FromSlash(rel))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", guest, unwrapPath(err))
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", guest, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", guest)
	}
	if fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("%s: %d bytes is more than the %d a host command reads", guest, fi.Size(), MaxFileBytes)
	}
	b := make([]byte, fi.Size())
	n, err := f.ReadAt(b, 0)
	if err != nil && n != len(b) {
		return nil, fmt.Errorf("%s: %w", guest, err)
	}
	return b[:n], nil
}

func unwrapPath(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}
