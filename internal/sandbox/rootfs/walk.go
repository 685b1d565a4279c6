package rootfs

import (
	"archive/tar"
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// walkTree calls fn for every entry under dir, parents before children, as a
// tar header named relative to dir ("./" for dir itself). Symlinks are never
// followed. A regular file's contents are opened by open (nil for other
// entries); later names of a hard-linked file become TypeLink entries.
// Sockets and device nodes are skipped.
func walkTree(ctx context.Context, dir string, fn func(h *tar.Header, open func() (*os.File, error)) error) error {
	links := map[[2]uint64]string{}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		mode := fi.Mode()
		if mode&(fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0 {
			return nil
		}
		var target string
		if mode&fs.ModeSymlink != 0 {
			if target, err = os.Readlink(p); err != nil {
				return err
			}
		}
		h, err := tar.FileInfoHeader(fi, target)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		h.Name = filepath.ToSlash(rel)
		switch {
		case rel == ".":
			h.Name = "./"
		case fi.IsDir():
			h.Name += "/"
		}
		h.Uname, h.Gname = "", ""
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no stat information", p)
		}
		h.Uid, h.Gid = int(st.Uid), int(st.Gid)
		if !mode.IsRegular() {
			return fn(h, nil)
		}
		if st.Nlink > 1 {
			key := [2]uint64{st.Dev, st.Ino}
			if first, ok := links[key]; ok {
				h.Typeflag, h.Linkname, h.Size = tar.TypeLink, first, 0
				return fn(h, nil)
			}
			links[key] = h.Name
		}
		return fn(h, func() (*os.File, error) {
			return os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
		})
	})
}

// treeSize returns the total size of the regular files under dir.
func treeSize(ctx context.Context, dir string) (int64, error) {
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			total += fi.Size()
		}
		return nil
	})
	return total, err
}

// copyDir copies the tree at src into dst (which exists) with the same
// fidelity and confinement as extraction. src is only read.
func copyDir(ctx context.Context, src, dst string, rep *reporter) error {
	total, err := treeSize(ctx, src)
	if err != nil {
		return fmt.Errorf("rootfs: copy %s: %w", src, err)
	}
	t, err := openTree(dst)
	if err != nil {
		return fmt.Errorf("rootfs: copy %s: %w", src, err)
	}
	defer t.close()
	var done int64
	msg := "copying " + src
	err = walkTree(ctx, src, func(h *tar.Header, open func() (*os.File, error)) error {
		if open == nil {
			return t.add(h, nil)
		}
		f, err := open()
		if err != nil {
			return err
		}
		defer f.Close()
		cr := &countingReader{r: f, rep: rep, stage: StageExtract, msg: msg, done: done, total: total}
		err = t.add(h, cr)
		done = cr.done
		return err
	})
	if err == nil {
		err = t.finish()
	}
	if err != nil {
		return fmt.Errorf("rootfs: copy %s: %w", src, err)
	}
	rep.bytes(StageExtract, msg, total, total)
	return nil
}

// writeTar stores the tree at dir as an uncompressed tarball at file,
// atomically: a temporary file in the same folder is renamed into place
// only when complete.
func writeTar(ctx context.Context, dir, file string) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".tmp-*")
	if err != nil {
		return fmt.Errorf("rootfs: cache %s: %w", file, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
			err = fmt.Errorf("rootfs: cache %s: %w", file, err)
		}
	}()
	if err = tmp.Chmod(0o644); err != nil {
		return err
	}
	bw := bufio.NewWriterSize(tmp, 256<<10)
	tw := tar.NewWriter(bw)
	buf := make([]byte, 256<<10)
	err = walkTree(ctx, dir, func(h *tar.Header, open func() (*os.File, error)) error {
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if open == nil {
			return nil
		}
		f, err := open()
		if err != nil {
			return err
		}
		defer f.Close()
		n, err := io.CopyBuffer(tw, io.LimitReader(f, h.Size), buf)
		if err == nil && n != h.Size {
			err = fmt.Errorf("%s: changed while being read", h.Name)
		}
		return err
	})
	if err != nil {
		return err
	}
	if err = tw.Close(); err != nil {
		return err
	}
	if err = bw.Flush(); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}
