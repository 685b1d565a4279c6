package computer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/checkpoint"
	"den.dev/den/internal/hostcmd"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/idmap"
)

// Undo for the computer: a checkpoint (package checkpoint) of the
// rootfs and a session's folders, taken before each turn that may
// change them, and restored on request.
//
// A checkpoint holds the agent's rootfs (shared by its sessions) and
// the folders of the session it was taken for: /workspace,
// /den/attachments and /den/browser. It never holds the user's mounts,
// the agent's folders (/den/memory, /den/skills, /den/shared: shared by
// every session, and den's own records) nor /den/offloads (den's record
// of commands' full output, which the conversation links to), and a
// restore never touches them.
//
// A restore needs the computer stopped: it fails with ErrInUse while
// any session runs it (in any den process), and a computer starting
// meanwhile waits for it to end. It first keeps the state it replaces
// as a checkpoint of its own, so that it can be undone too.

// DefaultCheckpointBudget and DefaultCheckpointKeep bound an agent's
// checkpoints when the config does not.
const (
	DefaultCheckpointBudget = 4 << 30
	DefaultCheckpointKeep   = 100
)

// Undo is an agent's checkpoint policy. The zero value takes none.
type Undo struct {
	Budget int64 // bytes the checkpoints may take on disk; 0: none taken
	Keep   int   // checkpoints kept at most; 0: any number
}

// On reports whether checkpoints are taken.
func (u Undo) On() bool { return u.Budget > 0 }

// DefaultUndo is the policy when the config names none.
func DefaultUndo() Undo {
	return Undo{Budget: DefaultCheckpointBudget, Keep: DefaultCheckpointKeep}
}

// checkpointDirs are the session folders a checkpoint holds.
var checkpointDirs = []string{"workspace", "attachments", "browser"}

// hasCheckpoints reports whether the computer has a checkpoint store:
// reading checkpoints makes none.
func (c *Computer) hasCheckpoints() bool {
	_, err := os.Stat(filepath.Join(c.dir, "checkpoints", "records"))
	return err == nil
}

// Checkpoints is the computer's checkpoint store, made if need be.
func (c *Computer) Checkpoints() (*checkpoint.Store, error) {
	if s, ok := c.m.stores.Load(c.agent); ok {
		return s.(*checkpoint.Store), nil
	}
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, fmt.Errorf("computer: %w", err)
	}
	s, err := checkpoint.OpenWith(filepath.Join(c.dir, "checkpoints"), checkpoint.Options{Helper: c.m.checkpointHelper()})
	if err != nil {
		return nil, err
	}
	got, _ := c.m.stores.LoadOrStore(c.agent, s)
	return got.(*checkpoint.Store), nil
}

// checkpointHelper is what lets den as an ordinary user checkpoint
// and restore the files its computers give to their other users: nil
// as root (whose rights reach them all), and without subordinate ids
// (every file of the computer is then the user's own).
func (m *Manager) checkpointHelper() *checkpoint.Helper {
	if os.Geteuid() == 0 || !m.ids.Helper {
		return nil
	}
	newuidmap, err1 := idmap.LookHelper("newuidmap")
	newgidmap, err2 := idmap.LookHelper("newgidmap")
	if err1 != nil || err2 != nil {
		return nil
	}
	h := &checkpoint.Helper{NewUIDMap: newuidmap, NewGIDMap: newgidmap}
	for _, r := range m.ids.UIDs {
		h.UIDs = append(h.UIDs, checkpoint.IDRange(r))
	}
	for _, r := range m.ids.GIDs {
		h.GIDs = append(h.GIDs, checkpoint.IDRange(r))
	}
	return h
}

// trees are what a checkpoint of a session holds: the rootfs, less the
// places where folders are bound into it (the user's mounts, the
// session's and agent's folders, den's own), and the session's folders.
func (c *Computer) trees(session string, mounts []sandbox.Bind) []checkpoint.Tree {
	skip := []string{sandbox.GuestRun, hostcmd.GuestShim, hostcmd.GuestDir}
	for _, d := range sandbox.SessionDirs {
		skip = append(skip, d.Guest)
	}
	for _, d := range sandbox.AgentDirs {
		skip = append(skip, d.Guest)
	}
	for _, m := range mounts {
		skip = append(skip, m.Guest)
	}
	trees := []checkpoint.Tree{{Name: "rootfs", Guest: "/", Path: c.Rootfs(), Skip: skip}}
	if session == "" {
		return trees
	}
	for _, d := range sandbox.SessionDirs {
		for _, name := range checkpointDirs {
			if d.Name != name {
				continue
			}
			p := filepath.Join(c.SessionDir(session), name)
			if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
				continue
			}
			trees = append(trees, checkpoint.Tree{Name: "sessions/" + session + "/" + name, Guest: d.Guest, Path: p})
		}
	}
	return trees
}

