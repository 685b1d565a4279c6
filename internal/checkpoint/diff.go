package checkpoint

import (
	"context"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
)

// Change is one difference between two states of a tree.
type Change struct {
	Path string `json:"path"` // as the computer sees it
	Op   string `json:"op"`   // added, removed, changed
	Kind string `json:"kind"` // file, folder, symlink, fifo, …
	// What changed, for changed: content, type, target, device, mode,
	// owner, xattrs, time (a folder's time, which moves with its
	// entries, is not reported).
	What []string `json:"what,omitempty"`
	Size int64    `json:"size,omitempty"` // a file's (before, for removed)
	// Entries is how many entries an added or removed folder holds
	// (they are not listed one by one).
	Entries int `json:"entries,omitempty"`
}

// Diff is what changed between two states of the computer.
type Diff struct {
	Changes  []Change        `json:"changes"`
	Packages []PackageChange `json:"packages,omitempty"`
	Added    int             `json:"added"`
	Removed  int             `json:"removed"`
	Changed  int             `json:"changed"`
}

// Diff compares checkpoint from with checkpoint to: the trees they
// both have.
func (s *Store) Diff(ctx context.Context, from, to int) (Diff, error) {
	a, err := s.Get(from)
	if err != nil {
		return Diff{}, err
	}
	b, err := s.Get(to)
	if err != nil {
		return Diff{}, err
	}
	w := newWalker(ctx, s, false)
	var d Diff
	for _, ra := range a.Roots {
		rb, ok := b.Root(ra.Name)
		if !ok {
			continue
		}
		if err := diffRoots(ctx, w, ra, rb, &d, nil); err != nil {
			return d, err
		}
	}
	return d, nil
}

// DiffLive compares checkpoint from with the trees as they are now
// (those of its trees that are given). Files are read only where their
// stat differs from the checkpoint's.
func (s *Store) DiffLive(ctx context.Context, from int, trees []Tree) (Diff, error) {
	a, err := s.Get(from)
	if err != nil {
		return Diff{}, err
	}
	w := newWalker(ctx, s, false)
	defer w.close()
	var d Diff
	for _, t := range trees {
		ra, ok := a.Root(t.Name)
		if !ok {
			continue
		}
		rb, err := w.root(t, &ra)
		if err != nil {
			return d, err
		}
		if err := diffRoots(ctx, w, ra, rb, &d, &t); err != nil {
			return d, err
		}
	}
	return d, nil
}

// diffRoots adds to d how tree b differs from tree a; live is b's
// folder when b was read from it.
func diffRoots(ctx context.Context, w *walker, a, b Root, d *Diff, live *Tree) error {
	df := &differ{ctx: ctx, w: w, d: d, guest: a.Guest}
	if what := differs(&a.Entry, &b.Entry); len(what) > 0 {
		df.add(Change{Path: a.Guest, Op: "changed", Kind: Dir.String(), What: what})
	}
	if err := df.dir(a.Entry.Hash, b.Entry.Hash, ""); err != nil {
		return err
	}
	if a.Guest == "/" {
		pk, err := packageChanges(ctx, w, a.Entry.Hash, b.Entry.Hash, live)
		if err != nil {
			return err
		}
		d.Packages = append(d.Packages, pk...)
	}
	return nil
}

type differ struct {
	ctx   context.Context
	w     *walker
	d     *Diff
	guest string
}

func (f *differ) add(c Change) {
	switch c.Op {
	case "added":
		f.d.Added++
	case "removed":
		f.d.Removed++
	default:
		f.d.Changed++
	}
	f.d.Changes = append(f.d.Changes, c)
}

func (f *differ) path(rel string) string { return path.Join(f.guest, rel) }

