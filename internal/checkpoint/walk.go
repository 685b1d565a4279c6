package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// maxDepth bounds how deep a tree may be: every level holds a
// descriptor while its folders are read.
const maxDepth = 1024

// walker reads a live tree into entries and listings, beside the
// listings of a previous checkpoint (entries whose stat is unchanged
// take their hash from there, unread). With store, it writes new file
// contents and listings to the store; without, it only hashes them and
// keeps the listings in memory (a diff or restore against the computer
// as it is now).
//
// Folders are read by up to workers goroutines at once (reading a
// tree's metadata is system calls, which cores run side by side); the
// fields below mu are shared by them.
type walker struct {
	s     *Store
	ctx   context.Context
	store bool
	limit int64 // bytes a take may add; 0: no limit
	racy  int64 // ctimes from this on may change again unseen

	mnt    mount           // the tree's mount: mounts beneath are not crossed
	skip   map[string]bool // relative paths not recorded
	tree   Tree            // the tree being read
	treeID fileID          // its folder
	ids    *nsIDs          // in the helper: the ids it sees are not the host's

	// The helper that reads what den cannot (Store.helper), started at
	// the first such entry.
	helpMu  sync.Mutex
	help    *helperConn
	helpErr error

	slots chan struct{} // goroutines reading folders, beside the caller's
	bufs  chan []byte   // block buffers
	noRef atomic.Bool   // the file system cannot clone (reflink)

	mu      sync.Mutex
	mem     map[Hash][]byte  // listings made without store
	seen    map[Hash]listing // listings of this walk's trees, for the next take
	dirs    map[string]bool  // object folders known to exist
	created []string         // objects this walk added to the store
	added   int64            // bytes they take
	entries int
	read    int
	folders int // folders walked
	misses  int // of which the listing was read from its object
}

// workers is how many goroutines read a tree beside the caller.
const workers = 4

func newWalker(ctx context.Context, s *Store, store bool) *walker {
	w := &walker{s: s, ctx: ctx, store: store, mem: map[Hash][]byte{}, seen: map[Hash]listing{},
		dirs: map[string]bool{}, racy: time.Now().Add(-racyWindow).UnixNano(),
		slots: make(chan struct{}, workers), bufs: make(chan []byte, workers+1), ids: s.ns}
	return w
}

// close ends the walker's helper, if it started one.
func (w *walker) close() {
	w.helpMu.Lock()
	defer w.helpMu.Unlock()
	if w.help != nil {
		w.help.close()
		w.help = nil
	}
}

func (w *walker) buffer() []byte {
	select {
	case b := <-w.bufs:
		return b
	default:
		return make([]byte, blockSize)
	}
}

func (w *walker) release(b []byte) {
	select {
	case w.bufs <- b:
	default:
	}
}

// racyWindow covers the coarseness of the kernel's file times: a file
// changed within it before a walk started may change again with the
// same change time (the same clock tick), so its entry is recorded
// with Ctime 0 and read again next time (git's "racy" entries).
const racyWindow = 50 * time.Millisecond

func (w *walker) unracy(e *Entry) {
	if e.Ctime >= w.racy {
		e.Ctime = 0
	}
}

// listing reads a listing: one this walk made, one the store read
// lately, or from the store's objects.
func (w *walker) listing(h Hash) ([]Entry, error) {
	l, _, err := w.listingOf(h)
	return l.entries, err
}

// listingOf is listing, saying whether it was read from the store's
// objects (no cache had it).
func (w *walker) listingOf(h Hash) (l listing, stored bool, err error) {
	w.mu.Lock()
	b, ok := w.mem[h]
	l, seen := w.seen[h]
	w.mu.Unlock()
	switch {
	case seen:
		return l, false, nil
	case ok:
		es, err := decodeTree(b)
		return listing{es, b}, false, err
	}
	if l, ok := w.s.cached(h); ok {
		return l, false, nil
	}
	l, err = w.s.readListing(h)
	return l, true, err
}

