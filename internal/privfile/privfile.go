package privfile

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Create writes data to path unless a file is there, and reports
// whether this call made it. created is false, with no error, when the
// name exists, also when it appeared while Create was writing: another
// caller was first and its content is the file's. Nothing there is read,
// checked or changed; Read the file afterwards.
func Create(path string, data []byte) (created bool, err error) {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, path)
	switch {
	case errors.Is(err, fs.ErrExist):
		return false, nil
	case err != nil:
		// No hard links here (Android's app storage): rename, which
		// replaces a file that appeared meanwhile.
		if err := os.Rename(tmp, path); err != nil {
			return false, err
		}
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return false, err
	}
	return true, nil
}

// Replace writes data to path atomically, in place of whatever file is
// there: readers see the old content or data, never part of either.
func Replace(path string, data []byte) error {
	tmp, err := writeTemp(path, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

// writeTemp writes data to a new file beside path, created with O_EXCL
// and mode 0600 by os.CreateTemp and synced, and returns its name. It
// makes the folder (mode 0700) first if it is missing.
func writeTemp(path string, data []byte) (string, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+"-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// syncDir makes a link or rename in dir last.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// Read returns the content of the private file at path, at most max
// bytes, with the opened file's info. A file that is a symbolic link,
// not a regular file, open to group or others or over max bytes is
// refused with a *RefusedError. The info is returned with every error
// that comes after the file was opened, refusals included, so that a
// caller watching the file can tell when a refused one has changed; it
// is nil when the open failed (a missing file: fs.ErrNotExist; a
// symbolic link: Symlink).
func Read(path string, max int64) ([]byte, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, nil, &RefusedError{Reason: Symlink}
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fi, &RefusedError{Reason: NotRegular}
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fi, &RefusedError{Reason: Shared, Mode: perm}
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fi, err
	}
	if int64(len(b)) > max {
		return nil, fi, &RefusedError{Reason: TooLarge, Max: max}
	}
	return b, fi, nil
}
