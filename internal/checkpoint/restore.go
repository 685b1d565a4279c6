package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// RestoreOptions shape a restore.
type RestoreOptions struct {
	// Save, when set, first takes a checkpoint of the trees as they are
	// (with these options; Reason "restore" when unset), so that the
	// restore itself can be undone. A save that fails stops the restore
	// before anything is changed.
	Save *TakeOptions
}

// Restored reports a restore.
type Restored struct {
	// Undone is what differed from the checkpoint, now put back.
	Undone Diff
	// Saved is the checkpoint of the state the restore replaced (zero
	// ID without RestoreOptions.Save).
	Saved Checkpoint
	// Left are entries the restore could not touch (a mount the host
	// made inside a tree) and what it could not set (owners an
	// ordinary user cannot give), for people.
	Left []string
}

// Restore makes the trees what they were at checkpoint id: entries
// added since are removed, removed ones made again, changed ones put
// back, with their content, permissions (setuid and setgid included),
// owners, extended attributes, modification times and hard links.
// Trees the checkpoint does not have, and Skip paths, are not touched.
//
// Nothing may run in the trees meanwhile (the caller sees to it). Every
// object the restore needs is read and checked before anything
// changes: a damaged checkpoint fails with ErrDamaged and changes
// nothing. No symlink is ever followed, and no mount crossed, in the
// trees; each new entry is made under a temporary name, completed, then
// renamed into place.
//
// With a Helper, the restore runs in it: as root of the computer's ids,
// it gives every entry back to its owner.
func (s *Store) Restore(ctx context.Context, id int, trees []Tree, o RestoreOptions) (Restored, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return Restored{}, err
	}
	defer unlock()
	if s.helper != nil {
		return s.restoreVia(ctx, id, trees, o)
	}
	return s.restore(ctx, id, trees, o)
}

// restore is Restore with the lock held.
func (s *Store) restore(ctx context.Context, id int, trees []Tree, o RestoreOptions) (Restored, error) {
	cp, err := s.Get(id)
	if err != nil {
		return Restored{}, err
	}
	var out Restored
	w := newWalker(ctx, s, false)
	defer w.close()
	type job struct {
		t        Tree
		cp, live Root
	}
	var jobs []job
	for _, t := range trees {
		if err := checkTree(t); err != nil {
			return out, err
		}
		r, ok := cp.Root(t.Name)
		if !ok {
			continue
		}
		live, err := w.root(t, &r)
		if err != nil {
			return out, err
		}
		if err := diffRoots(ctx, w, r, live, &out.Undone, &t); err != nil {
			return out, err
		}
		jobs = append(jobs, job{t, r, live})
	}
	// Plan: every content the restore writes, checked first.
	need := map[Hash]bool{}
	for _, j := range jobs {
		rs := &restorer{w: w, need: need, skip: skipSet(j.t.Skip)}
		if err := rs.findKept(j.cp.Entry.Hash, j.live.Entry.Hash); err != nil {
			return out, err
		}
		if err := rs.dir(-1, j.cp.Entry.Hash, j.live.Entry.Hash, ""); err != nil {
			return out, err
		}
	}
	if err := s.verify(ctx, need, w.buffer()); err != nil {
		return out, err
	}
	if o.Save != nil {
		so := *o.Save
		if so.Reason == "" {
			so.Reason = "restore"
		}
		if out.Saved, err = s.take(ctx, trees, so); err != nil {
			return out, fmt.Errorf("checkpoint: keep the state before restoring: %w", err)
		}
	}
	for _, j := range jobs {
		rs := &restorer{w: w, skip: skipSet(j.t.Skip), guest: j.t.Guest, links: map[uint64]string{}, reflink: true, root: -1}
		if err := rs.tree(j.t, j.cp, j.live); err != nil {
			return out, err
		}
		out.Left = append(out.Left, rs.left...)
	}
	return out, nil
}

// verify reads every object a restore needs and checks it is what its
// name says.
func (s *Store) verify(ctx context.Context, need map[Hash]bool, buf []byte) error {
	for h := range need {
		if err := ctx.Err(); err != nil {
			return err
		}
		fd, err := unix.Open(s.objectPath(h), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("%w: file %s: %v", ErrDamaged, h, err)
		}
		var st unix.Stat_t
		err = unix.Fstat(fd, &st)
		var got Hash
		if err == nil {
			got, err = hashCopy(fd, -1, &st, buf)
		}
		unix.Close(fd)
		if err != nil || got != h {
			return fmt.Errorf("%w: file %s is not what its name says", ErrDamaged, h)
		}
	}
	return nil
}

