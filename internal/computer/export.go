package computer

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/sandbox"
)

// Export writes the computer's rootfs as an uncompressed tar stream.
// Owners are recorded as the computer sees them (root is 0), so the
// archive imports anywhere; an owner the computer cannot see is
// recorded as nobody (65534). Modes, symlinks, hard links, FIFOs and
// extended attributes are kept; device nodes are left out (every
// computer gets its own /dev), and so are file capabilities (nothing
// inside can use them). The tree may change while it is read: a file
// swapped for something else between finding and reading it is skipped
// with a note on stderr, never followed.
func (c *Computer) Export(ctx context.Context, w io.Writer) error {
	info, ok, _ := c.Info()
	if !ok {
		return fmt.Errorf("%w for agent %s", ErrNoComputer, c.agent)
	}
	if c.m.idErr != nil {
		return c.m.idErr
	}
	ids := c.treeIDs(info)
	root := c.Rootfs()
	dir, err := hostfs.OpenDir(root)
	if err != nil {
		return fmt.Errorf("computer: export %s: %w", c.agent, err)
	}
	defer dir.Close()
	e := &exporter{tw: tar.NewWriter(w), ids: ids, links: map[[2]uint64]string{}, buf: make([]byte, 256<<10), root: dir}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // removed while the walk ran
		}
		if err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		// The walk goes by path, and the computer may swap a folder
		// for a link to a host folder meanwhile: an entry whose way
		// from the rootfs holds a link now is left out, and what is
		// read is opened beneath the rootfs without a link on the way.
		if rel != "." {
			if _, err := dir.Lstat(rel); err != nil {
				fmt.Fprintf(os.Stderr, "den: export: %s changed while it was read; left out\n", p)
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
		}
		return e.add(p, rel)
	})
	if err == nil {
		err = e.tw.Close()
	}
	if err != nil {
		return fmt.Errorf("computer: export %s: %w", c.agent, err)
	}
	return nil
}

type exporter struct {
	root  *hostfs.Dir // the rootfs, opened once
	tw    *tar.Writer
	ids   sandbox.IDMap
	links map[[2]uint64]string // (dev, inode) of files with several links → first name
	buf   []byte
}

// nobody is the id an owner the computer cannot see is recorded as.
const nobody = 65534

func (e *exporter) inside(uid, gid uint32) (int, int) {
	u, g := nobody, nobody
	if in, ok := e.ids.InsideUID(uid); ok {
		u = int(in)
	}
	if in, ok := e.ids.InsideGID(gid); ok {
		g = int(in)
	}
	return u, g
}

func (e *exporter) add(p, rel string) error {
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); errors.Is(err, fs.ErrNotExist) {
		return nil // removed since it was found
	} else if err != nil {
		return err
	}
	name := rel
	if rel == "." {
		name = "./"
	} else {
		name = "./" + rel
	}
	uid, gid := e.inside(st.Uid, st.Gid)
	h := &tar.Header{
		Name:    name,
		Mode:    int64(st.Mode & 0o7777),
		Uid:     uid,
		Gid:     gid,
		ModTime: time.Unix(st.Mtim.Sec, st.Mtim.Nsec),
		Format:  tar.FormatPAX,
	}
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFDIR:
		h.Typeflag = tar.TypeDir
		if !strings.HasSuffix(h.Name, "/") {
			h.Name += "/"
		}
	case syscall.S_IFLNK:
		// The link's text, read beneath the rootfs with no link on the
		// way: a folder swapped for a link meanwhile is not followed.
		ln, err := e.root.Lstat(rel)
		if err != nil || ln.Mode&fs.ModeSymlink == 0 || ln.Inode != st.Ino {
			fmt.Fprintf(os.Stderr, "den: export: %s changed while it was read; left out\n", p)
			return nil
		}
		h.Typeflag, h.Linkname = tar.TypeSymlink, ln.Target
	case syscall.S_IFIFO:
		h.Typeflag = tar.TypeFifo
	case syscall.S_IFREG:
		key := [2]uint64{st.Dev, st.Ino}
		if st.Nlink > 1 {
			if first, ok := e.links[key]; ok {
				h.Typeflag, h.Linkname = tar.TypeLink, first
				return e.tw.WriteHeader(h)
			}
			e.links[key] = name
		}
		return e.file(p, rel, h, &st)
	default:
		return nil // devices and sockets
	}
	e.xattrs(p, h)
	return e.tw.WriteHeader(h)
}

// file writes a regular file, opened beneath the rootfs with no link on
// the way (hostfs) and checked to be the entry that was found.
func (e *exporter) file(p, rel string, h *tar.Header, st *unix.Stat_t) error {
	f, err := e.root.Open(rel)
	if err != nil {
		fmt.Fprintf(os.Stderr, "den: export: %s changed while it was read; left out\n", p)
		return nil
	}
	defer f.Close()
	var now unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &now); err != nil {
		return err
	}
	if now.Dev != st.Dev || now.Ino != st.Ino || now.Mode&syscall.S_IFMT != syscall.S_IFREG {
		fmt.Fprintf(os.Stderr, "den: export: %s changed while it was read; left out\n", p)
		return nil
	}
	h.Typeflag, h.Size = tar.TypeReg, now.Size
	e.xattrs(p, h)
	if err := e.tw.WriteHeader(h); err != nil {
		return err
	}
	n, err := io.CopyBuffer(e.tw, io.LimitReader(f, now.Size), e.buf)
	if err != nil {
		return err
	}
	if n < now.Size {
		// Truncated while read: pad, so the archive stays valid.
		if _, err := e.tw.Write(make([]byte, now.Size-n)); err != nil {
			return err
		}
	}
	return nil
}

// xattrs records extended attributes (not the file capability).
func (e *exporter) xattrs(p string, h *tar.Header) {
	sz, err := unix.Llistxattr(p, nil)
	if err != nil || sz <= 0 {
		return
	}
	list := make([]byte, sz)
	if sz, err = unix.Llistxattr(p, list); err != nil {
		return
	}
	for _, name := range strings.Split(strings.TrimRight(string(list[:sz]), "\x00"), "\x00") {
		if name == "" || name == "security.capability" || strings.HasPrefix(name, "system.") {
			continue
		}
		vsz, err := unix.Lgetxattr(p, name, nil)
		if err != nil || vsz < 0 {
			continue
		}
		v := make([]byte, vsz)
		if vsz, err = unix.Lgetxattr(p, name, v); err != nil {
			continue
		}
		if h.PAXRecords == nil {
			h.PAXRecords = map[string]string{}
		}
		h.PAXRecords["SCHILY.xattr."+name] = string(v[:vsz])
	}
}
