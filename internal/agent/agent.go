// Package agent is den's loop: it streams a turn from the model, runs
// the tool calls the turn asked for in the agent's computer, commits the
// assistant message and its tool results together, and repeats until
// the model ends its turn, a limit is reached, or the run is canceled.
//
// Invariants:
//   - Every tool call in committed history has exactly one result: a
//     turn's assistant message and its results are appended in one
//     transaction, and a canceled turn commits synthetic results.
//   - Tool results are returned in call order, however the calls ran.
//   - Events reach Emit in the order they happened; Emit must not block.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"den.dev/den/internal/agent/ctxwin"
	"den.dev/den/internal/agent/loopguard"
	"den.dev/den/internal/llm"
)

// Store is the part of den's state the loop needs.
type Store interface {
	Append(ctx context.Context, sessionID string, msgs ...llm.Message) ([]string, error)
	History(ctx context.Context, sessionID string) ([]llm.Message, error)
}

// Tools runs the model's tool calls.
type Tools interface {
	Specs() []llm.Tool
	// ReadOnly says whether call may run beside others (reads, and shell
	// commands, which then get a fresh process each).
	Concurrent(call *llm.ToolCall) bool
	Call(ctx context.Context, call *llm.ToolCall, concurrent bool) llm.ToolResult
}

// Config is one run's wiring.
type Config struct {
	Model     llm.Model
	ModelName string
	Store     Store
	Tools     Tools
	System    string
	MaxTurns  int // 0: DefaultMaxTurns
	MaxTokens int
	Thinking  llm.ThinkingLevel
	// Emit receives the run's events.
	Emit func(Event)
	// OnUsage is told about each request's usage (for storage).
	OnUsage func(u llm.Usage, latency time.Duration)
	// Cost prices a request's usage in USD (nil: unknown, 0).
	Cost func(u llm.Usage) float64
	// MaxParallel bounds tool calls running at once (0: 10).
	MaxParallel int
	// Budget stops the run before a request would cross it.
	Budget Budget
	// Context, when set, manages what of the history fits the model's
	// window; without it the whole history is sent.
	Context *Context
	// LoopGuard sets the loop detector's thresholds (zero: defaults).
	LoopGuard loopguard.Config
}

// DefaultMaxTurns bounds the model turns of one run.
const DefaultMaxTurns = 200

// Result is how a run ended.
type Result struct {
	Stop  llm.StopReason // the model's own stop reason of its last turn
	Text  string         // the final answer (text of the last turn)
	Turns int
}

// Errors that end a run.
var (
	ErrMaxTurns = errors.New("turn limit reached")
	ErrCanceled = errors.New("canceled")
)

// Run sends prompt in the session and runs the loop until the model
// ends its turn.
func Run(ctx context.Context, cfg Config, sessionID string, prompt llm.Message) (Result, error) {
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = DefaultMaxTurns
	}
	if cfg.Emit == nil {
		cfg.Emit = func(Event) {}
	}
	prompt, err := repair(ctx, cfg.Store, sessionID, prompt)
	if err != nil {
		return Result{}, err
	}
	if _, err := cfg.Store.Append(ctx, sessionID, prompt); err != nil {
		return Result{}, fmt.Errorf("agent: save prompt: %w", err)
	}
	var res Result
	m := &meter{b: cfg.Budget}
	compactions := 0
	guard := loopguard.New(cfg.LoopGuard)
	for res.Turns < cfg.MaxTurns {
		res.Turns++
		turn, err := step(ctx, cfg, sessionID, m, &compactions)
		if err != nil {
			return res, err
		}
		res.Stop, res.Text = turn.Stop, llm.TextOf(turn.Message)
		calls := llm.Calls(turn.Message)
		if len(calls) == 0 {
			if _, err := cfg.Store.Append(context.WithoutCancel(ctx), sessionID, turn.Message); err != nil {
				return res, fmt.Errorf("agent: save answer: %w", err)
			}
			return res, nil
		}
		results := runCalls(ctx, cfg, guard, calls)
		if _, err := cfg.Store.Append(context.WithoutCancel(ctx), sessionID, turn.Message, results); err != nil {
			return res, fmt.Errorf("agent: save turn: %w", err)
		}
		if ctx.Err() != nil {
			return res, ErrCanceled
		}
	}
	return res, ErrMaxTurns
}