// restorer puts one tree back. With need set it only plans: it lists
// the contents it will write, touching nothing (descriptors are -1).
type restorer struct {
	w     *walker
	need  map[Hash]bool
	skip  map[string]bool
	guest string
	root  int   // the tree's folder
	mnt   mount // its mount: mounts beneath are left alone

	links   map[uint64]string // checkpoint inode → where its first name is now
	keep    map[uint64]keeper // hard-linked files kept as they are
	reflink bool
	left    []string
}

// keeper is a hard-linked file of the checkpoint found unchanged: its
// name, and its inode now.
type keeper struct {
	rel string
	ino uint64
}

func (r *restorer) tree(t Tree, cp, live Root) error {
	fd, err := unix.Open(t.Path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("checkpoint: restore %s: %w", t.Path, err)
	}
	defer unix.Close(fd)
	_, mnt, err := statAt(fd, "")
	if err != nil {
		return fmt.Errorf("checkpoint: restore %s: %w", t.Path, err)
	}
	r.root, r.mnt = fd, mnt
	if err := r.findKept(cp.Entry.Hash, live.Entry.Hash); err != nil {
		return err
	}
	if err := r.dir(fd, cp.Entry.Hash, live.Entry.Hash, ""); err != nil {
		return err
	}
	return r.setMeta(fd, -1, "", &cp.Entry, "")
}

// findKept finds, for each hard-linked file of the checkpoint, a name
// of it that is unchanged now: the other names are linked to it.
func (r *restorer) findKept(cp, live Hash) error {
	r.keep = map[uint64]keeper{}
	var walk func(a, b Hash, rel string) error
	walk = func(a, b Hash, rel string) error {
		ea, err := r.w.listing(a)
		if err != nil {
			return err
		}
		var eb []Entry
		if !b.IsZero() {
			if eb, err = r.w.listing(b); err != nil {
				return err
			}
		}
		for i := range ea {
			c := &ea[i]
			l := find(eb, c.Name)
			child := join(rel, c.Name)
			switch {
			case c.Kind == Dir:
				var lh Hash
				if l != nil && l.Kind == Dir {
					lh = l.Hash
				}
				if err := walk(c.Hash, lh, child); err != nil {
					return err
				}
			case c.Links && l != nil && same(c, l):
				if _, ok := r.keep[c.Ino]; !ok {
					r.keep[c.Ino] = keeper{rel: child, ino: l.Ino}
				}
			}
		}
		return nil
	}
	return walk(cp, live, "")
}

func find(es []Entry, name string) *Entry {
	k, ok := slices.BinarySearchFunc(es, name, func(e Entry, n string) int { return strings.Compare(e.Name, n) })
	if !ok {
		return nil
	}
	return &es[k]
}

// same reports whether live entry l is checkpoint entry c, as far as a
// person or a program can tell.
func same(c, l *Entry) bool {
	return c.Kind == l.Kind && len(differs(c, l)) == 0 && c.Mtime == l.Mtime && c.Links == l.Links
}

// dir puts the folder dfd (rel) back to listing cp; live is its
// listing now (zero for a folder just made).
func (r *restorer) dir(dfd int, cp, live Hash, rel string) error {
	if cp == live {
		return nil
	}
	if err := r.w.ctx.Err(); err != nil {
		return err
	}
	ce, err := r.w.listing(cp)
	if err != nil {
		return err
	}
	var le []Entry
	if !live.IsZero() {
		if le, err = r.w.listing(live); err != nil {
			return err
		}
	}
	plan := r.need != nil
	// What is not in the checkpoint goes, and so does a folder where
	// the checkpoint has something else, or the reverse.
	for i := range le {
		l := &le[i]
		c := find(ce, l.Name)
		if c != nil && (c.Kind == l.Kind || c.Kind != Dir && l.Kind != Dir) {
			continue
		}
		if plan {
			continue
		}
		if err := r.remove(dfd, l, join(rel, l.Name)); err != nil {
			return err
		}
	}
	for i := range ce {
		c := &ce[i]
		child := join(rel, c.Name)
		l := find(le, c.Name)
		if c.Kind == Dir {
			var lh Hash
			if l != nil && l.Kind == Dir {
				lh = l.Hash
			}
			if plan {
				if err := r.dir(-1, c.Hash, lh, child); err != nil {
					return err
				}
				continue
			}
			if err := r.subdir(dfd, c, l, lh, child); err != nil {
				return err
			}
			continue
		}
		if l != nil && same(c, l) && (!c.Links || r.keep[c.Ino].ino == l.Ino) {
			continue
		}
		if plan {
			if c.Kind == File {
				r.need[c.Hash] = true
			}
			continue
		}
		if err := r.create(dfd, c, child); err != nil {
			return err
		}
	}
	return nil
}

