package hostfs

import (
	"strings"

	"golang.org/x/sys/unix"
)

// A resolver opens comps beneath the folder dfd with O_PATH, following
// no symbolic link, and returns the descriptor. On failure, depth is
// how many components lead to the one at fault (all of them when that
// is unknown), so that a message can name it. The error is a
// syscall.Errno, ErrSymlink or ErrEscapes.
type resolver func(dfd int, comps []string) (fd, depth int, err error)

// beneath resolves comps with openat2(2), and with walk where the
// kernel has no openat2.
func beneath(dfd int, comps []string) (int, int, error) {
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	rel := strings.Join(comps, "/")
	var err error
	// EAGAIN: the kernel could not rule out a ".." escape during a
	// concurrent rename, and asks for a retry. split refuses "..", so
	// this should not happen; retry a few times all the same.
	for range 4 {
		var fd int
		fd, err = ignoringEINTR(func() (int, error) { return unix.Openat2(dfd, rel, &how) })
		switch err {
		case nil:
			return fd, len(comps), nil
		case unix.EAGAIN:
			continue
		case unix.ENOSYS:
			return walk(dfd, comps)
		case unix.ELOOP:
			// A symbolic link somewhere (without O_NOFOLLOW the last
			// component's too). The walk finds which, for the message.
			fd, depth, werr := walk(dfd, comps)
			if werr == nil {
				unix.Close(fd) // the link has gone meanwhile; refuse all the same
			} else if werr == ErrSymlink {
				return -1, depth, ErrSymlink
			}
			return -1, len(comps), ErrSymlink
		case unix.EXDEV:
			return -1, len(comps), ErrEscapes
		default:
			return -1, len(comps), err
		}
	}
	return -1, len(comps), err
}

// walk resolves comps one at a time with openat(O_PATH|O_NOFOLLOW),
// which opens a symbolic link itself rather than its target, and
// refuses each link it meets. With ".." and absolute paths refused by
// split, this stays beneath dfd as openat2's RESOLVE_BENEATH does; a
// magic link is a symbolic link to fstat, and refused the same way.
func walk(dfd int, comps []string) (int, int, error) {
	if len(strings.Join(comps, "/")) >= unix.PathMax {
		return -1, len(comps), unix.ENAMETOOLONG // as openat2 says, before any lookup
	}
	cur := dfd
	for i, c := range comps {
		fd, err := ignoringEINTR(func() (int, error) {
			return unix.Openat(cur, c, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		})
		if cur != dfd {
			unix.Close(cur)
		}
		if err != nil {
			return -1, i + 1, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, i + 1, err
		}
		switch kind := st.Mode & unix.S_IFMT; {
		case kind == unix.S_IFLNK:
			unix.Close(fd)
			return -1, i + 1, ErrSymlink
		case kind != unix.S_IFDIR && i < len(comps)-1:
			unix.Close(fd)
			return -1, i + 1, unix.ENOTDIR
		}
		cur = fd
	}
	return cur, len(comps), nil
}

// ignoringEINTR calls fn until it is not interrupted by a signal.
func ignoringEINTR(fn func() (int, error)) (int, error) {
	for {
		fd, err := fn()
		if err != unix.EINTR {
			return fd, err
		}
	}
}
