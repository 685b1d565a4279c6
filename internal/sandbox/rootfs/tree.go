package rootfs

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// tree writes archive entries into a destination directory. Every file system
// operation goes through an os.Root, so no entry name and no symlink created
// by an earlier entry can make a write land outside the directory.
type tree struct {
	root  *os.Root
	chown bool // set owners (only when running as root)
	dirs  []dirMeta
	buf   []byte
	// xattrs, when set, makes entries get the extended attributes their
	// headers carry, and is told of each the system refuses.
	xattrs func(name string, err error)
}

// dirMeta is applied after all entries are written: a directory's mode may
// forbid writing into it, and writing into it changes its mtime.
type dirMeta struct {
	name     string
	mode     fs.FileMode
	mtime    time.Time
	uid, gid int
	pax      map[string]string // the header's records, for its extended attributes
}

func openTree(dir string) (*tree, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	return &tree{root: root, chown: os.Geteuid() == 0, buf: make([]byte, 256<<10)}, nil
}

func (t *tree) close() error { return t.root.Close() }

// cleanName turns an archive entry name into a name relative to the root.
// Leading slashes are dropped (absolute names are confined to the root, as
// tar does); any ".." component is rejected.
func cleanName(name string) (string, error) {
	n := strings.TrimLeft(name, "/")
	for elem := range strings.SplitSeq(n, "/") {
		if elem == ".." {
			return "", fmt.Errorf("%w: %q contains ..", ErrUnsafeArchive, name)
		}
	}
	n = path.Clean(n)
	if n == "" {
		n = "."
	}
	return n, nil
}

// escapeErr converts os.Root's refusal to follow a path out of the root into
// ErrUnsafeArchive; other errors pass through.
func escapeErr(name string, err error) error {
	if err != nil && strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("%w: %q resolves outside the destination: %w", ErrUnsafeArchive, name, err)
	}
	return err
}

// add writes one entry. r supplies a regular file's contents.
func (t *tree) add(h *tar.Header, r io.Reader) error {
	name, err := cleanName(h.Name)
	if err != nil {
		return err
	}
	if name == "." && h.Typeflag != tar.TypeDir {
		return fmt.Errorf("%w: %q is not a directory but names the root", ErrUnsafeArchive, h.Name)
	}
	switch h.Typeflag {
	case tar.TypeDir:
		err = t.dir(name, h)
	case tar.TypeReg, '\x00', tar.TypeGNUSparse, tar.TypeCont:
		err = t.file(name, h, r)
	case tar.TypeSymlink:
		err = t.symlink(name, h)
	case tar.TypeLink:
		err = t.link(name, h)
	case tar.TypeFifo:
		err = t.fifo(name, h)
	default:
		// Device nodes (the sandbox provides /dev) and unknown types.
		return nil
	}
	return escapeErr(h.Name, err)
}

// create runs op, first making missing parents or removing whatever is in
// the way when op reports that.
func (t *tree) create(name string, op func() error) error {
	err := op()
	if errors.Is(err, fs.ErrNotExist) {
		if err := t.root.MkdirAll(path.Dir(name), 0o755); err != nil {
			return err
		}
		err = op()
	}
	if errors.Is(err, fs.ErrExist) {
		if err := t.root.RemoveAll(name); err != nil {
			return err
		}
		err = op()
	}
	return err
}

func (t *tree) dir(name string, h *tar.Header) error {
	if name != "." {
		fi, err := t.root.Lstat(name)
		switch {
		case err == nil && fi.IsDir():
		case err == nil:
			if err := t.root.Remove(name); err != nil {
				return err
			}
			fallthrough
		default:
			if err := t.create(name, func() error { return t.root.Mkdir(name, 0o700) }); err != nil {
				return err
			}
		}
	}
	d := dirMeta{name: name, mode: modeOf(h), mtime: h.ModTime, uid: h.Uid, gid: h.Gid}
	if t.xattrs != nil {
		d.pax = h.PAXRecords
	}
	t.dirs = append(t.dirs, d)
	return nil
}

