package checkpoint

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox/launch"
)

// Helper lets a store of den running as an ordinary user read and
// restore what the computer gave to its other users (a folder of
// apt's, a file of a user inside, mode 0700 or 0600), which den's own
// rights do not reach, and give restored files back to those users.
//
// It is den's own executable, run again in a user namespace of its own
// with the computer's id map (written by newuidmap and newgidmap), as
// root there with the capabilities that override file permissions and
// owners (CAP_DAC_READ_SEARCH, CAP_DAC_OVERRIDE, CAP_FOWNER, CAP_CHOWN,
// CAP_FSETID, CAP_SETFCAP): the kernel grants them over files whose
// owner and group the map holds, the computer's and den's own, and
// nothing else. It runs the same walk as den, by descriptors, never
// following a link, and makes the store's files as den (root inside is
// den's uid).
//
// A take or a diff asks it only for the entries den could not read
// itself (one helper per take, started at the first); a restore runs
// in it whole.
type Helper struct {
	// UIDs and GIDs are the computer's id map: root inside is den's
	// uid, ids 1 and up the user's subordinate ids.
	UIDs, GIDs []IDRange
	// NewUIDMap and NewGIDMap are the paths of newuidmap and newgidmap.
	NewUIDMap, NewGIDMap string
	// Self is den's executable, which must call MaybeHelper first thing
	// (den's main does); "" is the running one.
	Self string
}

// helperEnv, set to "1", runs den as the helper (see MaybeHelper).
const helperEnv = "DEN_CHECKPOINT_HELPER"

// helperCaps are the helper's capabilities in its namespace.
var helperCaps = []uintptr{unix.CAP_CHOWN, unix.CAP_DAC_OVERRIDE, unix.CAP_DAC_READ_SEARCH,
	unix.CAP_FOWNER, unix.CAP_FSETID, unix.CAP_SETFCAP}

// MaybeHelper runs the helper and exits when den was started as one;
// otherwise it returns at once. den's main calls it first thing, as
// does a test binary whose stores have a Helper.
//
// The helper reads requests, one JSON value each, from stdin and
// writes an answer for each to stdout, until stdin ends.
func MaybeHelper() {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	if err := serveHelper(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "den: checkpoint helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// request is what den asks the helper: one entry, or a restore.
type request struct {
	Entry   *entryRequest   `json:"entry,omitempty"`
	Restore *restoreRequest `json:"restore,omitempty"`
}

// answer is the helper's answer to a request.
type answer struct {
	Entry    *entryAnswer `json:"entry,omitempty"`
	Restored *Restored    `json:"restored,omitempty"`
	Err      *wireError   `json:"err,omitempty"`
}

// entryRequest: read one name of a folder of a tree, with what it
// holds (see walker.delegate).
type entryRequest struct {
	Store    string   `json:"store"`
	Write    bool     `json:"write"` // a take: add what is new to the store
	Tree     string   `json:"tree"`
	TreeID   fileID   `json:"tree_id"`
	Skip     []string `json:"skip,omitempty"`
	Parent   string   `json:"parent"` // the folder, beneath the tree
	ParentID fileID   `json:"parent_id"`
	Name     string   `json:"name"`
	Prev     *Entry   `json:"prev,omitempty"`
	Depth    int      `json:"depth"`
	Limit    int64    `json:"limit"`
	Added    int64    `json:"added"` // by the take so far
	Racy     int64    `json:"racy"`
	Mount    fileID   `json:"mount"`
}

type entryAnswer struct {
	Entry    Entry           `json:"entry"`
	OK       bool            `json:"ok"`
	Entries  int             `json:"entries"`
	Read     int             `json:"read"`
	Folders  int             `json:"folders"`
	Misses   int             `json:"misses"`
	Added    int64           `json:"added"`
	Created  []string        `json:"created,omitempty"`
	Listings map[Hash][]byte `json:"listings,omitempty"`
}

// restoreRequest: do Restore, with the store's lock held by den.
type restoreRequest struct {
	Store string       `json:"store"`
	ID    int          `json:"id"`
	Trees []Tree       `json:"trees"`
	Save  *TakeOptions `json:"save,omitempty"`
}

// fileID names an inode (or, for Mount, a mount).
type fileID struct {
	Dev uint64 `json:"dev"`
	Ino uint64 `json:"ino"`
}

// wireError carries an error across, with the sentinel it wraps.
type wireError struct {
	Msg  string `json:"msg"`
	Kind string `json:"kind,omitempty"`
}

var sentinels = map[string]error{"tree": ErrTree, "too-large": ErrTooLarge, "damaged": ErrDamaged, "not-found": ErrNotFound}

func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Msg: err.Error()}
	for k, s := range sentinels {
		if errors.Is(err, s) {
			w.Kind = k
		}
	}
	return w
}