// step streams one model turn from the stored history.
func step(ctx context.Context, cfg Config, sessionID string, m *meter, compactions *int) (llm.Turn, error) {
	msgs, use, err := request(ctx, cfg, sessionID, compactions)
	if err != nil {
		return llm.Turn{}, err
	}
	est := int64(use.Estimated)
	if cfg.Context == nil {
		est = int64(ctxwin.Estimate(msgs, cfg.System, cfg.Tools.Specs()))
	}
	if err := m.check(est, cfg.Cost); err != nil {
		return llm.Turn{}, err
	}
	req := &llm.Request{
		Model:     cfg.ModelName,
		System:    cfg.System,
		Messages:  msgs,
		Tools:     cfg.Tools.Specs(),
		MaxTokens: cfg.MaxTokens,
		Thinking:  cfg.Thinking,
		CacheKey:  sessionID,
	}
	if cfg.Context != nil {
		if limit := cfg.Context.Window.Budget.MaxTokens(use.Estimated); limit > 0 && (req.MaxTokens == 0 || limit < req.MaxTokens) {
			req.MaxTokens = limit
		}
	}
	var c llm.Collector
	start := time.Now()
	var streamErr error
	for ev, err := range cfg.Model.Stream(ctx, req) {
		if err != nil {
			streamErr = err
			break
		}
		c.Add(ev)
		emitStream(cfg.Emit, ev)
	}
	turn := c.Turn()
	if cfg.OnUsage != nil && (turn.Usage != llm.Usage{}) {
		cfg.OnUsage(turn.Usage, time.Since(start))
	}
	if cfg.Context != nil && turn.Usage != (llm.Usage{}) {
		w := cfg.Context.Window
		w.Calibrator.Observe(w.Model, use.Raw, turn.Usage)
	}
	if turn.Usage != (llm.Usage{}) {
		ev := &UsageEvent{Usage: turn.Usage, Context: use}
		if cfg.Cost != nil {
			ev.CostUSD = cfg.Cost(turn.Usage)
		}
		m.add(turn.Usage, ev.CostUSD)
		cfg.Emit(ev)
	}
	switch {
	case ctx.Err() != nil:
		// Keep what was said; drop calls (none ran).
		partial := textOnly(turn.Message)
		if len(partial.Parts) > 0 {
			cfg.Store.Append(context.WithoutCancel(ctx), sessionID, partial)
		}
		return turn, ErrCanceled
	case streamErr != nil:
		return turn, streamErr
	case !turn.Done:
		return turn, fmt.Errorf("agent: %w: the stream ended without a stop reason", llm.ErrStream)
	}
	return turn, nil
}

func textOnly(m llm.Message) llm.Message {
	out := llm.Message{Role: llm.Assistant}
	for _, p := range m.Parts {
		if t, ok := p.(*llm.Text); ok {
			out.Parts = append(out.Parts, t)
		}
	}
	return out
}

func emitStream(emit func(Event), ev llm.Event) {
	switch e := ev.(type) {
	case *llm.TextDelta:
		emit(&TextEvent{Text: e.Text})
	case *llm.ThinkingDelta:
		emit(&ThinkingEvent{Text: e.Text})
	case *llm.Retry:
		emit(&RetryEvent{Attempt: e.Attempt, Delay: e.Delay, Reason: e.Reason, Model: e.Model})
	case *llm.Answered:
		emit(&ModelEvent{Model: e.Model})
	}
}

// inputJSON keeps valid JSON as is and quotes anything else, so that an
// event always marshals.
func inputJSON(in json.RawMessage) json.RawMessage {
	if json.Valid(in) {
		return in
	}
	b, _ := json.Marshal(string(in))
	return b
}
