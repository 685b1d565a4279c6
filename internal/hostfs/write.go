package hostfs

import (
	"cmp"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path"
	"strconv"

	"golang.org/x/sys/unix"
)

// Create makes the file name (one path element) in d, open for
// writing, with mode perm exactly (the umask does not apply). An
// existing entry of any kind under name, a symbolic link (dangling or
// not) included, is ErrExists; it is neither followed nor changed.
// When owner is set and differs from den's effective uid and gid, the
// new file is given to owner. (The kernel clears setuid and setgid bits
// when a process without CAP_FSETID writes to the file; WriteFile sets
// them again.)
func (d *Dir) Create(name string, perm os.FileMode, owner *Owner) (*os.File, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	var f *os.File
	err := d.do(func(dfd int) error {
		var err error
		f, err = d.create(dfd, name, perm, owner)
		return err
	})
	return f, err
}

func (d *Dir) create(dfd int, name string, perm os.FileMode, owner *Owner) (*os.File, error) {
	shown := d.show(name)
	mode := sysMode(perm)
	fd, err := ignoringEINTR(func() (int, error) {
		return unix.Openat(dfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_WRONLY|unix.O_CLOEXEC, mode)
	})
	if errors.Is(err, unix.EEXIST) {
		return nil, fmt.Errorf("%s %w: den never writes over an existing name", shown, ErrExists)
	}
	if err != nil {
		return nil, &os.PathError{Op: "create", Path: shown, Err: err}
	}
	if err := ownFile(fd, mode, owner); err != nil {
		unix.Close(fd)
		// The file is the one just made, unless the computer has put
		// another in its place; removing that takes nothing from the
		// host, the folder being the computer's to change anyway.
		unix.Unlinkat(dfd, name, 0)
		return nil, &os.PathError{Op: "create", Path: shown, Err: err}
	}
	return os.NewFile(uintptr(fd), shown), nil
}

// WriteFile writes data to the file name (one path element) in d, with
// mode perm and owner as Create sets them. It writes a new temporary
// file in d, syncs it and renames it to name, so a reader sees the old
// file or the new one, never a part. The rename replaces whatever
// entry is at name (a symbolic link planted there included) without
// following it; with noReplace, an existing entry is ErrExists and is
// left alone. On every failure the temporary file is removed.
func (d *Dir) WriteFile(name string, data []byte, perm os.FileMode, owner *Owner, noReplace bool) error {
	if err := checkName(name); err != nil {
		return err
	}
	return d.do(func(dfd int) error {
		shown := d.show(name)
		tmp := ".den-tmp-" + rand.Text()
		f, err := d.create(dfd, tmp, perm, owner)
		if err != nil {
			return fmt.Errorf("write %s: %w", shown, err)
		}
		_, werr := f.Write(data)
		if werr == nil && perm&(os.ModeSetuid|os.ModeSetgid) != 0 {
			// Writing clears the setuid and setgid bits, unless den
			// has CAP_FSETID; set them again.
			werr = f.Chmod(perm)
		}
		serr := f.Sync()
		cerr := f.Close()
		if err := cmp.Or(werr, serr, cerr); err != nil {
			unix.Unlinkat(dfd, tmp, 0)
			return fmt.Errorf("write %s: %w", shown, err)
		}
		var flags uint
		if noReplace {
			flags = unix.RENAME_NOREPLACE
		}
		if err := unix.Renameat2(dfd, tmp, dfd, name, flags); err != nil {
			unix.Unlinkat(dfd, tmp, 0)
			if noReplace && errors.Is(err, unix.EEXIST) {
				return fmt.Errorf("%s %w: den was asked not to replace it", shown, ErrExists)
			}
			return &os.PathError{Op: "write", Path: shown, Err: fmt.Errorf("rename %s into place: %w", tmp, err)}
		}
		return nil
	})
}