// root reads one tree; prev is the same tree in an earlier checkpoint
// (nil for none).
func (w *walker) root(t Tree, prev *Root) (Root, error) {
	fd, err := unix.Open(t.Path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return Root{}, fmt.Errorf("checkpoint: %s: %w", t.Path, err)
	}
	defer unix.Close(fd)
	st, mnt, err := statAt(fd, "")
	if err != nil {
		return Root{}, fmt.Errorf("checkpoint: %s: %w", t.Path, err)
	}
	w.mnt = mnt
	w.skip = skipSet(t.Skip)
	w.tree, w.treeID = t, fileID{Dev: st.Dev, Ino: st.Ino}
	e := entryOf("", &st)
	w.ids.toHost(&e)
	w.unracy(&e)
	var prevHash Hash
	var prevEntry *Entry
	if prev != nil && prev.Entry.Kind == Dir {
		prevHash, prevEntry = prev.Entry.Hash, &prev.Entry
	}
	if prevEntry != nil && e.sameStat(prevEntry) {
		e.Xattrs = prevEntry.Xattrs
	} else if e.Xattrs, err = w.xattrsFd(fd); err != nil {
		return Root{}, fmt.Errorf("checkpoint: %s: %w", t.Path, err)
	}
	e.Hash, err = w.dir(fd, prevHash, "", 0)
	if err != nil {
		return Root{}, err
	}
	return Root{Name: t.Name, Guest: t.Guest, Entry: e}, nil
}

func skipSet(paths []string) map[string]bool {
	m := map[string]bool{}
	for _, p := range paths {
		p = strings.Trim(path.Clean("/"+p), "/")
		if p != "" {
			m[p] = true
		}
	}
	return m
}

// dir reads the folder open as dfd (rel beneath the root) and returns
// its listing's hash. Its subfolders are read by other goroutines when
// some are free, else by this one.
func (w *walker) dir(dfd int, prev Hash, rel string, depth int) (Hash, error) {
	if depth > maxDepth {
		return Hash{}, fmt.Errorf("%w: %s is more than %d folders deep", ErrTree, rel, maxDepth)
	}
	if err := w.ctx.Err(); err != nil {
		return Hash{}, err
	}
	var old []Entry
	var oldL listing
	stored := false
	if !prev.IsZero() {
		// A damaged listing only costs reading the folder's files again.
		oldL, stored, _ = w.listingOf(prev)
		old = oldL.entries
	}
	w.mu.Lock()
	w.folders++
	if stored || prev.IsZero() {
		w.misses++
	}
	w.mu.Unlock()
	names, err := readNames(dfd)
	if err != nil {
		return Hash{}, fmt.Errorf("checkpoint: read folder %s: %w", show(rel), err)
	}
	slices.Sort(names)
	entries := make([]Entry, len(names))
	keep := make([]bool, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	j := 0
	for i, name := range names {
		child := join(rel, name)
		if w.skip[child] {
			continue
		}
		for j < len(old) && old[j].Name < name {
			j++
		}
		var p *Entry
		if j < len(old) && old[j].Name == name {
			p = &old[j]
		}
		sub, err := w.entry(dfd, name, child, p, &entries[i], &keep[i])
		var denied *deniedError
		if errors.As(err, &denied) && w.s.helper != nil {
			sub, err = -1, w.delegate(dfd, rel, name, p, &entries[i], &keep[i], depth, denied)
		}
		if err != nil {
			wg.Wait()
			return Hash{}, err
		}
		if sub < 0 {
			continue
		}
		var prevSub Hash
		if p != nil && p.Kind == Dir {
			prevSub = p.Hash
		}
		read := func() {
			defer unix.Close(sub)
			entries[i].Hash, errs[i] = w.dir(sub, prevSub, child, depth+1)
		}
		select {
		case w.slots <- struct{}{}:
			wg.Go(func() {
				defer func() { <-w.slots }()
				read()
			})
		default:
			read()
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Hash{}, err
	}
	kept := entries[:0]
	for i := range entries {
		if keep[i] {
			kept = append(kept, entries[i])
		}
	}
	entries = kept
	w.mu.Lock()
	w.entries += len(entries)
	w.mu.Unlock()
	if !prev.IsZero() && sameListing(entries, old) {
		// prev is reachable from the last checkpoint's root, so the
		// store has it, cached or not.
		w.saw(prev, oldL)
		return prev, nil
	}
	enc := encodeTree(entries)
	h := treeHash(enc)
	w.saw(h, listing{entries, enc})
	if !w.store {
		w.mu.Lock()
		w.mem[h] = enc
		w.mu.Unlock()
		return h, nil
	}
	if err := w.putBytes(h, enc); err != nil {
		return Hash{}, err
	}
	return h, nil
}

// saw notes a listing of the tree as it is, for the next take.
func (w *walker) saw(h Hash, l listing) {
	if !w.store {
		return
	}
	w.mu.Lock()
	w.seen[h] = l
	w.mu.Unlock()
}

// sameListing reports whether a listing read now is the one recorded,
// by the stat of each entry and the listings of the folders.
func sameListing(now, old []Entry) bool {
	if len(now) != len(old) {
		return false
	}
	for i := range now {
		if now[i].Name != old[i].Name || now[i].Hash != old[i].Hash || !now[i].sameStat(&old[i]) {
			return false
		}
	}
	return true
}

// entry reads one name of the folder dfd into e; ok is false when it
// is not recorded (gone meanwhile, or a mount). For a folder, it
// returns the folder open (its listing is the caller's to read), else
// -1.
func (w *walker) entry(dfd int, name, rel string, p, e *Entry, ok *bool) (sub int, err error) {
	st, mnt, err := statAt(dfd, name)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return -1, nil
		}
		if isDenied(err) {
			return -1, &deniedError{rel, err}
		}
		return -1, fmt.Errorf("checkpoint: %s: %w", show(rel), err)
	}
	if mnt != w.mnt {
		return -1, nil
	}
	*e = entryOf(name, &st)
	w.ids.toHost(e)
	w.unracy(e)
	same := p != nil && e.sameStat(p)
	if same {
		e.Xattrs, e.Target = p.Xattrs, p.Target
	}
	switch e.Kind {
	case Dir:
		fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			if isDenied(err) {
				return -1, &deniedError{rel, err}
			}
			return -1, changed(rel, err)
		}
		if err := sameInode(fd, &st); err != nil {
			unix.Close(fd)
			return -1, changed(rel, err)
		}
		if !same {
			if e.Xattrs, err = w.xattrsFd(fd); err != nil {
				unix.Close(fd)
				return -1, xattrError(rel, err)
			}
		}
		*ok = true
		return fd, nil
	case File:
		if same {
			e.Hash = p.Hash
			break
		}
		if err := w.file(dfd, name, rel, e, &st); err != nil {
			return -1, err
		}
	case Symlink:
		if same {
			break
		}
		if e.Target, err = readlinkat(dfd, name); err != nil {
			if isDenied(err) {
				return -1, &deniedError{rel, err}
			}
			return -1, changed(rel, err)
		}
		if e.Xattrs, err = w.xattrsAt(dfd, name); err != nil {
			return -1, xattrError(rel, err)
		}
	default:
		if !same {
			if e.Xattrs, err = w.xattrsAt(dfd, name); err != nil {
				return -1, xattrError(rel, err)
			}
		}
	}
	*ok = true
	return -1, nil
}

