package bwrap

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/idmap"
)

// StageBase is where den, as root, stages a sandbox's bind sources.
//
// As root den runs bwrap as the computer's own unprivileged uid, so
// that the user namespace bwrap makes holds only the computer's range.
// That uid cannot search den's data dir (mode 0700, often under /root)
// nor, usually, the user's folders, and bwrap 0.8 resolves every source
// by path (even --bind-fd). So den bind-mounts each source, in its own
// mount namespace, at a folder under StageBase/PID.RANDOM that only root
// and the computer's group can search (mode 0710), makes those mounts
// private (nothing propagates from them), and detaches them once the
// sandbox holds its own copies. A den that was killed leaves its staging
// folder behind; the next bwrap backend detaches and removes it.
const StageBase = "/run/den-bwrap"

// stage is one start's staging folder.
type stage struct {
	dir    string
	n      int
	mounts []string // mount points, in the order made
}

func newStage(gid int) (*stage, error) {
	if err := os.MkdirAll(StageBase, 0o711); err != nil {
		return nil, fmt.Errorf("bwrap: stage: %w", err)
	}
	if err := os.Chmod(StageBase, 0o711); err != nil {
		return nil, fmt.Errorf("bwrap: stage: %w", err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	dir := filepath.Join(StageBase, strconv.Itoa(os.Getpid())+"."+hex.EncodeToString(b))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return nil, fmt.Errorf("bwrap: stage: %w", err)
	}
	if err := os.Chown(dir, 0, gid); err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("bwrap: stage: %w", err)
	}
	if err := os.Chmod(dir, 0o710); err != nil {
		os.Remove(dir)
		return nil, fmt.Errorf("bwrap: stage: %w", err)
	}
	return &stage{dir: dir}, nil
}

// point makes an empty mount point for a source of src's kind.
func (s *stage) point(src string) (string, fs.FileInfo, error) {
	fi, err := os.Stat(src)
	if err != nil {
		return "", nil, fmt.Errorf("bwrap: stage %s: %w", src, err)
	}
	p := filepath.Join(s.dir, strconv.Itoa(s.n))
	s.n++
	if fi.IsDir() {
		err = os.Mkdir(p, 0o700)
	} else {
		var f *os.File
		if f, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			f.Close()
		}
	}
	if err != nil {
		return "", nil, fmt.Errorf("bwrap: stage %s: %w", src, err)
	}
	return p, fi, nil
}

// bind stages src with a recursive private bind mount.
func (s *stage) bind(src string) (string, error) {
	p, _, err := s.point(src)
	if err != nil {
		return "", err
	}
	if err := unix.Mount(src, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return "", fmt.Errorf("bwrap: stage %s: bind: %w", src, err)
	}
	s.mounts = append(s.mounts, p)
	if err := unix.Mount("", p, "", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil {
		return "", fmt.Errorf("bwrap: stage %s: private: %w", src, err)
	}
	return p, nil
}

// bindMapped stages src through an idmapped mount made with the user
// namespace userns. ok is false when the kernel or the file system
// cannot idmap src; the caller then binds it plainly.
func (s *stage) bindMapped(src string, userns int) (string, bool, error) {
	fd, ok := idmap.MappedTree(src, userns)
	if !ok {
		return "", false, nil
	}
	defer unix.Close(fd)
	p, _, err := s.point(src)
	if err != nil {
		return "", false, err
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, p, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return "", false, fmt.Errorf("bwrap: stage %s: move mount: %w", src, err)
	}
	s.mounts = append(s.mounts, p)
	if err := unix.Mount("", p, "", unix.MS_PRIVATE|unix.MS_REC, ""); err != nil {
		return "", false, fmt.Errorf("bwrap: stage %s: private: %w", src, err)
	}
	return p, true, nil
}

// release detaches the staged mounts and removes the folder. The
// sandbox keeps its own copies.
func (s *stage) release() {
	if s == nil {
		return
	}
	for i := len(s.mounts) - 1; i >= 0; i-- {
		unix.Unmount(s.mounts[i], unix.MNT_DETACH)
	}
	s.mounts = nil
	os.RemoveAll(s.dir)
}

// sweepStages detaches and removes the staging folders of dens that are
// gone (StageBase/PID.RANDOM with PID not running).
func sweepStages() {
	ents, err := os.ReadDir(StageBase)
	if err != nil {
		return
	}
	var stale []string
	for _, e := range ents {
		pid, err := strconv.Atoi(strings.SplitN(e.Name(), ".", 2)[0])
		if err != nil || pid <= 0 || pid == os.Getpid() || unix.Kill(pid, 0) == nil || !errors.Is(unix.Kill(pid, 0), unix.ESRCH) {
			continue
		}
		stale = append(stale, filepath.Join(StageBase, e.Name()))
	}
	for _, dir := range stale {
		// Each staged source is a mount on a folder of its own, N, in
		// the start's folder: detach it (the loop takes mounts stacked
		// on one point) and remove what is left.
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			for unix.Unmount(p, unix.MNT_DETACH) == nil {
			}
		}
		os.RemoveAll(dir)
	}
}