// subdir puts back a folder of the checkpoint, making it if need be.
func (r *restorer) subdir(dfd int, c, l *Entry, live Hash, rel string) error {
	if l != nil && l.Kind == Dir && live == c.Hash && same(c, l) {
		return nil
	}
	if l == nil || l.Kind != Dir {
		if err := unix.Mkdirat(dfd, c.Name, 0o700); err != nil {
			return r.leave(rel, err)
		}
	}
	fd, err := unix.Openat(dfd, c.Name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return r.leave(rel, err)
	}
	defer unix.Close(fd)
	if err := r.dir(fd, c.Hash, live, rel); err != nil {
		return err
	}
	return r.setMeta(fd, -1, "", c, rel)
}

// remove removes an entry (a folder with what it holds), never
// following a symlink, and leaving mounts and Skip paths alone.
func (r *restorer) remove(dfd int, l *Entry, rel string) error {
	if r.skip[rel] {
		return nil
	}
	if l.Kind != Dir {
		if err := unix.Unlinkat(dfd, l.Name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("checkpoint: restore: remove %s: %w", r.show(rel), err)
		}
		return nil
	}
	fd, err := unix.Openat(dfd, l.Name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("checkpoint: restore: remove %s: %w", r.show(rel), err)
	}
	emptied, err := r.empty(fd, rel, 0)
	unix.Close(fd)
	if err != nil {
		return err
	}
	if !emptied {
		return nil
	}
	if err := unix.Unlinkat(dfd, l.Name, unix.AT_REMOVEDIR); err != nil {
		return fmt.Errorf("checkpoint: restore: remove %s: %w", r.show(rel), err)
	}
	return nil
}

// empty removes what the folder fd holds; emptied is false when
// something had to stay (a mount, a Skip path).
func (r *restorer) empty(fd int, rel string, depth int) (emptied bool, err error) {
	if depth > maxDepth {
		return false, fmt.Errorf("%w: %s is more than %d folders deep", ErrTree, r.show(rel), maxDepth)
	}
	// The folder is going: let den (as an ordinary user) remove from it.
	unix.Fchmod(fd, 0o700)
	names, err := readNames(fd)
	if err != nil {
		return false, fmt.Errorf("checkpoint: restore: read %s: %w", r.show(rel), err)
	}
	emptied = true
	for _, name := range names {
		child := join(rel, name)
		st, mnt, err := statAt(fd, name)
		if err != nil {
			continue
		}
		if r.skip[child] || mnt != r.mnt {
			r.left = append(r.left, r.show(child)+": not removed (a mount)")
			emptied = false
			continue
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR {
			if err := unix.Unlinkat(fd, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
				return false, fmt.Errorf("checkpoint: restore: remove %s: %w", r.show(child), err)
			}
			continue
		}
		cfd, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return false, fmt.Errorf("checkpoint: restore: remove %s: %w", r.show(child), err)
		}
		sub, err := r.empty(cfd, child, depth+1)
		unix.Close(cfd)
		if err != nil {
			return false, err
		}
		if !sub {
			emptied = false
			continue
		}
		if err := unix.Unlinkat(fd, name, unix.AT_REMOVEDIR); err != nil {
			return false, fmt.Errorf("checkpoint: restore: remove %s: %w", r.show(child), err)
		}
	}
	return emptied, nil
}

