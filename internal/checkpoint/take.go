package checkpoint

import (
	"context"
	"fmt"
	"time"
)

// TakeOptions describe a checkpoint to take.
type TakeOptions struct {
	Session, Turn, Reason string
	Meta                  map[string]string
	// Limit bounds the bytes this checkpoint may add to the store; a
	// take that would add more fails with ErrTooLarge and adds nothing.
	// 0: no bound.
	Limit int64
}

// Take records the trees as they are now. Each is compared with the
// same tree in the newest checkpoint that has it: only files whose
// inode, change time, size or modification time differ are read, and
// only contents and listings the store lacks are added. Files are
// cloned where the file system shares blocks (reflink), else copied,
// holes kept.
//
// A tree that changes while it is read is recorded as it was read
// (a file written meanwhile is read again by the next checkpoint); an
// entry replaced by another kind meanwhile fails the take (ErrTree).
func (s *Store) Take(ctx context.Context, trees []Tree, o TakeOptions) (Checkpoint, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return Checkpoint{}, err
	}
	defer unlock()
	return s.take(ctx, trees, o)
}

// take is Take with the lock held.
func (s *Store) take(ctx context.Context, trees []Tree, o TakeOptions) (Checkpoint, error) {
	start := time.Now()
	list, err := s.List()
	if err != nil {
		return Checkpoint{}, err
	}
	c := Checkpoint{ID: 1, Created: start.UTC(), Session: o.Session, Turn: o.Turn, Reason: o.Reason, Meta: o.Meta}
	if len(list) > 0 {
		c.ID = list[len(list)-1].ID + 1
	}
	w := newWalker(ctx, s, true)
	defer w.close()
	w.limit = o.Limit
	for _, t := range trees {
		if err := checkTree(t); err != nil {
			return Checkpoint{}, err
		}
		var prev *Root
		for i := len(list) - 1; i >= 0 && prev == nil; i-- {
			if r, ok := list[i].Root(t.Name); ok {
				prev = &r
			}
		}
		r, err := w.root(t, prev)
		if err != nil {
			w.discard()
			return Checkpoint{}, err
		}
		c.Roots = append(c.Roots, r)
	}
	c.Entries, c.Read, c.Added, c.Took = w.entries, w.read, w.added, time.Since(start)
	if err := s.writeRecord(c); err != nil {
		w.discard()
		return Checkpoint{}, err
	}
	if err := s.setSize(s.Size() + w.added); err != nil {
		return c, err
	}
	// Only a cache: the next take reads the objects without it.
	s.remember(w.seen, w.misses*10 > w.folders)
	return c, nil
}

func checkTree(t Tree) error {
	if t.Name == "" || t.Path == "" || t.Guest == "" || t.Guest[0] != '/' {
		return fmt.Errorf("checkpoint: tree %q: needs a name, a guest path and a host path", t.Name)
	}
	return nil
}

// Bytes writes a size for people: 1.5 GiB, 12.0 MiB, 300 KiB.
func Bytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}