func changed(rel string, err error) error {
	return fmt.Errorf("%w: %s changed while it was read (%v); try again", ErrTree, show(rel), err)
}

// deniedError says den's own rights do not reach an entry: a file or
// folder the computer gave to another of its users and made unreadable
// to others, or one in a folder den cannot search. A store's Helper
// reads it instead.
type deniedError struct {
	rel string
	err error
}

func (e *deniedError) Error() string {
	return fmt.Sprintf("%v: den cannot read %s: %v", ErrTree, show(e.rel), e.err)
}

func (e *deniedError) Unwrap() []error { return []error{ErrTree, e.err} }

func isDenied(err error) bool { return errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM) }

func xattrError(rel string, err error) error {
	if isDenied(err) {
		return &deniedError{rel, err}
	}
	return fmt.Errorf("checkpoint: %s: %w", show(rel), err)
}

// delegate has the store's helper read entry name of the folder dfd
// (parent beneath the tree) into e, with all it holds: den could not
// (denied).
func (w *walker) delegate(dfd int, parent, name string, p, e *Entry, ok *bool, depth int, denied *deniedError) error {
	var st unix.Stat_t
	if err := unix.Fstat(dfd, &st); err != nil {
		return fmt.Errorf("checkpoint: %s: %w", show(parent), err)
	}
	c, err := w.helper()
	if err != nil {
		return fmt.Errorf("%w, nor its helper: %v", denied, err)
	}
	w.mu.Lock()
	added := w.added
	w.mu.Unlock()
	a, err := c.ask(request{Entry: &entryRequest{
		Store: w.s.dir, Write: w.store, Tree: w.tree.Path, TreeID: w.treeID, Skip: w.tree.Skip,
		Parent: parent, ParentID: fileID{Dev: st.Dev, Ino: st.Ino}, Name: name, Prev: p, Depth: depth,
		Limit: w.limit, Added: added, Racy: w.racy, Mount: fileID{Dev: w.mnt.dev, Ino: w.mnt.id},
	}})
	if err != nil {
		if w.ctx.Err() != nil {
			return w.ctx.Err()
		}
		return err
	}
	r := a.Entry
	if r == nil {
		return errors.New("checkpoint: helper: an empty answer")
	}
	*e, *ok = r.Entry, r.OK
	w.mu.Lock()
	defer w.mu.Unlock()
	w.entries += r.Entries
	w.read += r.Read
	w.folders += r.Folders
	w.misses += r.Misses
	w.added += r.Added
	w.created = append(w.created, r.Created...)
	for h, b := range r.Listings {
		if treeHash(b) != h {
			return fmt.Errorf("checkpoint: helper: a listing is not what its name says")
		}
		if w.store {
			if es, err := decodeTree(b); err == nil {
				w.seen[h] = listing{es, b}
			}
		} else {
			w.mem[h] = b
		}
	}
	if w.limit > 0 && w.added > w.limit {
		return fmt.Errorf("%w: more than %s changed", ErrTooLarge, Bytes(w.limit))
	}
	return nil
}

