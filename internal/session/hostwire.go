package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"den.dev/den/internal/config"
	"den.dev/den/internal/hostsvc"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/models"
	"den.dev/den/internal/models/retry"
	"den.dev/den/internal/store"
)

// hostSessions gives den-sessions the calling agent's sessions.
type hostSessions struct{ st *store.Store }

func (h hostSessions) List(ctx context.Context, agent string) ([]hostsvc.SessionInfo, error) {
	list, err := h.st.ListSessions(ctx, agent, 100)
	if err != nil {
		return nil, err
	}
	out := make([]hostsvc.SessionInfo, len(list))
	for i, s := range list {
		out[i] = hostsvc.SessionInfo{ID: s.ID, Title: s.Title, Model: s.Model, Updated: s.Updated}
	}
	return out, nil
}

// own finds a session of the agent; another agent's session is "not
// found", never revealed.
func (h hostSessions) own(ctx context.Context, agent, id string) (store.Session, error) {
	s, err := h.st.GetSession(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && s.Agent != agent) {
		return store.Session{}, fmt.Errorf("no session %q", id)
	}
	return s, err
}

func (h hostSessions) Show(ctx context.Context, agent, id string) (hostsvc.SessionInfo, []hostsvc.SessionMessage, error) {
	s, err := h.own(ctx, agent, id)
	if err != nil {
		return hostsvc.SessionInfo{}, nil, err
	}
	hist, err := h.st.History(ctx, id)
	if err != nil {
		return hostsvc.SessionInfo{}, nil, err
	}
	var msgs []hostsvc.SessionMessage
	for _, m := range Transcript(hist) {
		msgs = append(msgs, hostsvc.SessionMessage{Role: m["role"], Text: m["text"]})
	}
	return hostsvc.SessionInfo{ID: s.ID, Title: s.Title, Model: s.Model, Updated: s.Updated}, msgs, nil
}

// Search finds the agent's sessions whose messages hold the words of
// q (full-text, every message of every session), the best match first,
// each with a snippet around the words.
func (h hostSessions) Search(ctx context.Context, agent, q string) ([]hostsvc.Hit, error) {
	found, err := h.st.SearchMessages(ctx, agent, q, 20)
	if err != nil {
		return nil, err
	}
	hits := make([]hostsvc.Hit, len(found))
	for i, f := range found {
		hits[i] = hostsvc.Hit{Session: f.Session, Title: f.Title, Snippet: f.Snippet}
	}
	return hits, nil
}

// Send queues a message, marked as coming from this session, for
// another session (of this agent, or of another agent: then the
// message also names this agent): it joins that session's conversation
// at its next turn boundary (the running turn's end, or its next run),
// never in the middle of a turn. The gate asks before every send.
func (h hostSessions) Send(ctx context.Context, agent, from, id, message string) error {
	s, err := h.st.GetSession(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("no session %q", id)
	}
	if err != nil {
		return err
	}
	q := store.Queued{Session: id, FromSession: from, Text: message}
	if s.Agent != agent {
		q.FromAgent = agent
	}
	_, err = h.st.EnqueueMessage(ctx, q)
	return err
}

// hostModels gives den-model the agent's allow-listed models.
type hostModels struct {
	res     *models.Resolver
	allowed []string
	st      *store.Store
	session string
}

func (h hostModels) List() []hostsvc.ModelInfo {
	var out []hostsvc.ModelInfo
	for _, ref := range h.allowed {
		ts, err := h.res.Resolve(ref)
		if err != nil || len(ts) == 0 {
			continue
		}
		out = append(out, hostsvc.ModelInfo{Ref: ref, Images: ts[0].Info.Images})
	}
	return out
}

func (h hostModels) Run(ctx context.Context, r hostsvc.ModelRequest) (hostsvc.ModelAnswer, error) {
	targets, err := h.res.Resolve(r.Ref)
	if err != nil {
		return hostsvc.ModelAnswer{}, err
	}
	m := &retry.Model{Targets: targets, Open: models.Open}
	parts := []llm.Part{&llm.Text{Text: r.Prompt}}
	if r.Image != nil {
		parts = append(parts, &llm.Image{MediaType: r.ImageType, Data: r.Image})
	}
	req := &llm.Request{System: r.System, MaxTokens: r.MaxTokens, Messages: []llm.Message{{Role: llm.User, Parts: parts}}}
	var c llm.Collector
	start := time.Now()
	for ev, err := range m.Stream(ctx, req) {
		if err != nil {
			return hostsvc.ModelAnswer{}, err
		}
		c.Add(ev)
	}
	turn := c.Turn()
	cost := priceOf(m, turn.Model).Cost(turn.Usage)
	if err := h.st.RecordUsage(context.WithoutCancel(ctx), store.UsageRecord{Session: h.session, Model: turn.Model, Purpose: "den-model",
		InputTokens: turn.Usage.InputTokens, OutputTokens: turn.Usage.OutputTokens, CacheReadTokens: turn.Usage.CacheReadTokens,
		CacheWriteTokens: turn.Usage.CacheWriteTokens, CostUSD: cost, Latency: time.Since(start)}); err != nil {
		return hostsvc.ModelAnswer{}, fmt.Errorf("the answer came, but its cost could not be recorded: %w", err)
	}
	return hostsvc.ModelAnswer{Model: turn.Model, Text: llm.TextOf(turn.Message), InputTokens: turn.Usage.InputTokens,
		OutputTokens: turn.Usage.OutputTokens, CostUSD: cost}, nil
}

// hostConfig gives den-config the config file: reads with secrets
// masked, and the few settings an agent may change in its own section
// (config.AgentSettable), each change planned, shown and then made
// exactly, through the TOML encoder.
type hostConfig struct{ path string }

func (h hostConfig) Get(key string) (string, error) { return config.Get(h.path, key) }

func (h hostConfig) Plan(agent, key, value string) (string, func() (string, error), error) {
	set, err := config.AgentSettable(agent, key)
	if err != nil {
		return "", nil, err
	}
	if err := set.Check(value); err != nil {
		return "", nil, err
	}
	ch, err := config.PlanSet(h.path, set.Key, value)
	if err != nil {
		return "", nil, err
	}
	apply := func() (string, error) {
		done, err := config.SetValueIf(h.path, set.Key, value, ch)
		if err != nil {
			return "", err
		}
		if !done.OldSet {
			return "", nil
		}
		return done.Old, nil
	}
	return ch.String(), apply, nil
}
