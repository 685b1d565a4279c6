package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/checkpoint"
	"den.dev/den/internal/cmdscan"
	"den.dev/den/internal/computer"
	"den.dev/den/internal/event"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/store"
	"den.dev/den/internal/tool"
)

// Undo in the computer (see computer.Undo): a checkpoint before each
// turn that may change the computer, taken at the turn's first tool
// call that may (a shell command cmdscan does not find read-only, a
// file write or edit, an MCP server's tool that is not read-only).
// Memory and browser calls do not count: the memory is not the
// computer's, and browsing writes only screenshots. A turn is one
// assistant message and its tool calls; its checkpoint is named by the
// message's id.

// checkpointer takes each turn's checkpoint once.
type checkpointer struct {
	take func(ctx context.Context, turn string)

	mu   sync.Mutex
	done map[string]bool
}

// before takes turn's checkpoint unless it has one. Calls that may
// change the computer run one at a time (Concurrent), but a read-only
// batch may run beside nothing else: the lock keeps it to one take.
func (c *checkpointer) before(ctx context.Context, turn string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done[turn] {
		return
	}
	c.done[turn] = true
	c.take(ctx, turn)
}

// mayChange reports whether a call may change the computer.
func (r *registryTools) mayChange(c *llm.ToolCall) bool {
	if cmd, ok := shellCommand(c); ok {
		class, err := cmdscan.Classify(cmd, "", r.mounts)
		return err != nil || !class.ReadOnly()
	}
	if r.mcp.has(c) {
		return !r.mcp.reg.ReadOnly(*c)
	}
	if c.Name == browserToolName {
		return false
	}
	for _, t := range tool.MemoryTools() {
		if t.Spec().Name == c.Name {
			return false
		}
	}
	return !r.reg.ReadOnly(*c)
}

// checkpointer is the session's, for one run: nil when the agent's
// checkpoints are off.
func (r *Runtime) checkpointer(e *engine) *checkpointer {
	if !e.opts.Undo.On() {
		return nil
	}
	return &checkpointer{done: map[string]bool{}, take: func(ctx context.Context, turn string) {
		cp, err := e.comp.Checkpoint(ctx, computer.CheckpointOptions{Session: e.session, Turn: turn, Reason: "turn", Mounts: e.opts.Mounts, Undo: e.opts.Undo})
		if err != nil {
			if ctx.Err() == nil {
				r.emit(e.session, &agent.WarningEvent{Message: "no checkpoint of the computer before this turn, so it cannot be undone: " + err.Error()})
			}
			return
		}
		r.emit(e.session, &event.Checkpoint{ID: cp.ID, Turn: turn, Entries: cp.Entries, Read: cp.Read, Added: cp.Added, Took: cp.Took})
	}}
}

// ErrNoCheckpoint: the session has no checkpoint of that id.
var ErrNoCheckpoint = errors.New("no such checkpoint")

// Checkpoint is one of a session's checkpoints, with the checkpoint of
// the session taken after it (0: none yet): what changed between the
// two is what its turn changed.
type Checkpoint struct {
	checkpoint.Checkpoint
	Next int `json:"next,omitempty"`
}

