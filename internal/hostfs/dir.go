package hostfs

import (
	"fmt"
	"os"
	"path"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Owner is a host uid/gid that files den creates for the computer must
// belong to.
type Owner struct{ UID, GID int }

// Identity is whose permissions a read is checked against: the host
// uid, gid and supplementary groups of the computer's root.
type Identity struct {
	UID, GID int
	Groups   []int
}

// Dir is an open folder den owns or trusts by path; everything beneath
// it is untrusted.
type Dir struct {
	// f holds the folder's descriptor, opened O_PATH|O_DIRECTORY. Calls
	// use it through raw.Control, which keeps the descriptor open (and
	// its number from being reused) until they return, even if Close
	// runs meanwhile.
	f    *os.File
	raw  syscall.RawConn
	path string
	name string
}

// OpenDir opens the folder at path, which den trusts: symbolic links
// in path itself are followed. Messages name the folder by path.
func OpenDir(path string) (*Dir, error) {
	return OpenDirNamed(path, path)
}

// OpenDirNamed is OpenDir with messages that call the folder name
// instead of by its host path: the computer's /workspace, say, for the
// host folder bound there, so that a person reads
// "/workspace/a.txt is a symbolic link".
func OpenDirNamed(path, name string) (*Dir, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open folder", Path: path, Err: err}
	}
	return newDir(fd, path, name)
}

// newDir wraps fd, an O_PATH|O_DIRECTORY descriptor, and owns it from
// then on.
func newDir(fd int, path, name string) (*Dir, error) {
	f := os.NewFile(uintptr(fd), path)
	raw, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open folder %s: %w", path, err)
	}
	return &Dir{f: f, raw: raw, path: path, name: name}, nil
}

// Close closes the folder. Calls already running finish first; later
// calls fail.
func (d *Dir) Close() error {
	if err := d.f.Close(); err != nil {
		return fmt.Errorf("close folder %s: %w", d.path, err)
	}
	return nil
}

// Path is the host path the folder was opened by (for a folder from
// Mkdir, its parent's path and its name). It names the folder in logs;
// what the path leads to now may be another folder.
func (d *Dir) Path() string { return d.path }

// Name is how messages call the folder: the name given to
// OpenDirNamed, or Path.
func (d *Dir) Name() string { return d.name }

// do runs fn with the folder's descriptor, held open until fn returns.
func (d *Dir) do(fn func(dfd int) error) error {
	var ferr error
	if err := d.raw.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		// Control fails only once the file is closed.
		return fmt.Errorf("folder %s: %w", d.name, os.ErrClosed)
	}
	return ferr
}

// show is how messages name comps beneath the folder.
func (d *Dir) show(comps ...string) string {
	return path.Join(append([]string{d.name}, comps...)...)
}

// split checks rel, a slash-separated path beneath the folder, and
// returns its components without empty and "." ones.
func (d *Dir) split(rel string) ([]string, error) {
	if strings.HasPrefix(rel, "/") {
		return nil, fmt.Errorf("%q %w: den takes only paths relative to %s", rel, ErrEscapes, d.name)
	}
	if strings.IndexByte(rel, 0) >= 0 {
		return nil, fmt.Errorf("%q %w: it has a NUL byte", rel, ErrInvalidPath)
	}
	var comps []string
	for c := range strings.SplitSeq(rel, "/") {
		switch c {
		case "", ".":
		case "..":
			return nil, fmt.Errorf("%q %w: den takes no \"..\" beneath %s", rel, ErrEscapes, d.name)
		default:
			comps = append(comps, c)
		}
	}
	if len(comps) == 0 {
		return nil, fmt.Errorf("%q %w: name a file beneath %s", rel, ErrInvalidPath, d.name)
	}
	return comps, nil
}

// checkName checks name, which must be one path element.
func checkName(name string) error {
	switch {
	case name == "..":
		return fmt.Errorf("%q %w: give one name in the folder", name, ErrEscapes)
	case name == "", name == ".", strings.ContainsAny(name, "/\x00"):
		return fmt.Errorf("%q %w: give one name, without \"/\"", name, ErrInvalidPath)
	}
	return nil
}
