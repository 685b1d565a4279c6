package session

import (
	"context"
	"fmt"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/memory"
	"den.dev/den/internal/store"
)

// Regenerate answers again: for an assistant message, what it answered
// (the head moves back to its parent); for a user message, that message
// (the head moves to it). The old answer stays, as another version below
// the same message.
func (r *Runtime) Regenerate(ctx context.Context, sessionID, messageID string, opts TurnOptions) (Sent, error) {
	m, err := r.message(ctx, sessionID, messageID)
	if err != nil {
		return Sent{}, err
	}
	target := m.ID
	if m.Message.Role == llm.Assistant {
		target = m.ParentID
	}
	if target == "" {
		return Sent{}, fmt.Errorf("%w: message %s answers nothing", ErrBadOptions, messageID)
	}
	return r.branch(ctx, sessionID, target, nil, opts)
}

// Edit sends text in place of a user message: a new version below the
// same parent, answered anew. The old message and what followed it stay.
func (r *Runtime) Edit(ctx context.Context, sessionID, messageID, text string, opts TurnOptions) (Sent, error) {
	m, err := r.message(ctx, sessionID, messageID)
	if err != nil {
		return Sent{}, err
	}
	if m.Message.Role != llm.User {
		return Sent{}, fmt.Errorf("%w: message %s is the agent's; only a user message can be edited", ErrBadOptions, messageID)
	}
	if text == "" {
		return Sent{}, fmt.Errorf("%w: empty message", ErrBadOptions)
	}
	return r.branch(ctx, sessionID, m.ParentID, &Message{Text: text}, opts)
}

// Switch shows another version: the head moves to the end of the newest
// branch below messageID.
func (r *Runtime) Switch(ctx context.Context, sessionID, messageID string) error {
	if _, err := r.message(ctx, sessionID, messageID); err != nil {
		return err
	}
	lock, err := r.st.LockSession(ctx, sessionID, r.o.Holder, false)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	if r.Running(sessionID) {
		return fmt.Errorf("%w: a turn runs", store.ErrSessionBusy)
	}
	leaf, err := r.st.Leaf(ctx, sessionID, messageID)
	if err != nil {
		return err
	}
	return r.st.SetHead(ctx, sessionID, leaf)
}

func (r *Runtime) message(ctx context.Context, sessionID, messageID string) (store.StoredMessage, error) {
	m, err := r.st.GetMessage(ctx, messageID)
	if err != nil {
		return m, err
	}
	if m.Session != sessionID {
		return m, fmt.Errorf("message %s of session %s: %w", messageID, sessionID, store.ErrNotFound)
	}
	return m, nil
}

// branch moves the head to head ("" for a new first message) and runs:
// m when given, else from the head. The session must be idle.
func (r *Runtime) branch(ctx context.Context, sessionID, head string, m *Message, opts TurnOptions) (Sent, error) {
	if r.halting.Load() {
		return Sent{}, ErrClosed
	}
	l, err := r.load(sessionID)
	if err != nil {
		return Sent{}, err
	}
	if r.Running(sessionID) {
		return Sent{}, fmt.Errorf("%w: a turn runs; cancel it first", store.ErrSessionBusy)
	}
	lock, err := r.st.LockSession(ctx, sessionID, r.o.Holder, false)
	if err != nil {
		return Sent{}, err
	}
	// What the new version replaces on the path leaves the agent's
	// memory: a fact an answer wrote is taken back when the user asks
	// for another answer.
	sess, err := r.st.GetSession(ctx, sessionID)
	if err != nil {
		lock.Unlock()
		return Sent{}, err
	}
	replaced, err := r.afterOnPath(ctx, sessionID, head)
	if err != nil {
		lock.Unlock()
		return Sent{}, err
	}
	if err := r.st.SetHead(ctx, sessionID, head); err != nil {
		lock.Unlock()
		return Sent{}, err
	}
	r.forget(ctx, sess.Agent, sessionID, func(b *memory.Book) (int, error) { return b.Revoke(ctx, replaced) })
	var sent Sent
	if m != nil {
		q, err := r.enqueue(ctx, sess, *m)
		if err != nil {
			lock.Unlock()
			return Sent{}, err
		}
		sent.MessageID = q.MessageID
	}
	done := make(chan Outcome, 1)
	sent.Done = done
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || l.running {
		lock.Unlock()
		return Sent{}, fmt.Errorf("%w: a turn started meanwhile", store.ErrSessionBusy)
	}
	l.running, l.opts, l.cont = true, opts, m == nil
	l.done = append(l.done, done)
	r.startWorker(l, lock)
	return sent, nil
}

// afterOnPath lists the messages of the session's current path after
// the message head ("" for the whole path).
func (r *Runtime) afterOnPath(ctx context.Context, sessionID, head string) ([]string, error) {
	path, err := r.st.Path(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	var ids []string
	after := head == ""
	for _, m := range path {
		if after {
			ids = append(ids, m.ID)
		}
		if m.ID == head {
			after = true
		}
	}
	return ids, nil
}

// forget takes entries out of the memory of the agent, through its
// computer's memory folder; a failure is told to the session's faces,
// never fatal.
func (r *Runtime) forget(ctx context.Context, agentName, sessionID string, revoke func(*memory.Book) (int, error)) {
	comp, _, err := r.computer(ctx, agentName)
	if err == nil {
		_, err = revoke(r.bookOf(comp, agentName))
	}
	if err != nil {
		r.emit(sessionID, &agent.WarningEvent{Message: "memory: entries of replaced messages were not taken back: " + err.Error()})
	}
}