// helper is the walker's helper, started at the first call.
func (w *walker) helper() (*helperConn, error) {
	w.helpMu.Lock()
	defer w.helpMu.Unlock()
	if w.help == nil && w.helpErr == nil {
		w.help, w.helpErr = w.s.helper.start(w.ctx)
	}
	return w.help, w.helpErr
}

// file reads a regular file that changed: its hash, and with store its
// content into the store. It is opened without following a symlink,
// without blocking (a FIFO swapped in, a lease) and checked to be the
// inode that was listed.
func (w *walker) file(dfd int, name, rel string, e *Entry, st *unix.Stat_t) error {
	fd, err := unix.Openat(dfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		if isDenied(err) {
			return &deniedError{rel, err}
		}
		return changed(rel, err)
	}
	defer unix.Close(fd)
	if err := sameInode(fd, st); err != nil {
		return changed(rel, err)
	}
	w.mu.Lock()
	w.read++
	w.mu.Unlock()
	if e.Xattrs, err = w.xattrsFd(fd); err != nil {
		return xattrError(rel, err)
	}
	if !w.store {
		buf := w.buffer()
		defer w.release(buf)
		if e.Hash, err = hashCopy(fd, -1, st, buf); err != nil {
			return fmt.Errorf("checkpoint: %s: %w", show(rel), err)
		}
	} else if e.Hash, err = w.putFile(fd, rel, st); err != nil {
		return err
	}
	// Written while it was read: what was read is recorded, and the
	// next checkpoint reads it again.
	var after unix.Stat_t
	if unix.Fstat(fd, &after) != nil || after.Ctim != st.Ctim || after.Size != st.Size {
		e.Ctime = 0
	}
	return nil
}

