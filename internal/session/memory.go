package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/memory"
	"den.dev/den/internal/models"
	"den.dev/den/internal/models/retry"
	"den.dev/den/internal/store"
)

// Memory is the memory of an agent, through its computer's memory
// folder (the computer is made when it does not exist yet).
func (r *Runtime) Memory(ctx context.Context, agentName string) (*memory.Book, error) {
	comp, _, err := r.computer(ctx, agentName)
	if err != nil {
		return nil, err
	}
	return r.bookOf(comp, agentName), nil
}

// PurposeRollup is the purpose of the model requests of a rollup.
const PurposeRollup = "memory-rollup"

// Rollup merges an agent's daily logs older than a week into its
// GLOBAL.md (see memory.Book.Rollup), asking the agent's model. The
// request and its answer are kept as a session of the agent titled
// "Memory rollup DATE", whose usage and cost are recorded like any
// other's; it returns that session's id ("" when there was nothing to
// roll up).
func (r *Runtime) Rollup(ctx context.Context, agentName string, now time.Time) (memory.Rolled, string, error) {
	b, err := r.Memory(ctx, agentName)
	if err != nil {
		return memory.Rolled{}, "", err
	}
	var sessionID string
	model := func(ctx context.Context, system, prompt string) (string, error) {
		text, id, err := r.oneShot(ctx, agentName, "", "Memory rollup "+now.Format("2006-01-02"), PurposeRollup, system, prompt, 4096)
		sessionID = id
		return text, err
	}
	rolled, err := b.Rollup(ctx, model, now)
	return rolled, sessionID, err
}

// ErrModel marks a request to a model that failed: the provider
// refused it, or its answer broke off. The model's side failed, not den.
var ErrModel = errors.New("the model failed")

// oneShot asks the agent's model (or model, a ref) one question
// outside any conversation, and keeps the question and its answer as a
// session of the agent with the given title, whose usage and cost are
// recorded like any other's under purpose. It returns the answer's
// text and that session's id ("" when none was made). A model that does
// not resolve is ErrBadOptions; a request that failed, ErrModel.
func (r *Runtime) oneShot(ctx context.Context, agentName, model, title, purpose, system, prompt string, maxTokens int) (string, string, error) {
	cfg := r.Config()
	res := &models.Resolver{Config: cfg}
	ref := firstNonEmpty(model, cfg.Agent(agentName).Model)
	var err error
	if ref == "" {
		if ref, err = res.Default(); err != nil {
			return "", "", fmt.Errorf("%w: %w", ErrBadOptions, err)
		}
	}
	targets, err := res.Resolve(ref)
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	policy, err := retryPolicy(cfg, 0)
	if err != nil {
		return "", "", err
	}
	chain := &retry.Model{Targets: targets, Open: models.Open, Policy: policy, Strategy: strategyOf(cfg, ref)}
	if err := r.st.EnsureAgent(ctx, agentName); err != nil {
		return "", "", err
	}
	sess, err := r.st.CreateSession(ctx, agentName, ref)
	if err != nil {
		return "", "", err
	}
	if err := r.st.SetTitle(ctx, sess.ID, title); err != nil {
		return "", sess.ID, err
	}
	question := llm.Message{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: prompt}}}
	if _, err := r.st.Append(ctx, sess.ID, question); err != nil {
		return "", sess.ID, err
	}
	var c llm.Collector
	start := time.Now()
	req := &llm.Request{Model: targets[0].Model, System: system, Messages: []llm.Message{question}, MaxTokens: maxTokens, Thinking: llm.ThinkingOff}
	for ev, err := range chain.Stream(ctx, req) {
		if err != nil {
			return "", sess.ID, fmt.Errorf("%w: %w", ErrModel, err)
		}
		c.Add(ev)
	}
	turn := c.Turn()
	if err := r.st.RecordUsage(context.WithoutCancel(ctx), store.UsageRecord{Session: sess.ID, Model: firstNonEmpty(turn.Model, targets[0].Ref),
		Purpose: purpose, InputTokens: turn.Usage.InputTokens, OutputTokens: turn.Usage.OutputTokens,
		CacheReadTokens: turn.Usage.CacheReadTokens, CacheWriteTokens: turn.Usage.CacheWriteTokens,
		CostUSD: priceOf(chain, turn.Model).Cost(turn.Usage), Latency: time.Since(start)}); err != nil {
		return "", sess.ID, fmt.Errorf("usage not recorded: %w", err)
	}
	if !turn.Done {
		return "", sess.ID, fmt.Errorf("%w: the answer broke off: %w", ErrModel, llm.ErrStream)
	}
	if _, err := r.st.Append(context.WithoutCancel(ctx), sess.ID, turn.Message); err != nil {
		return "", sess.ID, err
	}
	return llm.TextOf(turn.Message), sess.ID, nil
}
