package checkpoint

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Store is a folder of checkpoints:
//
//	DIR/lock                 held by whoever takes, prunes or restores
//	DIR/size                 bytes the objects take on disk
//	DIR/records/ID.json      one checkpoint each
//	DIR/objects/XX/HASH      file contents and folder listings
//	DIR/objects/tmp/         objects being written
type Store struct {
	dir    string
	helper *Helper // reads and restores what den cannot (nil: none)
	ns     *nsIDs  // in the helper: its namespace's ids

	// The listings of the last take's trees (see index.go).
	mu      sync.Mutex
	cache   map[Hash]listing // decoded
	index   map[Hash][]byte  // read from DIR/index, not decoded yet
	indexed bool             // DIR/index was read
}

// Options shape a store.
type Options struct {
	// Helper, for den running as an ordinary user with subordinate
	// ids, reads and restores what the computer gave to its other users
	// (see Helper). nil: den's own rights only.
	Helper *Helper
}

// Open opens the store in dir, making it if need be (private to den).
func Open(dir string) (*Store, error) { return OpenWith(dir, Options{}) }

// OpenWith is Open with options.
func OpenWith(dir string, o Options) (*Store, error) {
	s := &Store{dir: dir, helper: o.Helper}
	if err := s.makeDirs(); err != nil {
		return nil, err
	}
	return s, nil
}

// makeDirs makes the store's folders: at Open, and again before each
// change (another process may have removed the store meanwhile: den
// computer reset).
func (s *Store) makeDirs() error {
	for _, d := range []string{s.dir, filepath.Join(s.dir, "records"), filepath.Join(s.dir, "objects"), filepath.Join(s.dir, "objects", "tmp")} {
		if err := os.Mkdir(d, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("checkpoint: open: %w", err)
		}
	}
	return nil
}

// Dir is the store's folder.
func (s *Store) Dir() string { return s.dir }

// Tree is a folder to checkpoint or restore.
type Tree struct {
	// Name tells the folder apart across checkpoints ("rootfs",
	// "sessions/ID/workspace"): a checkpoint compares each tree with the
	// last one of the same name.
	Name string
	// Guest is where the computer sees it ("/", "/workspace"); changes
	// are reported under it.
	Guest string
	// Path is the folder on the host. It is trusted by its path; what is
	// beneath is not.
	Path string
	// Skip are paths beneath the folder ("mnt/notes") that are neither
	// recorded nor ever touched by a restore: where the user's folders
	// are mounted in the computer.
	Skip []string
}

// Root is one tree of a checkpoint: the folder itself as an entry
// whose Hash is its listing.
type Root struct {
	Name  string `json:"name"`
	Guest string `json:"guest"`
	Entry Entry  `json:"entry"`
}

// Checkpoint is one checkpoint's record.
type Checkpoint struct {
	ID      int       `json:"id"`
	Created time.Time `json:"created"`
	// Session and Turn say what it was taken for: before the tool
	// calls of the session's assistant message Turn.
	Session string `json:"session,omitempty"`
	Turn    string `json:"turn,omitempty"`
	// Reason is why: "turn", "restore" (the state a restore replaced,
	// so that the restore can be undone too) or "manual".
	Reason string `json:"reason"`
	Roots  []Root `json:"roots"`
	// Meta is the caller's (the computer records whose ids own it).
	Meta map[string]string `json:"meta,omitempty"`
	// Figures: entries recorded, files read because they had changed,
	// bytes added to the store, time taken.
	Entries int           `json:"entries"`
	Read    int           `json:"read"`
	Added   int64         `json:"added"`
	Took    time.Duration `json:"took"`
}

// Root returns the checkpoint's tree of that name.
func (c *Checkpoint) Root(name string) (Root, bool) {
	for _, r := range c.Roots {
		if r.Name == name {
			return r, true
		}
	}
	return Root{}, false
}