// create makes entry c under a temporary name in dfd, completes it and
// renames it into place over whatever is there.
func (r *restorer) create(dfd int, c *Entry, rel string) error {
	tmp := ".den-restore-" + randomName()
	made, err := r.make(dfd, tmp, c, rel)
	if err != nil {
		if made {
			unix.Unlinkat(dfd, tmp, 0)
		}
		return err
	}
	if err := unix.Renameat(dfd, tmp, dfd, c.Name); err != nil {
		unix.Unlinkat(dfd, tmp, 0)
		return r.leave(rel, err)
	}
	if c.Links {
		if _, ok := r.links[c.Ino]; !ok {
			r.links[c.Ino] = rel
		}
	}
	return nil
}

func (r *restorer) make(dfd int, tmp string, c *Entry, rel string) (made bool, err error) {
	switch c.Kind {
	case File:
		if c.Links {
			if first, ok := r.linkSource(c.Ino); ok {
				if err := r.link(first, dfd, tmp); err != nil {
					return false, fmt.Errorf("checkpoint: restore: link %s to %s: %w", r.show(rel), r.show(first), err)
				}
				return true, nil
			}
		}
		fd, err := unix.Openat(dfd, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return false, fmt.Errorf("checkpoint: restore: %s: %w", r.show(rel), err)
		}
		defer unix.Close(fd)
		if err := r.fill(fd, c.Hash); err != nil {
			return true, fmt.Errorf("checkpoint: restore: %s: %w", r.show(rel), err)
		}
		return true, r.setMeta(fd, -1, "", c, rel)
	case Symlink:
		if err := unix.Symlinkat(c.Target, dfd, tmp); err != nil {
			return false, fmt.Errorf("checkpoint: restore: %s: %w", r.show(rel), err)
		}
	default:
		typ := map[Kind]uint32{FIFO: unix.S_IFIFO, Char: unix.S_IFCHR, Block: unix.S_IFBLK, Socket: unix.S_IFSOCK}[c.Kind]
		if err := unix.Mknodat(dfd, tmp, typ|0o600, int(c.Rdev)); err != nil {
			return false, fmt.Errorf("checkpoint: restore: %s: %w", r.show(rel), err)
		}
	}
	return true, r.setMeta(-1, dfd, tmp, c, rel)
}

// linkSource is where a hard-linked file's inode is now: a name of it
// kept as it was, or made by this restore.
func (r *restorer) linkSource(ino uint64) (string, bool) {
	if k, ok := r.keep[ino]; ok {
		return k.rel, true
	}
	rel, ok := r.links[ino]
	return rel, ok
}

// link makes tmp in dfd a second name of the file at rel beneath the
// tree, resolving rel without following any symlink.
func (r *restorer) link(rel string, dfd int, tmp string) error {
	dir, base := path.Split(rel)
	pfd := r.root
	if dir = strings.TrimSuffix(dir, "/"); dir != "" {
		fd, err := unix.Openat2(r.root, dir, &unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
		})
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		pfd = fd
	}
	return unix.Linkat(pfd, base, dfd, tmp, 0)
}

// fill copies content h from the store into the new file fd.
func (r *restorer) fill(fd int, h Hash) error {
	ofd, err := unix.Open(r.w.s.objectPath(h), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%w: file %s: %v", ErrDamaged, h, err)
	}
	defer unix.Close(ofd)
	var st unix.Stat_t
	if err := unix.Fstat(ofd, &st); err != nil {
		return err
	}
	return copyData(fd, ofd, &st, r.reflink)
}

