package hostfs

import (
	"cmp"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// WriteFrom is WriteFile with the content streamed from r instead of
// held in memory: it copies what r yields, at most max bytes, into a
// new temporary file in d, syncs it and renames it to name (one path
// element), replacing whatever entry is there, a symbolic link
// included, without following it. It returns how many bytes it wrote.
//
// More than max bytes is ErrTooLarge. An error from r comes back
// wrapped, so that errors.As finds it (an *http.MaxBytesError, say).
// On every failure the temporary file is removed and the entry at name
// is left as it was.
func (d *Dir) WriteFrom(name string, r io.Reader, perm os.FileMode, owner *Owner, max int64) (int64, error) {
	if err := checkName(name); err != nil {
		return 0, err
	}
	var n int64
	err := d.do(func(dfd int) error {
		shown := d.show(name)
		tmp, written, err := d.stream(dfd, shown, r, perm, owner, max)
		if err != nil {
			return err
		}
		if err := unix.Renameat2(dfd, tmp, dfd, name, 0); err != nil {
			unix.Unlinkat(dfd, tmp, 0)
			return &os.PathError{Op: "write", Path: shown, Err: fmt.Errorf("rename %s into place: %w", tmp, err)}
		}
		n = written
		return nil
	})
	return n, err
}

// WriteNew is WriteFrom that never replaces an entry: the file goes
// under the first of names that is free when it is renamed into place
// (an entry of any kind, a dangling symbolic link included, takes a
// name). It returns the name it used and the bytes written. When every
// name is taken it is ErrExists; a name that is not one path element
// ends the search with ErrInvalidPath or ErrEscapes. names is ranged
// over once the content is written, so it may be endless only if some
// name is sure to be free.
func (d *Dir) WriteNew(names iter.Seq[string], r io.Reader, perm os.FileMode, owner *Owner, max int64) (string, int64, error) {
	var (
		used string
		n    int64
	)
	err := d.do(func(dfd int) error {
		tmp, written, err := d.stream(dfd, "a new file in "+d.name, r, perm, owner, max)
		if err != nil {
			return err
		}
		for name := range names {
			if err := checkName(name); err != nil {
				unix.Unlinkat(dfd, tmp, 0)
				return err
			}
			err := placeNew(dfd, tmp, name)
			if errors.Is(err, unix.EEXIST) {
				continue
			}
			if err != nil {
				unix.Unlinkat(dfd, tmp, 0)
				return &os.PathError{Op: "write", Path: d.show(name), Err: fmt.Errorf("rename %s into place: %w", tmp, err)}
			}
			used, n = name, written
			return nil
		}
		unix.Unlinkat(dfd, tmp, 0)
		return fmt.Errorf("a new file in %s: every name offered %w", d.name, ErrExists)
	})
	return used, n, err
}

// placeNew renames tmp to name in dfd unless name is taken (EEXIST).
// Where the filesystem has no RENAME_NOREPLACE (EINVAL), a hard link,
// which never replaces either, and an unlink do the same.
func placeNew(dfd int, tmp, name string) error {
	err := unix.Renameat2(dfd, tmp, dfd, name, unix.RENAME_NOREPLACE)
	if err != unix.EINVAL {
		return err
	}
	if err := unix.Linkat(dfd, tmp, dfd, name, 0); err != nil {
		return err
	}
	unix.Unlinkat(dfd, tmp, 0)
	return nil
}

// stream copies r, at most max bytes, into a new temporary file in
// dfd with perm and owner as Create sets them, syncs and closes it,
// and returns its name and size. On failure it removes the file. what
// names the file being written in messages.
func (d *Dir) stream(dfd int, what string, r io.Reader, perm os.FileMode, owner *Owner, max int64) (string, int64, error) {
	tmp := ".den-tmp-" + rand.Text()
	f, err := d.create(dfd, tmp, perm, owner)
	if err != nil {
		return "", 0, fmt.Errorf("write %s: %w", what, err)
	}
	// One byte more than max, to tell a body of max bytes from a
	// longer one.
	limit := max
	if limit < math.MaxInt64 {
		limit++
	}
	n, werr := io.Copy(f, io.LimitReader(r, limit))
	if werr == nil && n > max {
		werr = fmt.Errorf("%s %w: more than the %d bytes den takes", what, ErrTooLarge, max)
	} else if werr != nil {
		werr = fmt.Errorf("write %s: %w", what, werr)
	}
	if werr == nil && perm&(os.ModeSetuid|os.ModeSetgid) != 0 {
		// As in WriteFile: writing cleared them.
		if err := f.Chmod(perm); err != nil {
			werr = fmt.Errorf("write %s: %w", what, err)
		}
	}
	var serr, cerr error
	if werr == nil {
		serr = f.Sync()
	}
	cerr = f.Close()
	if err := cmp.Or(werr, serr, cerr); err != nil {
		unix.Unlinkat(dfd, tmp, 0)
		if err != werr {
			err = fmt.Errorf("write %s: %w", what, err)
		}
		return "", 0, err
	}
	return tmp, n, nil
}

// Remove removes the entry name (one path element) from d: a file, a
// symbolic link (never what it leads to) or an empty folder, as
// unlinkat(2) and rmdir(2) do.
func (d *Dir) Remove(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	return d.do(func(dfd int) error {
		err := unix.Unlinkat(dfd, name, 0)
		if err == unix.EISDIR {
			err = unix.Unlinkat(dfd, name, unix.AT_REMOVEDIR)
		}
		if err != nil {
			return &os.PathError{Op: "remove", Path: d.show(name), Err: err}
		}
		return nil
	})
}
