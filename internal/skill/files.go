package skill

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"den.dev/den/internal/hostfs"
)

// A File is one regular file of a skill.
type File struct {
	Path string // slash-separated, relative to the skill's folder
	Exec bool   // whether any execute bit is set
	Data []byte
}

// HashPrefix starts every content hash.
const HashPrefix = "sha256:"

// Hash is a skill's content hash: SHA-256 over every file in order of
// path, each as its path, its executable bit and its content, every
// part preceded by its length. Folders count only through the files in
// them. It is "sha256:" and 64 hex digits.
func Hash(files []File) string {
	sorted := slices.SortedFunc(slices.Values(files), func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	h := sha256.New()
	for _, f := range sorted {
		part(h, []byte(f.Path))
		if f.Exec {
			part(h, []byte{'x'})
		} else {
			part(h, []byte{'-'})
		}
		part(h, f.Data)
	}
	return HashPrefix + hex.EncodeToString(h.Sum(nil))
}

func part(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

// A node is one entry of a skill's folder as a walk found it, without
// following or opening it.
type node struct {
	path   string
	mode   fs.FileMode
	size   int64
	inode  uint64
	ctime  time.Time
	mtime  time.Time
	target string // a symbolic link's text
}

// sameAs reports whether n is the entry o described, unchanged.
func (n node) sameAs(o node) bool {
	return n.path == o.path && n.mode == o.mode && n.size == o.size && n.inode == o.inode &&
		n.ctime.Equal(o.ctime) && n.mtime.Equal(o.mtime) && n.target == o.target
}

// walk describes every entry beneath d, sorted by path: folders, files
// and whatever else is there (links, pipes, devices), which it never
// follows or opens. More entries than lim.SkillFiles, regular files
// adding up to more than lim.SkillSize, or folders deeper than
// lim.Depth are ErrTooLarge. Entries for which skip (when set) is true
// are left out, with what is beneath them.
func walk(d *hostfs.Dir, lim Limits, skip func(path string) bool) ([]node, error) {
	var nodes []node
	var total int64
	var visit func(d *hostfs.Dir, prefix string, depth int) error
	visit = func(d *hostfs.Dir, prefix string, depth int) error {
		entries, more, err := d.List(lim.SkillFiles + 1 - len(nodes))
		if err != nil {
			return err
		}
		if more || len(nodes)+len(entries) > lim.SkillFiles {
			return fmt.Errorf("%w: more than %d files and folders", ErrTooLarge, lim.SkillFiles)
		}
		slices.SortFunc(entries, func(a, b hostfs.Entry) int { return strings.Compare(a.Name, b.Name) })
		for _, e := range entries {
			n := node{path: path.Join(prefix, e.Name), mode: e.Mode, size: e.Size, inode: e.Inode,
				ctime: e.ChangeTime, mtime: e.ModTime, target: e.Target}
			if skip != nil && skip(n.path) {
				continue
			}
			nodes = append(nodes, n)
			switch {
			case e.Mode.IsRegular():
				if total += e.Size; total > lim.SkillSize {
					return fmt.Errorf("%w: more than %d bytes", ErrTooLarge, lim.SkillSize)
				}
			case e.Mode.IsDir():
				if depth == lim.Depth {
					return fmt.Errorf("%s %w: folders more than %d deep", n.path, ErrTooLarge, lim.Depth)
				}
				sub, err := d.Sub(e.Name)
				if err != nil {
					return err
				}
				err = visit(sub, n.path, depth+1)
				sub.Close()
				if err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := visit(d, "", 0); err != nil {
		return nil, err
	}
	slices.SortFunc(nodes, func(a, b node) int { return strings.Compare(a.path, b.path) })
	return nodes, nil
}

// irregular is an error naming the first entry of nodes that is
// neither a regular file nor a folder, or nil.
func irregular(nodes []node) error {
	for _, n := range nodes {
		if !n.mode.IsRegular() && !n.mode.IsDir() {
			return fmt.Errorf("%s %w: it is %s, and a skill holds only files and folders", n.path, ErrUnsafe, kindOf(n))
		}
	}
	return nil
}

// kindOf names what a node is.
func kindOf(n node) string {
	switch {
	case n.mode&fs.ModeSymlink != 0:
		return fmt.Sprintf("a symbolic link to %q", printable(n.target, 200))
	case n.mode&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case n.mode&fs.ModeSocket != 0:
		return "a socket"
	case n.mode&fs.ModeDevice != 0:
		return "a device node"
	case n.mode.IsDir():
		return "a folder"
	case n.mode.IsRegular():
		return "a file"
	}
	return "an unknown kind of file"
}

// read reads the regular files among nodes from d, at most lim.SkillSize
// bytes in all. A file that is no longer a regular file fails the read.
func read(d *hostfs.Dir, nodes []node, lim Limits) ([]File, error) {
	var files []File
	var total int64
	for _, n := range nodes {
		if n.mode.IsDir() {
			continue
		}
		data, err := d.ReadFile(n.path, lim.SkillSize-total)
		if errors.Is(err, hostfs.ErrTooLarge) {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, lim.SkillSize)
		}
		if err != nil {
			return nil, err
		}
		total += int64(len(data))
		files = append(files, File{Path: n.path, Exec: n.mode&0o111 != 0, Data: data})
	}
	return files, nil
}

// readTree walks and reads the skill folder d: its files, refusing
// anything but files and folders.
func readTree(d *hostfs.Dir, lim Limits) ([]File, error) {
	nodes, err := walk(d, lim, nil)
	if err != nil {
		return nil, err
	}
	if err := irregular(nodes); err != nil {
		return nil, err
	}
	return read(d, nodes, lim)
}

// writeTree makes the folder name in parent, which must not exist, and
// writes files into it: folders 0755 and files 0644 or 0755, given to
// owner; with private, 0700 and 0600 or 0700, left to den.
func writeTree(parent *hostfs.Dir, name string, files []File, owner *hostfs.Owner, private bool) error {
	dirPerm, filePerm, execPerm := os.FileMode(0o755), os.FileMode(0o644), os.FileMode(0o755)
	if private {
		dirPerm, filePerm, execPerm = 0o700, 0o600, 0o700
		owner = nil
	}
	root, created, err := parent.Mkdir(name, dirPerm, owner)
	if err != nil {
		return err
	}
	dirs := map[string]*hostfs.Dir{"": root}
	defer func() {
		for _, d := range dirs {
			d.Close()
		}
	}()
	if !created {
		return fmt.Errorf("%s %w: it appeared while den was writing it", root.Name(), ErrExists)
	}
	var folder func(p string) (*hostfs.Dir, error)
	folder = func(p string) (*hostfs.Dir, error) {
		if d, ok := dirs[p]; ok {
			return d, nil
		}
		up, err := folder(parentOf(p))
		if err != nil {
			return nil, err
		}
		d, _, err := up.Mkdir(path.Base(p), dirPerm, owner)
		if err != nil {
			return nil, err
		}
		dirs[p] = d
		return d, nil
	}
	for _, f := range files {
		d, err := folder(parentOf(f.Path))
		if err != nil {
			return err
		}
		perm := filePerm
		if f.Exec {
			perm = execPerm
		}
		if err := d.WriteFile(path.Base(f.Path), f.Data, perm, owner, false); err != nil {
			return err
		}
	}
	return nil
}

// parentOf is p's folder, "" at the top.
func parentOf(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// maxRemoveDepth bounds removeTree's descent, each level holding a
// descriptor open.
const maxRemoveDepth = 64

// removeTree removes the entry name from parent and, for a folder,
// everything in it, following no link. A missing entry is not an
// error.
func removeTree(parent *hostfs.Dir, name string) error {
	return removeAt(parent, name, 0)
}

func removeAt(parent *hostfs.Dir, name string, depth int) error {
	e, err := parent.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if e.Mode.IsDir() {
		if depth == maxRemoveDepth {
			return fmt.Errorf("%s/%s %w: folders more than %d deep", parent.Name(), name, ErrTooLarge, maxRemoveDepth)
		}
		sub, err := parent.Sub(name)
		if err != nil {
			return err
		}
		defer sub.Close()
		for {
			entries, more, err := sub.List(256)
			if err != nil {
				return err
			}
			for _, c := range entries {
				if err := removeAt(sub, c.Name, depth+1); err != nil {
					return err
				}
			}
			if !more {
				break
			}
		}
	}
	return parent.Remove(name)
}