// setMeta gives an entry its owner, permissions, extended attributes
// and modification time: by descriptor (fd), or for what cannot be
// opened (symlinks, FIFOs, devices) by name in the folder dfd, never
// following the name.
func (r *restorer) setMeta(fd, dfd int, name string, c *Entry, rel string) error {
	byFd := fd >= 0
	var err error
	// In the helper, a chown takes the ids its namespace sees.
	uid, gid, mapped := r.w.ids.inside(c.UID, c.GID)
	switch {
	case !mapped:
		r.left = append(r.left, fmt.Sprintf("%s: owner %d:%d not given (not the computer's ids)", r.show(rel), c.UID, c.GID))
	case byFd:
		err = unix.Fchown(fd, int(uid), int(gid))
	default:
		err = unix.Fchownat(dfd, name, int(uid), int(gid), unix.AT_SYMLINK_NOFOLLOW)
	}
	if err != nil {
		if !errors.Is(err, unix.EPERM) || os.Geteuid() == 0 {
			return fmt.Errorf("checkpoint: restore: owner of %s: %w", r.show(rel), err)
		}
		r.left = append(r.left, fmt.Sprintf("%s: owner %d:%d not given (den is not root)", r.show(rel), c.UID, c.GID))
	}
	// chown cleared setuid and setgid: the mode comes after it.
	if byFd {
		err = unix.Fchmod(fd, c.Mode)
	} else if c.Kind != Symlink {
		// dfd is a folder only den writes in now, and name the FIFO or
		// device it just made there.
		err = unix.Fchmodat(dfd, name, c.Mode, 0)
	}
	if err != nil {
		return fmt.Errorf("checkpoint: restore: mode of %s: %w", r.show(rel), err)
	}
	x := fdXattrs(fd)
	if !byFd {
		x = nameXattrs(dfd, name)
	}
	want, unmapped := r.w.ids.xattrsInside(c.Xattrs)
	for _, n := range unmapped {
		r.left = append(r.left, fmt.Sprintf("%s: extended attribute %s not given (its ids are not the computer's)", r.show(rel), n))
	}
	if err := syncXattrs(x, want); err != nil {
		return fmt.Errorf("checkpoint: restore: %s: %w", r.show(rel), err)
	}
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(c.Mtime)}
	if byFd {
		// The descriptor's magic link, followed to the file itself.
		err = unix.UtimesNanoAt(unix.AT_FDCWD, fmt.Sprintf("/proc/self/fd/%d", fd), ts, 0)
	} else {
		err = unix.UtimesNanoAt(dfd, name, ts, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err != nil {
		return fmt.Errorf("checkpoint: restore: time of %s: %w", r.show(rel), err)
	}
	return nil
}

// xattrOps reach one entry's extended attributes.
type xattrOps struct {
	list   func([]byte) (int, error)
	get    func(string, []byte) (int, error)
	set    func(string, []byte) error
	remove func(string) error
}

// fdXattrs reach an open file's.
func fdXattrs(fd int) xattrOps {
	return xattrOps{
		list:   func(b []byte) (int, error) { return unix.Flistxattr(fd, b) },
		get:    func(n string, b []byte) (int, error) { return unix.Fgetxattr(fd, n, b) },
		set:    func(n string, v []byte) error { return unix.Fsetxattr(fd, n, v, 0) },
		remove: func(n string) error { return unix.Fremovexattr(fd, n) },
	}
}

// nameXattrs reach those of a name in an open folder, not following
// it.
func nameXattrs(dfd int, name string) xattrOps {
	p := procPath(dfd, name)
	return xattrOps{
		list:   func(b []byte) (int, error) { return unix.Llistxattr(p, b) },
		get:    func(n string, b []byte) (int, error) { return unix.Lgetxattr(p, n, b) },
		set:    func(n string, v []byte) error { return unix.Lsetxattr(p, n, v, 0) },
		remove: func(n string) error { return unix.Lremovexattr(p, n) },
	}
}

// syncXattrs makes an entry's extended attributes exactly want.
func syncXattrs(x xattrOps, want []Xattr) error {
	have, err := readXattrs(x.list, x.get)
	if err != nil {
		return err
	}
	if sameXattrs(have, want) {
		return nil
	}
	for _, h := range have {
		if !slices.ContainsFunc(want, func(y Xattr) bool { return y.Name == h.Name }) {
			if err := x.remove(h.Name); err != nil && !errors.Is(err, unix.ENODATA) {
				return fmt.Errorf("extended attribute %s: %w", h.Name, err)
			}
		}
	}
	for _, w := range want {
		if err := x.set(w.Name, w.Value); err != nil {
			return fmt.Errorf("extended attribute %s: %w", w.Name, err)
		}
	}
	return nil
}

// leave notes an entry the restore could not put back (a mount in the
// way) and goes on.
func (r *restorer) leave(rel string, err error) error {
	if errors.Is(err, unix.EBUSY) || errors.Is(err, unix.EXDEV) || errors.Is(err, unix.EEXIST) || errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EISDIR) {
		r.left = append(r.left, fmt.Sprintf("%s: not restored (%v)", r.show(rel), err))
		return nil
	}
	return fmt.Errorf("checkpoint: restore: %s: %w", r.show(rel), err)
}

func (r *restorer) show(rel string) string { return path.Join(r.guest, "/"+rel) }
