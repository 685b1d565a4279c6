package hostfs

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"time"

	"golang.org/x/sys/unix"
)

// An Entry is one entry of a folder as lstat(2) sees it: a symbolic
// link is the link itself, never what it leads to.
type Entry struct {
	Name    string
	Mode    fs.FileMode // the type bits and the permission bits
	Size    int64       // lstat's size: a link's is the length of its text
	ModTime time.Time
	Target  string // a symbolic link's text; "" for anything else

	// Inode and ChangeTime identify this version of the entry: the
	// kernel sets a file's change time (ctime) on every change to its
	// content or metadata, and no one can set it back the way touch
	// sets back ModTime. A caller that caches what it read of a file
	// can trust the cache while both stay the same.
	Inode      uint64
	ChangeTime time.Time
}

// Sub opens the folder rel, a relative slash-separated path beneath d,
// as a Dir of its own, resolved as Open resolves a path: every
// symbolic link on the way, the last component included, is
// ErrSymlink, and anything but a folder at rel is ErrNotDir. The
// folder is opened with O_PATH, which opens nothing a named pipe or a
// device could act on. Messages name it as d's messages do.
func (d *Dir) Sub(rel string) (*Dir, error) {
	return d.sub(rel, beneath)
}

func (d *Dir) sub(rel string, resolve resolver) (*Dir, error) {
	comps, err := d.split(rel)
	if err != nil {
		return nil, err
	}
	var sub *Dir
	err = d.do(func(dfd int) error {
		fd, depth, err := resolve(dfd, comps)
		if err != nil {
			return d.resolveError(comps, depth, err)
		}
		shown := d.show(comps...)
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return &os.PathError{Op: "stat", Path: shown, Err: err}
		}
		switch kind := st.Mode & unix.S_IFMT; kind {
		case unix.S_IFDIR:
		case unix.S_IFLNK:
			unix.Close(fd)
			return fmt.Errorf("%s %w: den opens only real folders", shown, ErrSymlink)
		default:
			unix.Close(fd)
			return fmt.Errorf("%s %w (%s)", shown, ErrNotDir, kindOf(kind))
		}
		sub, err = newDir(fd, path.Join(append([]string{d.path}, comps...)...), shown)
		return err
	})
	return sub, err
}

// Lstat describes the entry rel beneath d without following it: the
// folders on the way are resolved as Open resolves them (a symbolic
// link among them is ErrSymlink), and the last component, whatever it
// is, is described rather than opened. A missing entry is an error
// that errors.Is(err, fs.ErrNotExist).
func (d *Dir) Lstat(rel string) (Entry, error) {
	return d.lstat(rel, beneath)
}

func (d *Dir) lstat(rel string, resolve resolver) (Entry, error) {
	comps, err := d.split(rel)
	if err != nil {
		return Entry{}, err
	}
	var e Entry
	err = d.do(func(dfd int) error {
		parent, last := comps[:len(comps)-1], comps[len(comps)-1]
		pfd := dfd
		if len(parent) > 0 {
			fd, depth, err := resolve(dfd, parent)
			if err != nil {
				return d.resolveError(parent, depth, err)
			}
			defer unix.Close(fd)
			pfd = fd
		}
		var err error
		if e, err = entryAt(pfd, last); err != nil {
			return &os.PathError{Op: "lstat", Path: d.show(comps...), Err: err}
		}
		return nil
	})
	return e, err
}

// List describes the entries of d (without "." and ".."), in no
// particular order, as Lstat does: at most max of them, and more
// reports whether there were others. An entry removed while List runs
// is left out.
func (d *Dir) List(max int) (entries []Entry, more bool, err error) {
	err = d.do(func(dfd int) error {
		// "." of the folder's own descriptor is the folder itself,
		// whatever has become of its name: opened for reading, which
		// getdents needs and O_PATH does not give.
		fd, err := ignoringEINTR(func() (int, error) {
			return unix.Openat(dfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		})
		if err != nil {
			return &os.PathError{Op: "list", Path: d.name, Err: err}
		}
		f := os.NewFile(uintptr(fd), d.name)
		defer f.Close()
		for {
			names, rerr := f.Readdirnames(256)
			for _, name := range names {
				if len(entries) == max {
					more = true
					return nil
				}
				e, err := entryAt(dfd, name)
				if errors.Is(err, unix.ENOENT) {
					continue
				}
				if err != nil {
					return &os.PathError{Op: "list", Path: d.show(name), Err: err}
				}
				entries = append(entries, e)
			}
			if rerr == io.EOF {
				return nil
			}
			if rerr != nil {
				return &os.PathError{Op: "list", Path: d.name, Err: rerr}
			}
		}
	})
	if err != nil {
		return nil, false, err
	}
	return entries, more, nil
}

// entryAt describes name in the folder dfd, following nothing and
// opening nothing.
func entryAt(dfd int, name string) (Entry, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW|unix.AT_NO_AUTOMOUNT); err != nil {
		return Entry{}, err
	}
	e := Entry{Name: name, Mode: fileMode(st.Mode), Size: st.Size, ModTime: time.Unix(st.Mtim.Unix()),
		Inode: st.Ino, ChangeTime: time.Unix(st.Ctim.Unix())}
	if e.Mode&fs.ModeSymlink != 0 {
		// A link's text is at most PATH_MAX-1 bytes. Should the link
		// have been swapped for something else meanwhile, readlinkat
		// fails and the entry keeps no target.
		buf := make([]byte, unix.PathMax)
		if n, err := unix.Readlinkat(dfd, name, buf); err == nil {
			e.Target = string(buf[:n])
		}
	}
	return e, nil
}

// fileMode is stat's st_mode as an fs.FileMode, as package os makes
// it.
func fileMode(m uint32) fs.FileMode {
	mode := fs.FileMode(m & 0o777)
	switch m & unix.S_IFMT {
	case unix.S_IFDIR:
		mode |= fs.ModeDir
	case unix.S_IFLNK:
		mode |= fs.ModeSymlink
	case unix.S_IFIFO:
		mode |= fs.ModeNamedPipe
	case unix.S_IFSOCK:
		mode |= fs.ModeSocket
	case unix.S_IFCHR:
		mode |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFBLK:
		mode |= fs.ModeDevice
	case unix.S_IFREG:
	default:
		mode |= fs.ModeIrregular
	}
	if m&unix.S_ISUID != 0 {
		mode |= fs.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		mode |= fs.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		mode |= fs.ModeSticky
	}
	return mode
}

// kindOf is kindName, with a regular file named too.
func kindOf(kind uint32) string {
	if kind == unix.S_IFREG {
		return "a regular file"
	}
	return kindName(kind)
}
