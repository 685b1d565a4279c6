package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// Hash names an object: the SHA-256 of a folder's listing, or the
// content hash of a file (see hashFile).
type Hash [32]byte

func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// IsZero reports whether h names nothing.
func (h Hash) IsZero() bool { return h == Hash{} }

// MarshalText writes h in hex.
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText reads h from hex.
func (h *Hash) UnmarshalText(b []byte) error {
	if len(b) != 64 {
		return fmt.Errorf("hash %q: want 64 hex digits", b)
	}
	_, err := hex.Decode(h[:], b)
	return err
}

// Kind is what an entry is.
type Kind byte

// Kinds of entries.
const (
	File    Kind = 'f'
	Dir     Kind = 'd'
	Symlink Kind = 'l'
	FIFO    Kind = 'p'
	Char    Kind = 'c'
	Block   Kind = 'b'
	Socket  Kind = 's'
)

func (k Kind) String() string {
	switch k {
	case File:
		return "file"
	case Dir:
		return "folder"
	case Symlink:
		return "symlink"
	case FIFO:
		return "fifo"
	case Char:
		return "char device"
	case Block:
		return "block device"
	case Socket:
		return "socket"
	}
	return "unknown"
}

// Xattr is one extended attribute.
type Xattr struct {
	Name  string `json:"name"`
	Value []byte `json:"value"`
}

// Entry is one name in a folder as a checkpoint recorded it: what it
// is (kind, permissions, owner, modification time, content or target,
// extended attributes), and the stat fields by which the next
// checkpoint tells that it has not changed without reading it.
type Entry struct {
	Name   string  `json:"name"`
	Kind   Kind    `json:"kind"`
	Mode   uint32  `json:"mode"` // permission bits, setuid, setgid and sticky included
	UID    uint32  `json:"uid"`  // host ids
	GID    uint32  `json:"gid"`
	Mtime  int64   `json:"mtime"` // nanoseconds since 1970
	Size   int64   `json:"size,omitempty"`
	Hash   Hash    `json:"hash"`             // a file's content, a folder's listing
	Target string  `json:"target,omitempty"` // a symlink's
	Rdev   uint64  `json:"rdev,omitempty"`   // a device's number
	Xattrs []Xattr `json:"xattrs,omitempty"` // sorted by name
	// Links says the file has other names (hard links): the entries of
	// one tree with the same Ino are one file.
	Links bool `json:"links,omitempty"`
	// Ino and Ctime identify the inode and its last change: an entry
	// whose inode, change time, size and modification time are those
	// recorded is unchanged (the kernel moves ctime on every write,
	// chmod, chown, link and xattr change, and nothing can set it).
	// Ctime 0 forces the next checkpoint to read the file again.
	Ino   uint64 `json:"ino"`
	Ctime int64  `json:"ctime"`
}

// sameStat reports whether e is the entry recorded as p, by its stat.
func (e *Entry) sameStat(p *Entry) bool {
	return e.Kind == p.Kind && e.Ino == p.Ino && e.Ctime == p.Ctime && p.Ctime != 0 && e.Size == p.Size &&
		e.Mtime == p.Mtime && e.Mode == p.Mode && e.UID == p.UID && e.GID == p.GID && e.Rdev == p.Rdev && e.Links == p.Links
}

// sameMeta reports whether e and p have the same permissions, owner
// and extended attributes.
func (e *Entry) sameMeta(p *Entry) bool {
	return e.Mode == p.Mode && e.UID == p.UID && e.GID == p.GID && sameXattrs(e.Xattrs, p.Xattrs)
}

func sameXattrs(a, b []Xattr) bool {
	return slices.EqualFunc(a, b, func(x, y Xattr) bool { return x.Name == y.Name && bytes.Equal(x.Value, y.Value) })
}

// treeMagic starts every encoded listing.
const treeMagic = "den-tree 1\n"

// encodeTree is a folder's listing as stored: entries sorted by name.
func encodeTree(entries []Entry) []byte {
	b := make([]byte, 0, len(treeMagic)+len(entries)*80)
	b = append(b, treeMagic...)
	b = binary.AppendUvarint(b, uint64(len(entries)))
	for i := range entries {
		e := &entries[i]
		b = appendString(b, e.Name)
		b = append(b, byte(e.Kind))
		b = binary.AppendUvarint(b, uint64(e.Mode))
		b = binary.AppendUvarint(b, uint64(e.UID))
		b = binary.AppendUvarint(b, uint64(e.GID))
		b = binary.AppendVarint(b, e.Mtime)
		b = binary.AppendVarint(b, e.Size)
		b = append(b, e.Hash[:]...)
		b = appendString(b, e.Target)
		b = binary.AppendUvarint(b, e.Rdev)
		b = binary.AppendUvarint(b, uint64(len(e.Xattrs)))
		for _, x := range e.Xattrs {
			b = appendString(b, x.Name)
			b = appendString(b, string(x.Value))
		}
		if e.Links {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
		b = binary.AppendUvarint(b, e.Ino)
		b = binary.AppendVarint(b, e.Ctime)
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeTree reads a listing encodeTree wrote.
func decodeTree(b []byte) ([]Entry, error) {
	d := decoder{b: b}
	if !bytes.HasPrefix(b, []byte(treeMagic)) {
		return nil, fmt.Errorf("%w: not a folder listing", ErrDamaged)
	}
	d.b = d.b[len(treeMagic):]
	n := d.uvarint()
	if n > uint64(len(b)) {
		return nil, fmt.Errorf("%w: folder listing of %d entries in %d bytes", ErrDamaged, n, len(b))
	}
	entries := make([]Entry, n)
	for i := range entries {
		e := &entries[i]
		e.Name = d.string()
		e.Kind = Kind(d.byte())
		e.Mode = uint32(d.uvarint())
		e.UID = uint32(d.uvarint())
		e.GID = uint32(d.uvarint())
		e.Mtime = d.varint()
		e.Size = d.varint()
		copy(e.Hash[:], d.bytes(32))
		e.Target = d.string()
		e.Rdev = d.uvarint()
		nx := d.uvarint()
		if nx > uint64(len(d.b)) {
			d.err = true
			break
		}
		for range nx {
			e.Xattrs = append(e.Xattrs, Xattr{Name: d.string(), Value: []byte(d.string())})
		}
		e.Links = d.byte() == 1
		e.Ino = d.uvarint()
		e.Ctime = d.varint()
		if d.err {
			break
		}
	}
	if d.err || len(d.b) != 0 {
		return nil, fmt.Errorf("%w: folder listing cut short or overlong", ErrDamaged)
	}
	for i := range entries {
		if err := checkName(entries[i].Name); err != nil || (i > 0 && entries[i-1].Name >= entries[i].Name) {
			return nil, fmt.Errorf("%w: folder listing has a bad or unsorted name %q", ErrDamaged, entries[i].Name)
		}
	}
	return entries, nil
}

// checkName refuses a name that is not one path component.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("bad name %q", name)
	}
	return nil
}

type decoder struct {
	b   []byte
	err bool
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = true
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = true
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte() byte {
	if len(d.b) < 1 {
		d.err = true
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) bytes(n int) []byte {
	if len(d.b) < n {
		d.err = true
		d.b = nil
		return make([]byte, n)
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err = true
		d.b = nil
		return ""
	}
	return string(d.bytes(int(n)))
}

// treeHash is the name of an encoded listing.
func treeHash(enc []byte) Hash { return sha256.Sum256(enc) }