func (t *tree) file(name string, h *tar.Header, r io.Reader) error {
	var f *os.File
	err := t.create(name, func() (err error) {
		f, err = t.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		return err
	})
	if err != nil {
		return err
	}
	n, err := io.CopyBuffer(onlyWriter{f}, io.LimitReader(r, h.Size), t.buf)
	if err == nil && n != h.Size {
		err = io.ErrUnexpectedEOF
	}
	if err == nil && t.chown {
		err = f.Chown(h.Uid, h.Gid) // before Chmod: chown clears setuid bits
	}
	if err == nil {
		// After chown, which drops a file capability; before chmod,
		// which may take the owner's right to write them.
		t.setXattrs(h.PAXRecords, func(name string, v []byte) error { return unix.Fsetxattr(int(f.Fd()), name, v, 0) })
		err = f.Chmod(modeOf(h))
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return t.root.Chtimes(name, h.ModTime, h.ModTime)
}

func (t *tree) symlink(name string, h *tar.Header) error {
	err := t.create(name, func() error { return t.root.Symlink(h.Linkname, name) })
	if err != nil {
		return err
	}
	return t.atParent(name, func(dirfd int, base string) error {
		if t.chown {
			if err := unix.Fchownat(dirfd, base, h.Uid, h.Gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
				return &os.PathError{Op: "lchown", Path: name, Err: err}
			}
		}
		t.setXattrs(h.PAXRecords, func(n string, v []byte) error { return unix.Lsetxattr(procPath(dirfd, base), n, v, 0) })
		return setTimes(dirfd, base, h.ModTime)
	})
}

func (t *tree) link(name string, h *tar.Header) error {
	target, err := cleanName(h.Linkname)
	if err != nil {
		return err
	}
	if target == name {
		return nil
	}
	return t.create(name, func() error { return t.root.Link(target, name) })
}

func (t *tree) fifo(name string, h *tar.Header) error {
	err := t.create(name, func() error {
		return t.atParent(name, func(dirfd int, base string) error {
			if err := unix.Mkfifoat(dirfd, base, 0o600); err != nil {
				return &os.PathError{Op: "mkfifo", Path: name, Err: err}
			}
			return nil
		})
	})
	if err != nil {
		return err
	}
	if t.chown {
		if err := t.root.Lchown(name, h.Uid, h.Gid); err != nil {
			return err
		}
	}
	if t.xattrs != nil && len(h.PAXRecords) > 0 {
		if err := t.atParent(name, func(dirfd int, base string) error {
			t.setXattrs(h.PAXRecords, func(n string, v []byte) error { return unix.Lsetxattr(procPath(dirfd, base), n, v, 0) })
			return nil
		}); err != nil {
			return err
		}
	}
	if err := t.root.Chmod(name, modeOf(h)); err != nil {
		return err
	}
	return t.root.Chtimes(name, h.ModTime, h.ModTime)
}

// atParent calls fn with a descriptor of name's parent directory, opened
// through the root, and name's last element.
func (t *tree) atParent(name string, fn func(dirfd int, base string) error) error {
	d, err := t.root.OpenFile(path.Dir(name), os.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return err
	}
	defer d.Close()
	return fn(int(d.Fd()), path.Base(name))
}

// procPath names an entry of an open folder by the folder's descriptor:
// the folder's magic link is the tree's own descriptor; the last
// element is not followed by the l* calls.
func procPath(dirfd int, base string) string {
	return fmt.Sprintf("/proc/self/fd/%d/%s", dirfd, base)
}

// xattrRecord starts the PAX records that carry extended attributes.
const xattrRecord = "SCHILY.xattr."

// setXattrs gives an entry the extended attributes in its header's PAX
// records through set, when the tree keeps them; one the system refuses
// is reported, and the entry stays without it.
func (t *tree) setXattrs(pax map[string]string, set func(name string, value []byte) error) {
	if t.xattrs == nil {
		return
	}
	for _, k := range slices.Sorted(maps.Keys(pax)) {
		name, ok := strings.CutPrefix(k, xattrRecord)
		if !ok || name == "" {
			continue
		}
		if err := set(name, []byte(pax[k])); err != nil {
			t.xattrs(name, err)
		}
	}
}

func setTimes(dirfd int, base string, mtime time.Time) error {
	ts := unix.NsecToTimespec(mtime.UnixNano())
	if err := unix.UtimesNanoAt(dirfd, base, []unix.Timespec{ts, ts}, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return &os.PathError{Op: "utimensat", Path: base, Err: err}
	}
	return nil
}

// finish applies the directories' owners, modes and mtimes, deepest first.
func (t *tree) finish() error {
	dirs := slices.Clone(t.dirs)
	slices.SortStableFunc(dirs, func(a, b dirMeta) int {
		return depth(b.name) - depth(a.name)
	})
	for _, d := range dirs {
		if t.chown {
			if err := t.root.Lchown(d.name, d.uid, d.gid); err != nil {
				return escapeErr(d.name, err)
			}
		}
		if len(d.pax) > 0 {
			if err := t.dirXattrs(d); err != nil {
				return escapeErr(d.name, err)
			}
		}
		if err := t.root.Chmod(d.name, d.mode); err != nil {
			return escapeErr(d.name, err)
		}
		if err := t.root.Chtimes(d.name, d.mtime, d.mtime); err != nil {
			return escapeErr(d.name, err)
		}
	}
	return nil
}

// dirXattrs gives a directory its extended attributes, opened without
// following a link.
func (t *tree) dirXattrs(d dirMeta) error {
	return t.atParent(d.name, func(dirfd int, base string) error {
		fd, err := unix.Openat(dirfd, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return &os.PathError{Op: "open", Path: d.name, Err: err}
		}
		defer unix.Close(fd)
		t.setXattrs(d.pax, func(n string, v []byte) error { return unix.Fsetxattr(fd, n, v, 0) })
		return nil
	})
}

func depth(name string) int {
	if name == "." {
		return -1
	}
	return strings.Count(name, "/")
}

// modeOf returns the permission bits of h including setuid, setgid and
// sticky, in os.FileMode terms.
func modeOf(h *tar.Header) fs.FileMode {
	return h.FileInfo().Mode() & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

// onlyWriter hides os.File's ReadFrom so CopyBuffer uses our buffer and the
// write errors stay distinguishable from read errors.
type onlyWriter struct{ w io.Writer }

func (o onlyWriter) Write(p []byte) (int, error) { return o.w.Write(p) }

// Tree writes tar entries into an existing directory with the safety
// of extraction (see "Extraction safety" in the package doc): no entry
// can create, link or change anything outside the directory, a ".."
// component is ErrUnsafeArchive, symlinks are made and never followed,
// and device nodes and sockets are skipped. Owners are set (h.Uid and
// h.Gid, as given) only when running as root; extended attributes only
// after KeepXattrs. A Tree is for one goroutine.
type Tree struct{ t *tree }

// OpenTree opens dir, which exists, for Add.
func OpenTree(dir string) (*Tree, error) {
	t, err := openTree(dir)
	if err != nil {
		return nil, fmt.Errorf("rootfs: %w", err)
	}
	return &Tree{t: t}, nil
}

// Add writes one entry, its name relative to the directory; r gives a
// regular file's h.Size bytes. A hard link's Linkname is relative to
// the directory too.
func (t *Tree) Add(h *tar.Header, r io.Reader) error { return t.t.add(h, r) }

// KeepXattrs makes Add give each entry the extended attributes its
// header carries in PAX records (SCHILY.xattr.NAME, as GNU tar and
// bsdtar write them), as they are: on the entry itself, through its
// descriptor or, for a symbolic link or FIFO, by its name in its open
// folder, never through a link. An attribute the file system or den's
// privileges refuse (a trusted.* one without root, a user.* one on a
// symbolic link) is passed to refused and the entry kept without it.
func (t *Tree) KeepXattrs(refused func(name string, err error)) { t.t.xattrs = refused }

// Finish gives the directories their modes, owners and times, once
// every entry is written (a directory's mode may forbid writing in it).
func (t *Tree) Finish() error { return t.t.finish() }

// Close releases the directory.
func (t *Tree) Close() error { return t.t.close() }
