package hostfs

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Open opens rel, a relative slash-separated path beneath d, read-only.
// Empty and "." components are dropped; "", "." and a path with a NUL
// byte are ErrInvalidPath, an absolute path or one with ".." is
// ErrEscapes. Every symbolic link on the way, the last component
// included, is ErrSymlink. Only a regular file is opened: anything else
// (a folder, a named pipe, a socket, a device node) is ErrNotRegular,
// and is never opened for reading.
func (d *Dir) Open(rel string) (*os.File, error) {
	f, _, err := d.open(rel, beneath)
	return f, err
}

// ReadFile reads the whole regular file rel (as Open finds it), at
// most max bytes; a bigger file is ErrTooLarge.
func (d *Dir) ReadFile(rel string, max int64) ([]byte, error) {
	return d.readFile(rel, max, beneath)
}

func (d *Dir) readFile(rel string, max int64, resolve resolver) ([]byte, error) {
	f, st, err := d.open(rel, resolve)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size > max {
		return nil, fmt.Errorf("%s %w: %d bytes, more than the %d den reads", f.Name(), ErrTooLarge, st.Size, max)
	}
	// As os.ReadFile does: one byte more than the size, to see the end
	// without growing the buffer; the file may still change meanwhile.
	buf := make([]byte, 0, st.Size+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > max {
			return nil, fmt.Errorf("%s %w: it grew past the %d bytes den reads while being read", f.Name(), ErrTooLarge, max)
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err // an *os.PathError naming the file
		}
	}
}

// open opens rel with resolve, checks it is a regular file and opens
// that file for reading. It returns the file's fstat too.
func (d *Dir) open(rel string, resolve resolver) (*os.File, *unix.Stat_t, error) {
	comps, err := d.split(rel)
	if err != nil {
		return nil, nil, err
	}
	var pfd int
	err = d.do(func(dfd int) error {
		fd, depth, err := resolve(dfd, comps)
		if err != nil {
			return d.resolveError(comps, depth, err)
		}
		pfd = fd
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	defer unix.Close(pfd)
	shown := d.show(comps...)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return nil, nil, &os.PathError{Op: "stat", Path: shown, Err: err}
	}
	if kind := st.Mode & unix.S_IFMT; kind != unix.S_IFREG {
		if kind == unix.S_IFLNK {
			return nil, nil, fmt.Errorf("%s %w: den reads only real files", shown, ErrSymlink)
		}
		return nil, nil, fmt.Errorf("%s %w (%s): den reads only real files", shown, ErrNotRegular, kindName(kind))
	}
	fd, err := reopen(pfd, &st)
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: shown, Err: err}
	}
	return os.NewFile(uintptr(fd), shown), &st, nil
}

// reopen opens the regular file that pfd, an O_PATH descriptor, refers
// to, for reading.
//
// It goes through the magic link /proc/self/fd/N rather than resolving
// the path a second time with openat2: the magic link leads to the
// very inode that fstat has just shown to be a regular file, whatever
// the computer has done to the path since. A second resolution could
// meet a named pipe or a device node swapped in after the check; with
// O_NONBLOCK the pipe would not block, but opening a device can act on
// it before any check afterwards. den needs /proc on the host anyway
// (package hostcmd reaches sockets through /proc/self/fd too).
//
// O_NONBLOCK is for leases: when the computer holds a write lease on
// the file, a blocking open waits for the holder to give it up, up to
// /proc/sys/fs/lease-break-time (45 s by default); a non-blocking one
// fails at once with EWOULDBLOCK. It is cleared once the file is open:
// reading a regular file does not block, and os.File wants blocking
// descriptors.
func reopen(pfd int, st *unix.Stat_t) (int, error) {
	fd, err := ignoringEINTR(func() (int, error) {
		return unix.Open("/proc/self/fd/"+strconv.Itoa(pfd), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOCTTY|unix.O_NONBLOCK, 0)
	})
	if err != nil {
		return -1, err
	}
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if now.Dev != st.Dev || now.Ino != st.Ino || now.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return -1, errors.New("/proc/self/fd led to another file (is /proc the host's procfs?)")
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// resolveError turns a resolver's error into one for a person.
func (d *Dir) resolveError(comps []string, depth int, err error) error {
	switch err {
	case ErrSymlink:
		at := d.show(comps[:depth]...)
		if depth < len(comps) {
			return fmt.Errorf("%s %w: den reads only real files, and follows no link on the way to %s", at, ErrSymlink, d.show(comps...))
		}
		return fmt.Errorf("%s %w: den reads only real files", at, ErrSymlink)
	case ErrEscapes:
		return fmt.Errorf("%s %w: den reads only beneath %s", d.show(comps...), ErrEscapes, d.name)
	}
	return &os.PathError{Op: "open", Path: d.show(comps...), Err: err}
}

// kindName names a file type from stat's S_IFMT bits.
func kindName(kind uint32) string {
	switch kind {
	case unix.S_IFDIR:
		return "a folder"
	case unix.S_IFIFO:
		return "a named pipe"
	case unix.S_IFSOCK:
		return "a socket"
	case unix.S_IFCHR:
		return "a character device"
	case unix.S_IFBLK:
		return "a block device"
	case unix.S_IFLNK:
		return "a symbolic link"
	}
	return "an unknown kind of file"
}