// CheckpointOptions describe a checkpoint to take.
type CheckpointOptions struct {
	Session string // whose folders it holds ("" for the rootfs alone)
	Turn    string // the assistant message whose tool calls come after it
	Reason  string // "turn" or "manual"
	Mounts  []sandbox.Bind
	Undo    Undo
}

// Checkpoint takes a checkpoint of the computer and keeps the agent's
// checkpoints within its policy (the oldest go first). A checkpoint
// that would not fit in the budget is not taken (checkpoint.ErrTooLarge).
func (c *Computer) Checkpoint(ctx context.Context, o CheckpointOptions) (checkpoint.Checkpoint, error) {
	if !o.Undo.On() {
		return checkpoint.Checkpoint{}, fmt.Errorf("computer %s: checkpoints are off", c.agent)
	}
	if _, ok, _ := c.Info(); !ok {
		return checkpoint.Checkpoint{}, fmt.Errorf("%w for agent %s", ErrNoComputer, c.agent)
	}
	s, err := c.Checkpoints()
	if err != nil {
		return checkpoint.Checkpoint{}, err
	}
	cp, err := s.Take(ctx, c.trees(o.Session, o.Mounts), checkpoint.TakeOptions{
		Session: o.Session, Turn: o.Turn, Reason: o.Reason, Meta: c.ownerMeta(), Limit: o.Undo.Budget})
	if err != nil {
		return cp, fmt.Errorf("computer %s: checkpoint: %w", c.agent, err)
	}
	if _, err := s.Prune(ctx, o.Undo.Keep, o.Undo.Budget); err != nil {
		return cp, fmt.Errorf("computer %s: checkpoints: %w", c.agent, err)
	}
	return cp, nil
}

// ownerMeta records whose host ids own the computer's files: a restore
// into a computer given to other ids since would give files to the
// wrong ids.
func (c *Computer) ownerMeta() map[string]string {
	uid, gid, _ := c.m.ids.Root()
	return map[string]string{"owner": fmt.Sprintf("%d:%d", uid, gid)}
}

// ListCheckpoints lists the agent's checkpoints, oldest first; with a
// session, those taken for it.
func (c *Computer) ListCheckpoints(session string) ([]checkpoint.Checkpoint, error) {
	if !c.hasCheckpoints() {
		return nil, nil
	}
	s, err := c.Checkpoints()
	if err != nil {
		return nil, err
	}
	list, err := s.List()
	if err != nil || session == "" {
		return list, err
	}
	out := list[:0]
	for _, cp := range list {
		if cp.Session == session {
			out = append(out, cp)
		}
	}
	return out, nil
}

// DiffCheckpoint says what changed from checkpoint id to checkpoint to,
// or with to 0, to the computer as it is now (the rootfs and the
// checkpoint's session's folders): what restoring id would undo.
func (c *Computer) DiffCheckpoint(ctx context.Context, id, to int, mounts []sandbox.Bind) (checkpoint.Diff, error) {
	if !c.hasCheckpoints() {
		return checkpoint.Diff{}, fmt.Errorf("%w: %d", checkpoint.ErrNotFound, id)
	}
	s, err := c.Checkpoints()
	if err != nil {
		return checkpoint.Diff{}, err
	}
	if to != 0 {
		return s.Diff(ctx, id, to)
	}
	cp, err := s.Get(id)
	if err != nil {
		return checkpoint.Diff{}, err
	}
	return s.DiffLive(ctx, id, c.trees(cp.Session, mounts))
}

// NextCheckpoint is the checkpoint taken after id that holds the same
// trees (the rootfs, and id's session's folders when it has them), or
// 0 when there is none: what turn id changed is what differs between
// the two.
func (c *Computer) NextCheckpoint(id int) (int, error) {
	s, err := c.Checkpoints()
	if err != nil {
		return 0, err
	}
	cp, err := s.Get(id)
	if err != nil {
		return 0, err
	}
	list, err := s.List()
	if err != nil {
		return 0, err
	}
	for _, n := range list {
		if n.ID > id && n.Session == cp.Session {
			return n.ID, nil
		}
	}
	return 0, nil
}