// stageBinds stages the rootfs and every bind of spec for a bwrap
// running as the computer's root, and returns the spec with staged
// sources. User mounts (not Internal) go through idmapped mounts that
// make their owner root inside, unless the owner is host root (never
// mapped) or the file system cannot; MappedMounts says which did.
func (b *Backend) stageBinds(spec *sandbox.Spec, rootUID, rootGID int) (*sandbox.Spec, *stage, error) {
	st, err := newStage(rootGID)
	if err != nil {
		return nil, nil, err
	}
	out := *spec
	out.Binds = make([]sandbox.Bind, len(spec.Binds))
	if out.Rootfs, err = st.bind(spec.Rootfs); err != nil {
		st.release()
		return nil, nil, err
	}
	for i, m := range spec.Binds {
		out.Binds[i] = m
		mapped := false
		if !m.Internal {
			var sys unix.Stat_t
			if err := unix.Stat(m.Host, &sys); err == nil && sys.Uid != 0 {
				ns, err := b.owners.Get(int(sys.Uid), int(sys.Gid), rootUID, rootGID)
				if err != nil {
					st.release()
					return nil, nil, err
				}
				var p string
				if p, mapped, err = st.bindMapped(m.Host, ns); err != nil {
					st.release()
					return nil, nil, err
				}
				if mapped {
					out.Binds[i].Host = p
				}
			}
		}
		if !mapped {
			p, err := st.bind(m.Host)
			if err != nil {
				st.release()
				return nil, nil, err
			}
			out.Binds[i].Host = p
		}
	}
	return &out, st, nil
}

// Staged is a set of host folders staged for a bwrap that den, as root,
// runs as a computer's root but outside Backend.Start (the browser's
// sandbox does): each folder is a private recursive bind mount at a
// path that the computer's root can reach, as for a computer's own
// binds.
type Staged struct {
	st *stage
	// Paths holds the staged path of each folder, in the order given.
	Paths []string
}

// StageFolders stages folders for a bwrap run as a computer's root,
// whose host gid is gid. Release detaches them once bwrap holds its own
// copies of the mounts; a den that was killed first leaves them for the
// next bwrap backend to remove, as with Start's.
func StageFolders(gid int, folders ...string) (*Staged, error) {
	sweepStages()
	st, err := newStage(gid)
	if err != nil {
		return nil, err
	}
	s := &Staged{st: st}
	for _, f := range folders {
		p, err := st.bind(f)
		if err != nil {
			st.release()
			return nil, err
		}
		s.Paths = append(s.Paths, p)
	}
	return s, nil
}

// Release detaches the staged mounts and removes their folder. It is
// safe to call more than once, and on nil.
func (s *Staged) Release() {
	if s == nil {
		return
	}
	s.st.release()
}