// helperError is an error the helper answered.
type helperError struct {
	msg  string
	kind error
}

func (e *helperError) Error() string { return e.msg }
func (e *helperError) Unwrap() error { return e.kind }

func (w *wireError) err() error {
	if w == nil {
		return nil
	}
	return &helperError{msg: w.Msg, kind: sentinels[w.Kind]}
}

// helperConn is a running helper, asked one request at a time.
type helperConn struct {
	mu     sync.Mutex
	cmd    *exec.Cmd
	in     io.WriteCloser
	enc    *json.Encoder
	dec    *json.Decoder
	stderr *firstBytes
	self   string
	broken error
}

// helperTimeout bounds starting a helper: a limit for a hang, not an
// expectation (it takes milliseconds).
const helperTimeout = 30 * time.Second

// start runs the helper in a user namespace of its own with the
// computer's map. It lives until close or ctx's end.
func (h *Helper) start(ctx context.Context) (*helperConn, error) {
	self := h.Self
	if self == "" {
		p, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("checkpoint: helper: den's own executable: %w", err)
		}
		self = p
	}
	// -test.run=^$ makes a test binary that does not know the helper
	// mode run nothing (and answer nothing).
	cmd := exec.CommandContext(ctx, self, "-test.run=^$")
	cmd.Env = []string{helperEnv + "=1"}
	cmd.Dir = "/"
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: helper: %w", err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("checkpoint: helper: %w", err)
	}
	c := &helperConn{cmd: cmd, in: in, enc: json.NewEncoder(in), dec: json.NewDecoder(bufio.NewReader(out)),
		stderr: &firstBytes{max: 4096}, self: self}
	cmd.Stderr = c.stderr
	// Its capabilities are ambient: they survive the exec, which
	// happens before the map is written (the helper waits for its first
	// request, sent after).
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER, AmbientCaps: helperCaps, Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = time.Second
	if err := launch.Start(cmd); err != nil {
		return nil, fmt.Errorf("checkpoint: helper: start %s: %w", self, err)
	}
	mctx, cancel := context.WithTimeout(ctx, helperTimeout)
	defer cancel()
	err = writeMap(mctx, h.NewUIDMap, cmd.Process.Pid, h.UIDs)
	if err == nil {
		err = writeMap(mctx, h.NewGIDMap, cmd.Process.Pid, h.GIDs)
	}
	if err != nil {
		c.close()
		return nil, fmt.Errorf("checkpoint: helper: %w", err)
	}
	return c, nil
}

// writeMap writes an id map of process pid's user namespace with
// newuidmap or newgidmap.
func writeMap(ctx context.Context, bin string, pid int, rs []IDRange) error {
	if bin == "" || len(rs) == 0 {
		return errors.New("no id map to write (newuidmap and newgidmap, and the computer's ids)")
	}
	args := []string{strconv.Itoa(pid)}
	for _, r := range rs {
		args = append(args, strconv.FormatUint(uint64(r.Inside), 10), strconv.FormatUint(uint64(r.Host), 10), strconv.FormatUint(uint64(r.Count), 10))
	}
	if out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// ask sends one request and reads its answer.
func (c *helperConn) ask(req request) (answer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return answer{}, c.broken
	}
	var a answer
	err := c.enc.Encode(req)
	if err == nil {
		err = c.dec.Decode(&a)
	}
	if err != nil {
		// The helper died, or never was one: say why.
		c.in.Close()
		werr := c.cmd.Wait()
		why := strings.TrimSpace(c.stderr.String())
		if why == "" {
			why = fmt.Sprintf("%s did not answer (%v): it must call checkpoint.MaybeHelper first thing (den's main does)", c.self, werr)
		}
		c.broken = fmt.Errorf("checkpoint: helper: %v: %s", err, why)
		return answer{}, c.broken
	}
	return a, a.Err.err()
}

// close ends the helper: it exits when its stdin ends.
func (c *helperConn) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return
	}
	c.broken = errors.New("checkpoint: helper: closed")
	c.in.Close()
	c.cmd.Wait()
}