// RestoreOptions shape a restore.
type RestoreOptions struct {
	// Mounts are the user's folders mounted into the computer: never
	// touched (nor are the agent's folders and /den/offloads).
	Mounts []sandbox.Bind
	Undo   Undo
	// NoSave skips keeping the state the restore replaces.
	NoSave bool
}

// Restored reports a restore.
type Restored struct {
	checkpoint.Restored
	Checkpoint checkpoint.Checkpoint // the checkpoint restored
	// Untouched names, for people, what a restore never touches.
	Untouched []string
}

// RestoreCheckpoint puts the computer back as checkpoint id recorded
// it: the rootfs, and the folders of the session it was taken for.
func (c *Computer) RestoreCheckpoint(ctx context.Context, id int, o RestoreOptions) (Restored, error) {
	var out Restored
	if !c.hasCheckpoints() {
		return out, fmt.Errorf("%w: %d", checkpoint.ErrNotFound, id)
	}
	s, err := c.Checkpoints()
	if err != nil {
		return out, err
	}
	cp, err := s.Get(id)
	if err != nil {
		return out, err
	}
	out.Checkpoint = cp
	if want, now := cp.Meta["owner"], c.ownerMeta()["owner"]; want != "" && want != now {
		return out, fmt.Errorf("computer %s: checkpoint %d belongs to host ids %s, and the computer's are %s now: it cannot be restored", c.agent, id, want, now)
	}
	unlock, err := c.lockExclusive()
	if err != nil {
		return out, err
	}
	defer unlock()
	ro := checkpoint.RestoreOptions{}
	if !o.NoSave && o.Undo.On() {
		ro.Save = &checkpoint.TakeOptions{Session: cp.Session, Reason: "restore", Meta: c.ownerMeta(), Limit: o.Undo.Budget}
	}
	out.Restored, err = s.Restore(ctx, id, c.trees(cp.Session, o.Mounts), ro)
	if err != nil {
		if errors.Is(err, checkpoint.ErrTooLarge) {
			err = fmt.Errorf("%w (restore without keeping the current state: den computer restore --no-save)", err)
		}
		return out, fmt.Errorf("computer %s: restore checkpoint %d: %w", c.agent, id, err)
	}
	for _, m := range o.Mounts {
		out.Untouched = append(out.Untouched, fmt.Sprintf("%s (your folder %s)", m.Guest, m.Host))
	}
	out.Untouched = append(out.Untouched, sandbox.GuestMemory, sandbox.GuestSkills, sandbox.GuestShared, sandbox.GuestOffloads)
	if cp.Session != "" {
		out.Untouched = append(out.Untouched, "the folders of the agent's other sessions")
	}
	if o.Undo.On() {
		s.Prune(ctx, o.Undo.Keep, o.Undo.Budget)
	}
	return out, nil
}

// useLock is the file whose lock says the computer is in use: each
// running session holds it shared, a restore exclusively.
func (c *Computer) useLock() string { return filepath.Join(c.dir, "use.lock") }

// lockShared marks the computer in use by one more session, waiting
// while a restore runs.
func (c *Computer) lockShared(ctx context.Context) (*os.File, error) {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return nil, fmt.Errorf("computer: %w", err)
	}
	f, err := os.OpenFile(c.useLock(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("computer: %w", err)
	}
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			f.Close()
			return nil, fmt.Errorf("computer: %w", err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lockExclusive takes the computer for a restore: ErrInUse while a
// session runs it.
func (c *Computer) lockExclusive() (func(), error) {
	f, err := os.OpenFile(c.useLock(), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("computer: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			who := ""
			if running := c.running(); len(running) > 0 {
				who = " (session " + strings.Join(running, ", ") + ")"
			}
			return nil, fmt.Errorf("%w: agent %s's computer is running%s: stop its sessions first (a den serve stops an idle one after [server] idle_stop)", ErrInUse, c.agent, who)
		}
		return nil, fmt.Errorf("computer: %w", err)
	}
	return func() { f.Close() }, nil
}

// ParseCheckpoint reads a checkpoint id as people write it: 12 or #12.
func ParseCheckpoint(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSpace(s), "#"))
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: checkpoint %q: want a number such as 12", ErrBadName, s)
	}
	return n, nil
}
