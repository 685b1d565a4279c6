package hostsvc

import (
	"fmt"
	"os"
	"path"
	"sort"
	"strings"

	"den.dev/den/internal/hostfs"
)

// GuestFS reads files of a computer from the host, by their paths
// inside it: a path under a bound folder reads from the folder's host
// side, anything else from the rootfs. Reads go through hostfs: no
// symbolic link is followed (the caller gets an error saying so), no
// FIFO or device is opened, and the kernel checks permissions as the
// computer's root through that folder (As), so a file the computer
// could not read itself is not read for it.
type GuestFS struct {
	Rootfs string
	As     *hostfs.Identity // the computer's root; nil: den's own ids
	Binds  []GuestBind
}

// GuestBind is a host folder seen at a guest path, read as As (the
// folder's owner when the computer sees that owner as its root; nil
// means GuestFS.As).
type GuestBind struct {
	Host, Guest string
	As          *hostfs.Identity
}

// MaxFileBytes bounds what a host command reads from the computer.
const MaxFileBytes = maxFileRead

// ReadFile reads a file by its path inside the computer.
func (g GuestFS) ReadFile(guest string) ([]byte, error) {
	d, rel, as, err := g.locate(guest)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.ReadFileAs(rel, MaxFileBytes, as)
}

// Open opens a regular file by its path inside the computer, read-only,
// as ReadFile finds it (no link followed, the computer's permissions).
func (g GuestFS) Open(guest string) (*os.File, error) {
	d, rel, as, err := g.locate(guest)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return d.OpenAs(rel, as)
}

// locate finds the host folder a guest path is beneath, the path's
// rest and who reads it.
func (g GuestFS) locate(guest string) (*hostfs.Dir, string, *hostfs.Identity, error) {
	if !path.IsAbs(guest) {
		return nil, "", nil, fmt.Errorf("%s: not an absolute path", guest)
	}
	guest = path.Clean(guest)
	binds := append([]GuestBind(nil), g.Binds...)
	sort.Slice(binds, func(i, j int) bool { return len(binds[i].Guest) > len(binds[j].Guest) })
	base, prefix, rel, as := g.Rootfs, "/", strings.TrimPrefix(guest, "/"), g.As
	for _, b := range binds {
		if guest == b.Guest || strings.HasPrefix(guest, b.Guest+"/") {
			base, prefix, rel = b.Host, b.Guest, strings.TrimPrefix(strings.TrimPrefix(guest, b.Guest), "/")
			if b.As != nil {
				as = b.As
			}
			break
		}
	}
	if rel == "" {
		return nil, "", nil, fmt.Errorf("%s: is a directory", guest)
	}
	d, err := hostfs.OpenDirNamed(base, prefix)
	if err != nil {
		return nil, "", nil, fmt.Errorf("%s: %w", guest, err)
	}
	return d, rel, as, nil
}