// firstBytes keeps the first max bytes written to it: what the helper
// said before it failed.
type firstBytes struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *firstBytes) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if room := t.max - t.b.Len(); room > 0 {
		t.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (t *firstBytes) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

// serveHelper answers den's requests until in ends.
func serveHelper(in io.Reader, out io.Writer) error {
	var ids *nsIDs // read at the first request: den writes the map before sending it
	dec := json.NewDecoder(bufio.NewReader(in))
	enc := json.NewEncoder(out)
	stores := map[string]*Store{}
	store := func(dir string) (*Store, error) {
		if s, ok := stores[dir]; ok {
			return s, nil
		}
		if ids == nil {
			var err error
			if ids, err = ownIDs(); err != nil {
				return nil, err
			}
		}
		s, err := Open(dir)
		if err != nil {
			return nil, err
		}
		s.ns = ids
		stores[dir] = s
		return s, nil
	}
	ctx := context.Background()
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		var a answer
		switch {
		case req.Entry != nil:
			s, err := store(req.Entry.Store)
			if err == nil {
				a.Entry, err = s.helpEntry(ctx, req.Entry)
			}
			a.Err = toWire(err)
		case req.Restore != nil:
			r := req.Restore
			s, err := store(r.Store)
			if err == nil {
				var out Restored
				out, err = s.restore(ctx, r.ID, r.Trees, RestoreOptions{Save: r.Save})
				a.Restored = &out
			}
			a.Err = toWire(err)
		default:
			a.Err = &wireError{Msg: "checkpoint: helper: an empty request"}
		}
		if err := enc.Encode(a); err != nil {
			return err
		}
	}
}

// helpEntry reads one entry for den, in the helper: the tree's folder
// is opened again by path (den's path, trusted), the entry's folder
// beneath it without following a symlink or crossing a mount, and each
// is checked to be the inode den read.
func (s *Store) helpEntry(ctx context.Context, req *entryRequest) (*entryAnswer, error) {
	root, err := unix.Open(req.Tree, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: %s: %w", req.Tree, err)
	}
	defer unix.Close(root)
	if err := sameID(root, req.TreeID); err != nil {
		return nil, changed("", err)
	}
	dfd := root
	if req.Parent != "" {
		if dfd, err = unix.Openat2(root, req.Parent, &unix.OpenHow{
			Flags:   unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS | unix.RESOLVE_NO_XDEV,
		}); err != nil {
			return nil, changed(req.Parent, err)
		}
		defer unix.Close(dfd)
		if err := sameID(dfd, req.ParentID); err != nil {
			return nil, changed(req.Parent, err)
		}
	}
	w := newWalker(ctx, s, req.Write)
	w.limit, w.added, w.racy = req.Limit, req.Added, req.Racy
	w.mnt = mount{dev: req.Mount.Dev, id: req.Mount.Ino}
	w.skip = skipSet(req.Skip)
	rel := join(req.Parent, req.Name)
	a := &entryAnswer{}
	sub, err := w.entry(dfd, req.Name, rel, req.Prev, &a.Entry, &a.OK)
	if err == nil && sub >= 0 {
		var prev Hash
		if req.Prev != nil && req.Prev.Kind == Dir {
			prev = req.Prev.Hash
		}
		a.Entry.Hash, err = w.dir(sub, prev, rel, req.Depth+1)
		unix.Close(sub)
	}
	if err != nil {
		w.discard()
		return nil, err
	}
	a.Entries, a.Read, a.Folders, a.Misses = w.entries, w.read, w.folders, w.misses
	a.Added, a.Created = w.added-req.Added, w.created
	a.Listings = map[Hash][]byte{}
	if req.Write {
		for h, l := range w.seen {
			a.Listings[h] = l.enc
		}
	} else {
		a.Listings = w.mem
	}
	return a, nil
}

func sameID(fd int, id fileID) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Dev != id.Dev || st.Ino != id.Ino {
		return errors.New("replaced")
	}
	return nil
}

// restoreVia runs a restore in a helper (the store's lock is held).
func (s *Store) restoreVia(ctx context.Context, id int, trees []Tree, o RestoreOptions) (Restored, error) {
	c, err := s.helper.start(ctx)
	if err != nil {
		return Restored{}, err
	}
	defer c.close()
	a, err := c.ask(request{Restore: &restoreRequest{Store: s.dir, ID: id, Trees: trees, Save: o.Save}})
	var out Restored
	if a.Restored != nil {
		out = *a.Restored
	}
	if err != nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return out, err
}