// putFile copies an open file's content into the store and returns
// its hash.
func (w *walker) putFile(fd int, rel string, st *unix.Stat_t) (Hash, error) {
	w.mu.Lock()
	over := w.limit > 0 && w.added+st.Blocks*512 > w.limit
	w.mu.Unlock()
	if over {
		return Hash{}, fmt.Errorf("%w: %s alone takes %s", ErrTooLarge, show(rel), Bytes(st.Blocks*512))
	}
	buf := w.buffer()
	defer w.release(buf)
	tmp := filepath.Join(w.s.dir, "objects", "tmp", randomName())
	tfd, err := unix.Open(tmp, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return Hash{}, fmt.Errorf("checkpoint: object: %w", err)
	}
	defer unix.Close(tfd)
	placed := false
	defer func() {
		if !placed {
			os.Remove(tmp)
		}
	}()
	var h Hash
	cloned := false
	if !w.noRef.Load() {
		if err := unix.IoctlFileClone(tfd, fd); err == nil {
			cloned = true
		} else {
			w.noRef.Store(true)
		}
	}
	if cloned {
		// Hash the clone: it cannot change under den.
		var cst unix.Stat_t
		if err := unix.Fstat(tfd, &cst); err != nil {
			return Hash{}, fmt.Errorf("checkpoint: object: %w", err)
		}
		h, err = hashCopy(tfd, -1, &cst, buf)
	} else {
		h, err = hashCopy(fd, tfd, st, buf)
	}
	if err != nil {
		return Hash{}, fmt.Errorf("checkpoint: %s: %w", show(rel), err)
	}
	dst := w.s.objectPath(h)
	if _, err := os.Lstat(dst); err == nil {
		return h, nil // the store has it already
	}
	if err := w.objectDir(dst); err != nil {
		return Hash{}, err
	}
	var ost unix.Stat_t
	unix.Fstat(tfd, &ost)
	if err := os.Rename(tmp, dst); err != nil {
		return Hash{}, fmt.Errorf("checkpoint: object: %w", err)
	}
	placed = true
	w.mu.Lock()
	w.created = append(w.created, dst)
	w.added += ost.Blocks * 512
	over = w.limit > 0 && w.added > w.limit
	w.mu.Unlock()
	if over {
		return Hash{}, fmt.Errorf("%w: more than %s changed", ErrTooLarge, Bytes(w.limit))
	}
	return h, nil
}

// putBytes stores a listing.
func (w *walker) putBytes(h Hash, b []byte) error {
	dst := w.s.objectPath(h)
	if _, err := os.Lstat(dst); err == nil {
		return nil
	}
	if err := w.objectDir(dst); err != nil {
		return err
	}
	tmp := filepath.Join(w.s.dir, "objects", "tmp", randomName())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("checkpoint: object: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("checkpoint: object: %w", err)
	}
	w.mu.Lock()
	w.created = append(w.created, dst)
	w.added += (int64(len(b)) + 4095) &^ 4095
	w.mu.Unlock()
	return nil
}

func (w *walker) objectDir(obj string) error {
	d := filepath.Dir(obj)
	w.mu.Lock()
	known := w.dirs[d]
	w.mu.Unlock()
	if known {
		return nil
	}
	if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("checkpoint: object: %w", err)
	}
	w.mu.Lock()
	w.dirs[d] = true
	w.mu.Unlock()
	return nil
}

// discard removes what a failed take added.
func (w *walker) discard() {
	for _, p := range w.created {
		os.Remove(p)
	}
	w.created, w.added = nil, 0
}

// mount identifies the mount an entry is on: its file system, and the
// mount's id where the kernel tells it (5.8 and later), so that a bind
// mount of the same file system is told apart too.
type mount struct {
	dev, id uint64
}

// statAt stats a name of the folder dfd without following it ("" for
// dfd itself), with its mount.
func statAt(dfd int, name string) (unix.Stat_t, mount, error) {
	flags := unix.AT_SYMLINK_NOFOLLOW | unix.AT_STATX_SYNC_AS_STAT
	if name == "" {
		flags |= unix.AT_EMPTY_PATH
	}
	var x unix.Statx_t
	for {
		err := unix.Statx(dfd, name, flags, unix.STATX_BASIC_STATS|unix.STATX_MNT_ID, &x)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return unix.Stat_t{}, mount{}, err
		}
		break
	}
	st := unix.Stat_t{
		Dev:    unix.Mkdev(x.Dev_major, x.Dev_minor),
		Ino:    x.Ino,
		Nlink:  uint64(x.Nlink),
		Mode:   uint32(x.Mode),
		Uid:    x.Uid,
		Gid:    x.Gid,
		Rdev:   unix.Mkdev(x.Rdev_major, x.Rdev_minor),
		Size:   int64(x.Size),
		Blocks: int64(x.Blocks),
		Mtim:   unix.Timespec{Sec: x.Mtime.Sec, Nsec: int64(x.Mtime.Nsec)},
		Ctim:   unix.Timespec{Sec: x.Ctime.Sec, Nsec: int64(x.Ctime.Nsec)},
	}
	m := mount{dev: st.Dev}
	if x.Mask&unix.STATX_MNT_ID != 0 {
		m.id = x.Mnt_id
	}
	return st, m, nil
}