func (f *differ) dir(a, b Hash, rel string) error {
	if a == b {
		return nil
	}
	if err := f.ctx.Err(); err != nil {
		return err
	}
	ea, err := f.w.listing(a)
	if err != nil {
		return err
	}
	eb, err := f.w.listing(b)
	if err != nil {
		return err
	}
	i, j := 0, 0
	for i < len(ea) || j < len(eb) {
		switch {
		case j >= len(eb) || (i < len(ea) && ea[i].Name < eb[j].Name):
			if err := f.whole("removed", &ea[i], join(rel, ea[i].Name)); err != nil {
				return err
			}
			i++
		case i >= len(ea) || eb[j].Name < ea[i].Name:
			if err := f.whole("added", &eb[j], join(rel, eb[j].Name)); err != nil {
				return err
			}
			j++
		default:
			x, y := &ea[i], &eb[j]
			child := join(rel, x.Name)
			i++
			j++
			if x.Kind != y.Kind {
				f.add(Change{Path: f.path(child), Op: "changed", Kind: y.Kind.String(), What: []string{"type"}, Size: y.Size})
				continue
			}
			if what := differs(x, y); len(what) > 0 {
				f.add(Change{Path: f.path(child), Op: "changed", Kind: y.Kind.String(), What: what, Size: y.Size})
			}
			if x.Kind == Dir {
				if err := f.dir(x.Hash, y.Hash, child); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// whole reports an entry added or removed, a folder with a count of
// what it holds.
func (f *differ) whole(op string, e *Entry, rel string) error {
	c := Change{Path: f.path(rel), Op: op, Kind: e.Kind.String(), Size: e.Size}
	if e.Kind == Dir {
		n, err := f.count(e.Hash)
		if err != nil {
			return err
		}
		c.Entries = n
	}
	f.add(c)
	return nil
}

func (f *differ) count(h Hash) (int, error) {
	es, err := f.w.listing(h)
	if err != nil {
		return 0, err
	}
	n := len(es)
	for i := range es {
		if es[i].Kind == Dir {
			m, err := f.count(es[i].Hash)
			if err != nil {
				return 0, err
			}
			n += m
		}
	}
	return n, nil
}

// differs says how y differs from x, two entries of the same kind, by
// what a person sees (not by inode or change time).
func differs(x, y *Entry) []string {
	var what []string
	switch {
	case x.Kind == File && (x.Hash != y.Hash || x.Size != y.Size):
		what = append(what, "content")
	case x.Kind == Symlink && x.Target != y.Target:
		what = append(what, "target")
	case (x.Kind == Char || x.Kind == Block) && x.Rdev != y.Rdev:
		what = append(what, "device")
	}
	if x.Mode != y.Mode {
		what = append(what, "mode")
	}
	if x.UID != y.UID || x.GID != y.GID {
		what = append(what, "owner")
	}
	if !sameXattrs(x.Xattrs, y.Xattrs) {
		what = append(what, "xattrs")
	}
	if x.Kind != Dir && x.Mtime != y.Mtime && len(what) == 0 {
		what = append(what, "time")
	}
	return what
}

// lookup finds the entry at rel beneath the listing root.
func (w *walker) lookup(root Hash, rel string) (*Entry, error) {
	h := root
	parts := strings.Split(rel, "/")
	for i, name := range parts {
		es, err := w.listing(h)
		if err != nil {
			return nil, err
		}
		k, ok := slices.BinarySearchFunc(es, name, func(e Entry, n string) int { return strings.Compare(e.Name, n) })
		if !ok {
			return nil, nil
		}
		if i == len(parts)-1 {
			return &es[k], nil
		}
		if es[k].Kind != Dir {
			return nil, nil
		}
		h = es[k].Hash
	}
	return nil, nil
}

// content reads a file's content from the store, at most max bytes.
func (s *Store) content(h Hash, max int64) ([]byte, error) {
	f, err := os.Open(s.objectPath(h))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > max {
		return nil, fmt.Errorf("%s: over %s", h, Bytes(max))
	}
	b := make([]byte, fi.Size())
	if _, err := f.ReadAt(b, 0); err != nil && fi.Size() > 0 {
		return nil, err
	}
	return b, nil
}