// Mkdir makes the folder name (one path element) in d, with mode perm
// exactly and owner as Create sets them, and returns it open. An
// existing real folder under name is opened as it is (created is then
// false, and its mode and owner are left alone); a symbolic link there
// is ErrSymlink and anything else ErrNotDir.
func (d *Dir) Mkdir(name string, perm os.FileMode, owner *Owner) (sub *Dir, created bool, err error) {
	if err := checkName(name); err != nil {
		return nil, false, err
	}
	err = d.do(func(dfd int) error {
		shown := d.show(name)
		mode := sysMode(perm)
		err := unix.Mkdirat(dfd, name, mode)
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return &os.PathError{Op: "mkdir", Path: shown, Err: err}
		}
		created = err == nil
		// Open what is at name now, following nothing: the folder just
		// made or the one that was there, or whatever the computer has
		// put in their place.
		fd, err := ignoringEINTR(func() (int, error) {
			return unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
		if err != nil {
			return &os.PathError{Op: "mkdir", Path: shown, Err: err}
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return &os.PathError{Op: "mkdir", Path: shown, Err: err}
		}
		switch kind := st.Mode & unix.S_IFMT; kind {
		case unix.S_IFDIR:
		case unix.S_IFLNK:
			unix.Close(fd)
			return fmt.Errorf("%s %w: den makes and uses only real folders", shown, ErrSymlink)
		default:
			unix.Close(fd)
			return fmt.Errorf("%s %w (%s)", shown, ErrNotDir, kindName(kind))
		}
		if created {
			if err := ownDir(fd, mode, owner); err != nil {
				unix.Close(fd)
				return &os.PathError{Op: "mkdir", Path: shown, Err: err}
			}
		}
		sub, err = newDir(fd, path.Join(d.path, name), shown)
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return sub, created, nil
}

// ownFile gives the file fd to owner, when set and not den, and then
// mode exactly. On the descriptor, never by name: the name may lead
// elsewhere by now. chown comes first, as it clears the setuid and
// setgid bits; chmod then sets the mode exactly, past the umask that
// O_CREAT's mode went through.
func ownFile(fd int, mode uint32, owner *Owner) error {
	if differs(owner) {
		if err := unix.Fchown(fd, owner.UID, owner.GID); err != nil {
			return fmt.Errorf("chown to %d:%d: %w", owner.UID, owner.GID, err)
		}
	}
	if err := unix.Fchmod(fd, mode); err != nil {
		return fmt.Errorf("chmod %#o: %w", mode, err)
	}
	return nil
}

// ownDir gives the folder pfd (an O_PATH descriptor) to owner, when
// set and not den, and then mode exactly, as Create does for a file.
// An O_PATH descriptor takes neither fchown nor fchmod: fchownat's
// AT_EMPTY_PATH acts on the descriptor itself, and chmod of
// /proc/self/fd/N on the very inode it refers to.
func ownDir(pfd int, mode uint32, owner *Owner) error {
	if differs(owner) {
		if err := unix.Fchownat(pfd, "", owner.UID, owner.GID, unix.AT_EMPTY_PATH); err != nil {
			return fmt.Errorf("chown to %d:%d: %w", owner.UID, owner.GID, err)
		}
	}
	if err := unix.Fchmodat(unix.AT_FDCWD, "/proc/self/fd/"+strconv.Itoa(pfd), mode, 0); err != nil {
		return fmt.Errorf("chmod %#o: %w", mode, err)
	}
	return nil
}

// differs reports whether owner is set and is not den's effective uid
// and gid.
func differs(owner *Owner) bool {
	return owner != nil && (owner.UID != unix.Geteuid() || owner.GID != unix.Getegid())
}

// sysMode is perm as chmod(2) takes it: the permission bits and the
// setuid, setgid and sticky bits.
func sysMode(perm os.FileMode) uint32 {
	m := uint32(perm.Perm())
	if perm&os.ModeSetuid != 0 {
		m |= unix.S_ISUID
	}
	if perm&os.ModeSetgid != 0 {
		m |= unix.S_ISGID
	}
	if perm&os.ModeSticky != 0 {
		m |= unix.S_ISVTX
	}
	return m
}