// entryOf is the entry a stat describes (Hash, Target and Xattrs are
// the caller's).
func entryOf(name string, st *unix.Stat_t) Entry {
	e := Entry{
		Name:  name,
		Mode:  st.Mode & 0o7777,
		UID:   st.Uid,
		GID:   st.Gid,
		Mtime: st.Mtim.Nano(),
		Ino:   st.Ino,
		Ctime: st.Ctim.Nano(),
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		e.Kind = Dir
	case unix.S_IFREG:
		e.Kind, e.Size = File, st.Size
	case unix.S_IFLNK:
		e.Kind, e.Size = Symlink, st.Size
	case unix.S_IFIFO:
		e.Kind = FIFO
	case unix.S_IFCHR:
		e.Kind, e.Rdev = Char, st.Rdev
	case unix.S_IFBLK:
		e.Kind, e.Rdev = Block, st.Rdev
	default:
		e.Kind = Socket
	}
	e.Links = e.Kind != Dir && st.Nlink > 1
	return e
}

func sameInode(fd int, st *unix.Stat_t) error {
	var now unix.Stat_t
	if err := unix.Fstat(fd, &now); err != nil {
		return err
	}
	if now.Ino != st.Ino || now.Dev != st.Dev || now.Mode&unix.S_IFMT != st.Mode&unix.S_IFMT {
		return errors.New("replaced")
	}
	return nil
}

// readNames lists a folder's names.
func readNames(fd int) ([]string, error) {
	buf := make([]byte, 32<<10)
	var names []string
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return names, nil
		}
		_, _, names = unix.ParseDirent(buf[:n], -1, names)
	}
}

func readlinkat(dfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		b := make([]byte, size)
		n, err := unix.Readlinkat(dfd, name, b)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(b[:n]), nil
		}
	}
}

// xattrsFd reads an open file's extended attributes, their ids the
// host's.
func (w *walker) xattrsFd(fd int) ([]Xattr, error) {
	xs, err := xattrsFd(fd)
	return w.ids.xattrsToHost(xs), err
}

// xattrsAt is xattrsFd for a name in dfd (see the function).
func (w *walker) xattrsAt(dfd int, name string) ([]Xattr, error) {
	xs, err := xattrsAt(dfd, name)
	return w.ids.xattrsToHost(xs), err
}

// xattrsFd reads an open file's extended attributes.
func xattrsFd(fd int) ([]Xattr, error) {
	return readXattrs(
		func(b []byte) (int, error) { return unix.Flistxattr(fd, b) },
		func(name string, b []byte) (int, error) { return unix.Fgetxattr(fd, name, b) })
}

// xattrsAt reads the extended attributes of a name in dfd without
// following a symlink (and without opening a FIFO or device).
func xattrsAt(dfd int, name string) ([]Xattr, error) {
	p := procPath(dfd, name)
	return readXattrs(
		func(b []byte) (int, error) { return unix.Llistxattr(p, b) },
		func(n string, b []byte) (int, error) { return unix.Lgetxattr(p, n, b) })
}

// procPath names an entry of an open folder by the folder's descriptor:
// the folder's magic link is den's own descriptor; the last component
// is not followed by the l* calls.
func procPath(dfd int, name string) string {
	return fmt.Sprintf("/proc/self/fd/%d/%s", dfd, name)
}

func readXattrs(list func([]byte) (int, error), get func(string, []byte) (int, error)) ([]Xattr, error) {
	var names []byte
	for size := 1024; ; size *= 4 {
		b := make([]byte, size)
		n, err := list(b)
		if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EOPNOTSUPP) {
			return nil, nil
		}
		if errors.Is(err, unix.ERANGE) && size < 1<<20 {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("extended attributes: %w", err)
		}
		names = b[:n]
		break
	}
	var out []Xattr
	for _, name := range strings.Split(string(names), "\x00") {
		if name == "" {
			continue
		}
		for size := 256; ; size *= 4 {
			b := make([]byte, size)
			n, err := get(name, b)
			if errors.Is(err, unix.ERANGE) && size < 1<<20 {
				continue
			}
			if errors.Is(err, unix.ENODATA) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("extended attribute %s: %w", name, err)
			}
			out = append(out, Xattr{Name: name, Value: b[:n]})
			break
		}
	}
	slices.SortFunc(out, func(a, b Xattr) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func join(rel, name string) string {
	if rel == "" {
		return name
	}
	return rel + "/" + name
}

func show(rel string) string { return "/" + rel }
