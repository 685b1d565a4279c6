package session

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/event"
	"den.dev/den/internal/hostsvc"
	"den.dev/den/internal/store"
)

// hostAgents gives den-agent the calling session's sub-agents and the
// other agents' inboxes.
type hostAgents struct{ r *Runtime }

var _ hostsvc.Agents = hostAgents{}

func (h hostAgents) Run(ctx context.Context, session string, req hostsvc.SpawnRequest) (hostsvc.Subagent, error) {
	s, err := h.r.RunSubagent(ctx, session, SpawnOptions{Task: req.Task, Profile: req.Profile, Agent: req.Agent})
	return shown(s), agentError(err)
}

func (h hostAgents) Spawn(ctx context.Context, session string, req hostsvc.SpawnRequest) (hostsvc.Subagent, error) {
	c, err := h.r.Spawn(ctx, session, SpawnOptions{Task: req.Task, Profile: req.Profile, Agent: req.Agent, Report: true})
	if err != nil {
		return hostsvc.Subagent{}, agentError(err)
	}
	s, err := h.r.SubagentStatus(ctx, session, c.ID)
	return shown(s), agentError(err)
}

func (h hostAgents) Status(ctx context.Context, session, id string) (hostsvc.Subagent, error) {
	s, err := h.r.SubagentStatus(ctx, session, id)
	return shown(s), agentError(err)
}

func (h hostAgents) Wait(ctx context.Context, session, id string) (hostsvc.Subagent, error) {
	s, err := h.r.WaitSubagent(ctx, session, id)
	return shown(s), agentError(err)
}

func (h hostAgents) Steer(ctx context.Context, session, id, message string) (hostsvc.Subagent, error) {
	if _, err := h.r.Steer(ctx, session, id, message); err != nil {
		return hostsvc.Subagent{}, agentError(err)
	}
	s, err := h.r.SubagentStatus(ctx, session, id)
	return shown(s), agentError(err)
}

func (h hostAgents) Cancel(ctx context.Context, session, id string) (hostsvc.Subagent, error) {
	s, err := h.r.CancelSubagent(ctx, session, id)
	return shown(s), agentError(err)
}

func (h hostAgents) List(ctx context.Context, session string) ([]hostsvc.Subagent, error) {
	list, err := h.r.Subagents(ctx, session)
	if err != nil {
		return nil, agentError(err)
	}
	out := make([]hostsvc.Subagent, len(list))
	for i, s := range list {
		out[i] = shown(s)
	}
	return out, nil
}

func (h hostAgents) Send(ctx context.Context, fromAgent, fromSession, to, message string) (string, error) {
	inbox, err := h.r.SendToAgent(ctx, fromAgent, fromSession, to, message)
	return inbox, agentError(err)
}

// shown is a sub-agent as den-agent prints it.
func shown(s Subagent) hostsvc.Subagent {
	if s.ID == "" {
		return hostsvc.Subagent{}
	}
	status := s.Status
	if status == "" {
		status = "idle"
	}
	return hostsvc.Subagent{ID: s.ID, Agent: s.Agent, Profile: s.Profile, Task: s.Title, Status: status, Done: !s.Running,
		Ended: s.Ended, Error: s.Error, Answer: s.Answer, CostUSD: s.Usage.CostUSD, Tokens: tokensOf(s.Usage)}
}

// agentError gives an error den-agent's envelope code.
func agentError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrSubagentLimit):
		return &hostsvc.AgentError{Code: hostsvc.CodeLimit, Message: err.Error()}
	case errors.Is(err, ErrBadOptions):
		return &hostsvc.AgentError{Code: hostsvc.CodeInvalidArgs, Message: err.Error()}
	case errors.Is(err, store.ErrNotFound):
		return &hostsvc.AgentError{Code: hostsvc.CodeNoData, Message: err.Error()}
	case errors.Is(err, ErrClosed):
		return &hostsvc.AgentError{Code: hostsvc.CodeNotAvailable, Message: "den is stopping"}
	}
	return err
}

// SendToAgent puts a message from a session of fromAgent into the
// inbox of agent to: a session of that agent (made at the first
// message) that a watching den (den serve) runs like any session with
// a queued message. The message says which agent and session sent it,
// so the other agent can answer with den-sessions send or den-agent
// send. It returns the inbox's id.
func (r *Runtime) SendToAgent(ctx context.Context, fromAgent, fromSession, to, text string) (string, error) {
	if err := computer.ValidName("agent", to); err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	if known, err := r.knownAgent(ctx, to); err != nil {
		return "", err
	} else if !known {
		return "", fmt.Errorf("%w: no agent %q", store.ErrNotFound, to)
	}
	model := r.Config().Agent(to).Model
	if model == "" {
		var err error
		if model, err = r.ModelRef(store.Session{Agent: to}, ""); err != nil {
			return "", fmt.Errorf("%w: %w", ErrBadOptions, err)
		}
	}
	inbox, _, err := r.st.Inbox(ctx, to, model)
	if err != nil {
		return "", err
	}
	q, err := r.st.EnqueueMessage(ctx, store.Queued{Session: inbox.ID, FromSession: fromSession, FromAgent: fromAgent, Text: text})
	if err != nil {
		return "", err
	}
	r.emit(inbox.ID, &event.QueuedMessage{MessageID: q.MessageID, Text: text})
	return inbox.ID, nil
}

// knownAgent reports whether den knows an agent of that name: in the
// config, or in the store (it has had sessions), or the default one.
func (r *Runtime) knownAgent(ctx context.Context, name string) (bool, error) {
	if _, ok := r.Config().Agents[name]; ok || name == "default" {
		return true, nil
	}
	known, err := r.st.Agents(ctx)
	return slices.Contains(known, name), err
}
