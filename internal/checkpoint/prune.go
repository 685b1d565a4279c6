package checkpoint

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Prune keeps at most keep checkpoints (0: any number) and the store
// within budget bytes (0: no budget), removing the oldest checkpoints
// first and then every object no checkpoint left needs. The newest
// checkpoint is always kept, even alone over the budget (the caller
// bounds a take with TakeOptions.Limit). It returns the ids removed.
func (s *Store) Prune(ctx context.Context, keep int, budget int64) ([]int, error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	list, err := s.List()
	if err != nil {
		return nil, err
	}
	if (keep <= 0 || len(list) <= keep) && (budget <= 0 || s.Size() <= budget) {
		return nil, nil
	}
	return s.collect(ctx, list, keep, budget)
}

// Collect removes every object no checkpoint needs (after Delete, or
// what a crash left) and measures the store again.
func (s *Store) Collect(ctx context.Context) error {
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	list, err := s.List()
	if err != nil {
		return err
	}
	_, err = s.collect(ctx, list, 0, 0)
	return err
}

// collect drops the oldest checkpoints of list as keep and budget
// require, then sweeps the objects. The lock is held.
func (s *Store) collect(ctx context.Context, list []Checkpoint, keep int, budget int64) ([]int, error) {
	// newest[h] is the index of the newest checkpoint that needs h.
	// Marking newest first, a listing met again needs no second visit:
	// what it holds is marked already, by a newer checkpoint.
	newest := map[Hash]int{}
	var mark func(h Hash, i int) error
	mark = func(h Hash, i int) error {
		if _, ok := newest[h]; ok {
			return nil
		}
		newest[h] = i
		es, err := s.readTree(h)
		if err != nil {
			return nil // damaged: what it named is unreachable anyway
		}
		for k := range es {
			switch es[k].Kind {
			case Dir:
				if err := mark(es[k].Hash, i); err != nil {
					return err
				}
			case File:
				if _, ok := newest[es[k].Hash]; !ok {
					newest[es[k].Hash] = i
				}
			}
		}
		return ctx.Err()
	}
	for i := len(list) - 1; i >= 0; i-- {
		for _, r := range list[i].Roots {
			if err := mark(r.Entry.Hash, i); err != nil {
				return nil, err
			}
		}
	}
	// What each checkpoint alone keeps, and the objects nothing needs.
	bytes := make([]int64, len(list))
	type object struct {
		path  string
		i     int // -1: needed by none
		bytes int64
	}
	var objects []object
	objDir := filepath.Join(s.dir, "objects")
	fans, err := os.ReadDir(objDir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: prune: %w", err)
	}
	for _, fan := range fans {
		if fan.Name() == "tmp" || len(fan.Name()) != 2 || !fan.IsDir() {
			continue
		}
		ents, err := os.ReadDir(filepath.Join(objDir, fan.Name()))
		if err != nil {
			return nil, fmt.Errorf("checkpoint: prune: %w", err)
		}
		for _, e := range ents {
			p := filepath.Join(objDir, fan.Name(), e.Name())
			var st unix.Stat_t
			if unix.Lstat(p, &st) != nil {
				continue
			}
			o := object{path: p, i: -1, bytes: st.Blocks * 512}
			var h Hash
			if b, err := hex.DecodeString(fan.Name() + e.Name()); err == nil && len(b) == len(h) {
				copy(h[:], b)
				if i, ok := newest[h]; ok {
					o.i = i
					bytes[i] += o.bytes
				}
			}
			objects = append(objects, o)
		}
	}
	// Drop the oldest until both bounds hold, keeping the newest.
	kept := int64(0)
	for _, b := range bytes {
		kept += b
	}
	drop := 0
	for drop < len(list)-1 && ((keep > 0 && len(list)-drop > keep) || (budget > 0 && kept > budget)) {
		kept -= bytes[drop]
		drop++
	}
	var removed []int
	for _, c := range list[:drop] {
		if err := os.Remove(s.recordPath(c.ID)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return removed, fmt.Errorf("checkpoint: prune: %w", err)
		}
		removed = append(removed, c.ID)
	}
	for _, o := range objects {
		if o.i < drop {
			os.Remove(o.path)
		}
	}
	// Objects being written belong to a take, and none runs: the lock
	// is held.
	if tmps, err := os.ReadDir(filepath.Join(objDir, "tmp")); err == nil {
		for _, t := range tmps {
			os.Remove(filepath.Join(objDir, "tmp", t.Name()))
		}
	}
	if recs, err := os.ReadDir(filepath.Join(s.dir, "records")); err == nil {
		for _, r := range recs {
			if _, ok := recordID(r.Name()); !ok {
				os.Remove(filepath.Join(s.dir, "records", r.Name()))
			}
		}
	}
	return removed, s.setSize(kept)
}
