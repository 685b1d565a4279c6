package backup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox"
)

// Extended attributes travel in PAX records, as GNU tar and bsdtar
// write them: SCHILY.xattr.NAME, the value as it is.
const xattrRecord = "SCHILY.xattr."

// maxXattrs bounds the extended attributes of one entry (a reader
// takes up to 1 MiB of PAX records).
const maxXattrs = 512 << 10

// carried reports whether a backup carries an extended attribute: the
// user's (user.*), and those only root reads and sets (trusted.*,
// security.*: a program's file capability, labels). system.* (access
// control lists, which name host ids) are not.
func carried(name string) bool {
	return strings.HasPrefix(name, "user.") || strings.HasPrefix(name, "trusted.") || strings.HasPrefix(name, "security.")
}

// capabilityXattr is a program's file capability (setcap). It names
// the user id of the root it holds for, so it is recorded as the
// computer sees it and given this machine's ids when restored.
const capabilityXattr = "security.capability"

// File capabilities' layout (linux/capability.h): a little-endian word
// with the revision and the effective flag, the permitted and
// inheritable sets, and, from revision 3, the host id of the root of
// the user namespace it holds for. Revisions 1 and 2 hold for any
// root.
const (
	capRevisionMask   = 0xff000000
	capRevision1      = 0x01000000
	capRevision2      = 0x02000000
	capRevision3      = 0x03000000
	capFlagsEffective = 0x000001
	capSize1          = 12
	capSize2          = 20
	capSize3          = 24
)

// capRoot reads a file capability: the id of the root it holds for (0
// for any), and whether it is one.
func capRoot(v string) (root uint32, ok bool) {
	if len(v) < 4 {
		return 0, false
	}
	magic := binary.LittleEndian.Uint32([]byte(v[:4]))
	switch {
	case magic&capRevisionMask == capRevision1 && len(v) == capSize1, magic&capRevisionMask == capRevision2 && len(v) == capSize2:
		return 0, true
	case magic&capRevisionMask == capRevision3 && len(v) == capSize3:
		return binary.LittleEndian.Uint32([]byte(v[20:])), true
	}
	return 0, false
}

// capFor is the file capability v (one capRoot reads) holding for
// root: revision 2 for any root (0), else revision 3 naming it.
func capFor(v string, root uint32) string {
	magic := binary.LittleEndian.Uint32([]byte(v[:4]))
	if r, _ := capRoot(v); r == root && magic&capRevisionMask != capRevision1 {
		return v
	}
	size := capSize2
	if root != 0 {
		size = capSize3
	}
	b := make([]byte, size)
	rev := uint32(capRevision2)
	if root != 0 {
		rev = capRevision3
		binary.LittleEndian.PutUint32(b[20:], root)
	}
	binary.LittleEndian.PutUint32(b, rev|magic&capFlagsEffective)
	copy(b[4:20], v[4:min(len(v), 20)])
	return string(b)
}

// capInside is the file capability v, read on the host, as a computer
// whose ids are ids sees it; false when it holds for no root the
// computer has.
func capInside(v string, ids sandbox.IDMap) (string, bool) {
	root, ok := capRoot(v)
	if !ok {
		return "", false
	}
	if root == 0 {
		return capFor(v, 0), true
	}
	in, ok := ids.InsideUID(root)
	if !ok {
		return "", false
	}
	return capFor(v, in), true
}

// checkXattrs refuses an entry's extended attribute a backup does not
// carry, and a file capability den cannot read.
func checkXattrs(pax map[string]string) error {
	for k, v := range pax {
		name, ok := strings.CutPrefix(k, xattrRecord)
		if !ok {
			continue
		}
		if !carried(name) {
			return fmt.Errorf("%w: extended attribute %q: den restores only user.*, trusted.* and security.* ones", ErrUnsafe, name)
		}
		if _, ok := capRoot(v); name == capabilityXattr && !ok {
			return fmt.Errorf("%w: a file capability den cannot read", ErrUnsafe)
		}
	}
	return nil
}

// xattrSource reads one entry's extended attributes.
type xattrSource struct {
	list func([]byte) (int, error)
	get  func(string, []byte) (int, error)
}

// fdXattrs reads those of an open file or folder.
func fdXattrs(fd int) xattrSource {
	return xattrSource{
		list: func(b []byte) (int, error) { return unix.Flistxattr(fd, b) },
		get:  func(n string, b []byte) (int, error) { return unix.Fgetxattr(fd, n, b) },
	}
}

// nameXattrs reads those of base in the open folder dfd, not following
// it: the folder's magic link is den's own descriptor.
func nameXattrs(dfd int, base string) xattrSource {
	p := fmt.Sprintf("/proc/self/fd/%d/%s", dfd, base)
	if dfd == unix.AT_FDCWD {
		p = base
	}
	return xattrSource{
		list: func(b []byte) (int, error) { return unix.Llistxattr(p, b) },
		get:  func(n string, b []byte) (int, error) { return unix.Lgetxattr(p, n, b) },
	}
}

// read lists the entry's extended attributes that a backup carries,
// with their values, in the order listed; none where the file system
// keeps none or the entry is gone.
func (x xattrSource) read() (names, values []string, err error) {
	var list []byte
	for size := 1024; ; size *= 4 {
		b := make([]byte, size)
		n, err := x.list(b)
		if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.ENOENT) {
			return nil, nil, nil // none kept here, or the entry went meanwhile
		}
		if errors.Is(err, unix.ERANGE) && size < 1<<20 {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("extended attributes: %w", err)
		}
		list = b[:n]
		break
	}
	for name := range strings.SplitSeq(string(list), "\x00") {
		if name == "" || !carried(name) {
			continue
		}
		for size := 256; ; size *= 4 {
			b := make([]byte, size)
			n, err := x.get(name, b)
			if errors.Is(err, unix.ERANGE) && size < 1<<20 {
				continue
			}
			if errors.Is(err, unix.ENODATA) {
				break // removed meanwhile
			}
			if err != nil {
				return nil, nil, fmt.Errorf("extended attribute %s: %w", name, err)
			}
			names, values = append(names, name), append(values, string(b[:n]))
			break
		}
	}
	return names, values, nil
}