// List returns the checkpoints, oldest first.
func (s *Store) List() ([]Checkpoint, error) {
	ents, err := os.ReadDir(filepath.Join(s.dir, "records"))
	if err != nil {
		return nil, fmt.Errorf("checkpoint: list: %w", err)
	}
	var out []Checkpoint
	for _, e := range ents {
		id, ok := recordID(e.Name())
		if !ok {
			continue
		}
		c, err := s.Get(id)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Checkpoint) int { return a.ID - b.ID })
	return out, nil
}

func recordID(name string) (int, bool) {
	n, ok := strings.CutSuffix(name, ".json")
	if !ok {
		return 0, false
	}
	id, err := strconv.Atoi(n)
	return id, err == nil && id > 0
}

func (s *Store) recordPath(id int) string {
	return filepath.Join(s.dir, "records", fmt.Sprintf("%06d.json", id))
}

// Get returns checkpoint id.
func (s *Store) Get(id int) (Checkpoint, error) {
	b, err := os.ReadFile(s.recordPath(id))
	if errors.Is(err, os.ErrNotExist) {
		return Checkpoint{}, fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	if err != nil {
		return Checkpoint{}, fmt.Errorf("checkpoint: %w", err)
	}
	var c Checkpoint
	if err := json.Unmarshal(b, &c); err != nil || c.ID != id {
		return Checkpoint{}, fmt.Errorf("%w: record %d: unreadable", ErrDamaged, id)
	}
	return c, nil
}

// writeRecord writes c under a new name, beside and then in place.
func (s *Store) writeRecord(c Checkpoint) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.dir, "records", ".tmp-"+randomName())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return fmt.Errorf("checkpoint: record: %w", err)
	}
	if err := os.Rename(tmp, s.recordPath(c.ID)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("checkpoint: record: %w", err)
	}
	return nil
}

// Size is what the store's objects take on disk, in bytes.
func (s *Store) Size() int64 {
	b, err := os.ReadFile(filepath.Join(s.dir, "size"))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

func (s *Store) setSize(n int64) error {
	tmp := filepath.Join(s.dir, ".size-"+randomName())
	if err := os.WriteFile(tmp, []byte(strconv.FormatInt(max(n, 0), 10)+"\n"), 0o600); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return os.Rename(tmp, filepath.Join(s.dir, "size"))
}

// lock takes the store's lock, waiting for it until ctx ends: one
// take, prune or restore at a time, across den's processes.
func (s *Store) lock(ctx context.Context) (unlock func(), err error) {
	if err := s.makeDirs(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(s.dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: lock: %w", err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("checkpoint: lock: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// objectPath is where object h is.
func (s *Store) objectPath(h Hash) string {
	x := h.String()
	return filepath.Join(s.dir, "objects", x[:2], x[2:])
}

// readTree reads and checks a folder listing.
func (s *Store) readTree(h Hash) ([]Entry, error) {
	l, err := s.readListing(h)
	return l.entries, err
}

func (s *Store) readListing(h Hash) (listing, error) {
	b, err := os.ReadFile(s.objectPath(h))
	if err != nil {
		return listing{}, fmt.Errorf("%w: listing %s: %v", ErrDamaged, h, err)
	}
	if treeHash(b) != h {
		return listing{}, fmt.Errorf("%w: listing %s is not what its name says", ErrDamaged, h)
	}
	es, err := decodeTree(b)
	return listing{es, b}, err
}

// Delete removes checkpoint id, and the objects no other checkpoint
// needs.
func (s *Store) Delete(ctx context.Context, id int) error {
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := os.Remove(s.recordPath(id)); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("%w: %d", ErrNotFound, id)
		}
		return fmt.Errorf("checkpoint: delete: %w", err)
	}
	list, err := s.List()
	if err != nil {
		return err
	}
	_, err = s.collect(ctx, list, 0, 0)
	return err
}

// RemoveAll deletes the store and every checkpoint in it.
func (s *Store) RemoveAll(ctx context.Context) error {
	unlock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	// Records first: a store cut short leaves no checkpoint naming
	// objects that are gone.
	if err := os.RemoveAll(filepath.Join(s.dir, "records")); err != nil {
		return fmt.Errorf("checkpoint: remove: %w", err)
	}
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("checkpoint: remove: %w", err)
	}
	return nil
}

func randomName() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}