// Checkpoints lists the session's checkpoints, oldest first. An agent
// without checkpoints has none, and its computer is not made to list
// them.
func (r *Runtime) Checkpoints(ctx context.Context, sessionID string) ([]Checkpoint, error) {
	sess, err := r.st.GetSession(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	if !r.hasCheckpoints(sess.Agent) {
		return nil, nil
	}
	comp, _, err := r.computer(ctx, sess.Agent)
	if err != nil {
		return nil, err
	}
	list, err := comp.ListCheckpoints(sessionID)
	if err != nil {
		return nil, err
	}
	out := make([]Checkpoint, len(list))
	for i, cp := range list {
		out[i].Checkpoint = cp
		if i+1 < len(list) {
			out[i].Next = list[i+1].ID
		}
	}
	return out, nil
}

// hasCheckpoints reports whether the agent has a checkpoint store.
func (r *Runtime) hasCheckpoints(agentName string) bool {
	_, err := os.Stat(filepath.Join(r.o.DataDir, "agents", agentName, "checkpoints", "records"))
	return err == nil
}

// sessionComputer opens the computer of a session's agent (without
// starting it), when the agent has checkpoints.
func (r *Runtime) sessionComputer(ctx context.Context, sessionID string, id int) (*computer.Computer, computer.SessionOptions, error) {
	sess, err := r.st.GetSession(ctx, sessionID)
	if err != nil {
		return nil, computer.SessionOptions{}, err
	}
	if !r.hasCheckpoints(sess.Agent) {
		return nil, computer.SessionOptions{}, fmt.Errorf("%w: session %s has no checkpoint %d", ErrNoCheckpoint, sessionID, id)
	}
	return r.computer(ctx, sess.Agent)
}

// ownCheckpoint checks that checkpoint id is one of the session's.
func ownCheckpoint(comp *computer.Computer, sessionID string, id int) error {
	s, err := comp.Checkpoints()
	if err != nil {
		return err
	}
	cp, err := s.Get(id)
	if errors.Is(err, checkpoint.ErrNotFound) || err == nil && cp.Session != sessionID {
		return fmt.Errorf("%w: session %s has no checkpoint %d", ErrNoCheckpoint, sessionID, id)
	}
	return err
}

// TurnChanges says what changed in the computer from the session's
// checkpoint id to its next one, or, for its last one, to the computer
// as it is now: what the turn it was taken for changed (and what else
// changed the agent's rootfs meanwhile).
func (r *Runtime) TurnChanges(ctx context.Context, sessionID string, id int) (checkpoint.Diff, error) {
	comp, o, err := r.sessionComputer(ctx, sessionID, id)
	if err != nil {
		return checkpoint.Diff{}, err
	}
	if err := ownCheckpoint(comp, sessionID, id); err != nil {
		return checkpoint.Diff{}, err
	}
	next, err := comp.NextCheckpoint(id)
	if err != nil {
		return checkpoint.Diff{}, err
	}
	return comp.DiffCheckpoint(ctx, id, next, o.Mounts)
}

// Restore puts the computer back as the session's checkpoint id
// recorded it (computer.RestoreCheckpoint): the agent's rootfs and the
// session's folders. A turn running in any session of the agent makes
// it fail with store.ErrSessionBusy; computers of the agent's idle
// sessions in this process are stopped first (they start again with
// the next message). A session of the agent running in another den
// process makes it fail with computer.ErrInUse.
func (r *Runtime) Restore(ctx context.Context, sessionID string, id int) (computer.Restored, error) {
	sess, err := r.st.GetSession(ctx, sessionID)
	if err != nil {
		return computer.Restored{}, err
	}
	if !r.hasCheckpoints(sess.Agent) {
		return computer.Restored{}, fmt.Errorf("%w: session %s has no checkpoint %d", ErrNoCheckpoint, sessionID, id)
	}
	// No computer of the agent starts here meanwhile.
	m, _ := r.provision.LoadOrStore(sess.Agent, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	defer mu.Unlock()
	comp, o, err := r.o.Computer(ctx, sess.Agent)
	if err != nil {
		return computer.Restored{}, err
	}
	if err := ownCheckpoint(comp, sessionID, id); err != nil {
		return computer.Restored{}, err
	}
	if err := r.stopComputers(sess.Agent); err != nil {
		return computer.Restored{}, err
	}
	res, err := comp.RestoreCheckpoint(ctx, id, computer.RestoreOptions{Mounts: o.Mounts, Undo: o.Undo})
	if err != nil {
		return res, err
	}
	r.emit(sessionID, &event.Restored{ID: id, Turn: res.Checkpoint.Turn, Saved: res.Saved.ID,
		Added: res.Undone.Added, Removed: res.Undone.Removed, Changed: res.Undone.Changed, Untouched: res.Untouched})
	return res, nil
}

// stopComputers stops the computers of the agent's sessions in this
// process, none of which may be running a turn.
func (r *Runtime) stopComputers(agentName string) error {
	r.mu.Lock()
	var engines []*engine
	for id, l := range r.live {
		if l.eng == nil || l.eng.agent != agentName {
			continue
		}
		if l.running {
			r.mu.Unlock()
			return fmt.Errorf("%w: session %s is running a turn on this computer: stop it or wait for it to end", store.ErrSessionBusy, id)
		}
	}
	for _, l := range r.live {
		if l.eng != nil && l.eng.agent == agentName {
			r.stopIdle(l)
			engines = append(engines, l.eng)
			l.eng = nil
		}
	}
	r.mu.Unlock()
	for _, e := range engines {
		e.close()
	}
	return nil
}
