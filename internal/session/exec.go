package session

import (
	"context"
	"fmt"

	"den.dev/den/internal/sandbox"
)

// Exec runs cmd in the session's computer as a process of its own,
// starting in its /workspace: a sandbox of its own beside the session's
// turns, with the session's folders and mounts but no host commands
// and no persistent shell (each Exec starts afresh; files stay). The
// computer's disk cap applies, and a capped output's whole is saved in
// the session's /den/offloads (Result.OffloadPath). It ends with ctx,
// or when the runtime closes.
func (r *Runtime) Exec(ctx context.Context, sessionID string, cmd sandbox.Command) (*sandbox.Result, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, ErrClosed
	}
	// Close waits for it, once it has canceled it.
	r.wg.Add(1)
	r.mu.Unlock()
	defer r.wg.Done()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(r.ctx, cancel)
	defer stop()

	sess, err := r.st.GetSession(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	comp, o, err := r.computer(ctx, sess.Agent)
	if err != nil {
		return nil, err
	}
	box, err := comp.Start(ctx, sess.ID, o)
	if err != nil {
		return nil, fmt.Errorf("session: start the computer of %s: %w", sess.ID, err)
	}
	defer box.Close()
	return box.Exec(ctx, cmd)
}
