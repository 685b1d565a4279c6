// Package agent is den's loop: it streams a turn from the model, commits
// the assistant message, runs the tool calls the turn asked for in the
// agent's computer, commits their results, and repeats until the model
// ends its turn, a limit is reached, or the run is canceled.
//
// Invariants:
//   - Write-ahead: a turn's assistant message, with its calls, is
//     committed before any call runs; each call's start, the tail of its
//     output and its result are recorded as they happen; the message
//     with every result is committed when the last call ends. A den
//     killed meanwhile leaves calls without results, which Repair (at
//     the next run, or the daemon's start) answers as interrupted, with
//     how long they ran and what they printed: the model knows what
//     already ran.
//   - Every tool call in committed history is answered by the next
//     message; a canceled turn commits synthetic results.
//   - Tool results are returned in call order, however the calls ran;
//     calls that may affect each other run in call order (see
//     Tools.Concurrent).
//   - Every request is recorded with the model that answered it: the
//     assistant message carries its model and usage, priced by that
//     model (Config.Cost), never by a shared "last answered" value.
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
	History(ctx context.Context, sessionID string) ([]llm.Message, error)
	// Append stores msgs below the session's head in one transaction,
	// with what meta says of them, and returns their ids.
	Append(ctx context.Context, sessionID string, meta Meta, msgs ...llm.Message) ([]string, error)
	// CallStarted and CallOutput record, lazily synced, that a call of
	// the assistant message messageID started, and that it was still
	// running at a time, having printed tail last.
	CallStarted(ctx context.Context, messageID, callID string, at time.Time) error
	CallOutput(ctx context.Context, messageID, callID, tail string, at time.Time) error
	// CallFinished records a call's result durably, before the message
	// holding the turn's results.
	CallFinished(ctx context.Context, messageID string, r CallRecord) error
	// OpenCalls returns the session's head message when it is an
	// assistant message whose calls have no results message, with what
	// was recorded of each ("" when there is none).
	OpenCalls(ctx context.Context, sessionID string) (messageID string, calls []OpenCall, err error)
}

// Meta is what the loop knows of messages it stores.
type Meta struct {
	// Model is the model that answered (for an assistant message).
	Model string
	// Usage is the request that produced the assistant message, priced
	// at CostUSD, which took Latency.
	Usage   *llm.Usage
	CostUSD float64
	Latency time.Duration
	// Breakdown shares the request's input tokens among its parts
	// (system prompt sections, tools, history, attachments).
	Breakdown map[string]int64
	// Deliver appends the messages queued for the session after the
	// messages, each a user message of its own, in the same transaction;
	// Delivered, when set, receives their ids. With Deliver the messages
	// may be none: only the queue is delivered.
	Deliver   bool
	Delivered *[]string
}

// CallRecord is a finished call.
type CallRecord struct {
	Result   llm.ToolResult
	Duration time.Duration
	ExitCode *int
}

// OpenCall is a call den stopped before it was answered.
type OpenCall struct {
	Call     llm.ToolCall
	Started  time.Time       // zero: it never started
	Seen     time.Time       // the last time den saw it running; zero: unknown
	Result   *llm.ToolResult // it finished: its result
	Duration time.Duration
	ExitCode *int
	Output   string // the tail of what it printed
}

// Tools runs the model's tool calls.
type Tools interface {
	Specs() []llm.Tool
	// Concurrent says whether call may run beside the other calls of
	// its turn: it reads only, and nothing another call does can change
	// what it sees (file reads; shell commands that read only and do not
	// change the shell's own state). Every other call runs alone, in
	// call order.
	Concurrent(call *llm.ToolCall) bool
	Call(ctx context.Context, call *llm.ToolCall, o CallOptions) Outcome
}

// CallOptions are how one call runs.
type CallOptions struct {
	// Concurrent says the call runs beside others (shell commands then
	// run as fresh processes).
	Concurrent bool
	// Output receives what the call prints, as it prints it (for the
	// write-ahead record); it must not block.
	Output func(text string)
	// MessageID is the stored assistant message that made the call.
	MessageID string
}

// Outcome is a call's result and what else it left.
type Outcome struct {
	Result   llm.ToolResult
	ExitCode *int // a shell command's exit status
}

// Config is one run's wiring.
type Config struct {
	Model llm.Model
	// ModelName is the API name of the first model tried; ModelRef its
	// reference (provider/model), which prices estimates.
	ModelName string
	ModelRef  string
	Store     Store
	Tools     Tools
	System    string
	// Sections, when set, are the parts System is made of (in order,
	// joined with newlines), named for the breakdown of each request's
	// tokens.
	Sections  []Section
	MaxTurns  int // 0: DefaultMaxTurns
	MaxTokens int
	Thinking  llm.ThinkingLevel
	// Emit receives the run's events.
	Emit func(Event)
	// OnUsage is told about a request's usage that no stored message
	// carries (a stream that failed after it was billed).
	OnUsage func(model string, u llm.Usage, latency time.Duration)
	// Cost prices a request's usage in USD by the model that answered
	// it (nil: unknown, 0).
	Cost func(model string, u llm.Usage) float64
	// MaxParallel bounds tool calls running at once (0: 10).
	MaxParallel int
	// Budget stops the run before a request would cross it.
	Budget Budget
	// Context, when set, manages what of the history fits the model's
	// window; without it the whole history is sent.
	Context *Context
	// LoopGuard sets the loop detector's thresholds (zero: defaults).
	LoopGuard loopguard.Config
	// Halt, when set, is asked at each turn boundary (a turn's results
	// committed, before the next request): true ends the run there with
	// ErrHalted. den stopping lets running calls end this way.
	Halt func() bool
}

func (cfg *Config) cost(model string, u llm.Usage) float64 {
	if cfg.Cost == nil {
		return 0
	}
	return cfg.Cost(model, u)
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
	ErrHalted   = errors.New("halted at a turn boundary: den is stopping")
)

// ErrNothingToDo is Run's error when it was given no prompt and nothing
// was queued for the session.
var ErrNothingToDo = errors.New("no message to answer")

// Run sends prompt in the session, with the messages queued for it, and
// runs the loop until the model ends its turn. A prompt without parts
// sends only what is queued (ErrNothingToDo when nothing is).
func Run(ctx context.Context, cfg Config, sessionID string, prompt llm.Message) (Result, error) {
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = DefaultMaxTurns
	}
	if cfg.Emit == nil {
		cfg.Emit = func(Event) {}
	}
	if n, err := Repair(ctx, cfg.Store, sessionID); err != nil {
		return Result{}, err
	} else if n > 0 {
		cfg.Emit(&WarningEvent{Message: fmt.Sprintf("%d tool call(s) of the last turn were interrupted when den stopped; the model is told", n)})
	}
	prompted, err := appendUser(ctx, cfg, sessionID, prompt)
	if err != nil {
		return Result{}, fmt.Errorf("agent: save prompt: %w", err)
	}
	if !prompted {
		return Result{}, ErrNothingToDo
	}
	return loop(ctx, cfg, sessionID)
}

// Continue runs the loop from the session's history as it stands, whose
// last message must be the user's: a regenerated answer, after the head
// was moved back to the message it answers.
func Continue(ctx context.Context, cfg Config, sessionID string) (Result, error) {
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = DefaultMaxTurns
	}
	if cfg.Emit == nil {
		cfg.Emit = func(Event) {}
	}
	if _, err := Repair(ctx, cfg.Store, sessionID); err != nil {
		return Result{}, err
	}
	history, err := cfg.Store.History(ctx, sessionID)
	if err != nil {
		return Result{}, fmt.Errorf("agent: %w", err)
	}
	if len(history) == 0 || history[len(history)-1].Role != llm.User {
		return Result{}, ErrNothingToDo
	}
	return loop(ctx, cfg, sessionID)
}

// loop runs model turns and their calls until the model ends its turn.
func loop(ctx context.Context, cfg Config, sessionID string) (Result, error) {
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
		ids, err := commit(ctx, cfg, sessionID, turn.meta, turn.Message)
		if err != nil {
			return res, fmt.Errorf("agent: save turn: %w", err)
		}
		calls := llm.Calls(turn.Message)
		if len(calls) == 0 {
			return res, nil
		}
		results, err := runCalls(ctx, cfg, guard, ids[0], calls)
		if err != nil {
			return res, err
		}
		if _, err := appendUser(ctx, cfg, sessionID, results); err != nil {
			return res, fmt.Errorf("agent: save results: %w", err)
		}
		if ctx.Err() != nil {
			return res, ErrCanceled
		}
		if cfg.Halt != nil && cfg.Halt() {
			return res, ErrHalted
		}
	}
	return res, ErrMaxTurns
}

// appendUser stores a user message (a prompt, or a turn's results; none
// when msg has no parts) with the messages queued for the session
// (den-sessions send, a face's message sent while the turn ran), which
// thus reach the model at this turn boundary, never in the middle of a
// turn. It reports whether anything was stored.
func appendUser(ctx context.Context, cfg Config, sessionID string, msg llm.Message) (bool, error) {
	var msgs []llm.Message
	if len(msg.Parts) > 0 {
		msgs = append(msgs, msg)
	}
	var delivered []string
	ids, err := commit(ctx, cfg, sessionID, Meta{Deliver: true, Delivered: &delivered}, msgs...)
	if err != nil {
		return false, err
	}
	for _, id := range delivered {
		cfg.Emit(&MessageEvent{ID: id, Role: llm.User, Queued: true})
	}
	return len(ids)+len(delivered) > 0, nil
}

// commit appends msgs to the session and tells the faces.
func commit(ctx context.Context, cfg Config, sessionID string, meta Meta, msgs ...llm.Message) ([]string, error) {
	ids, err := cfg.Store.Append(context.WithoutCancel(ctx), sessionID, meta, msgs...)
	if err != nil {
		return nil, err
	}
	for i, id := range ids {
		cfg.Emit(&MessageEvent{ID: id, Role: msgs[i].Role})
	}
	return ids, nil
}

// turn is a streamed turn with what storing it needs.
type turn struct {
	llm.Turn
	meta Meta
}

// step streams one model turn from the stored history.
func step(ctx context.Context, cfg Config, sessionID string, m *meter, compactions *int) (turn, error) {
	msgs, use, err := request(ctx, cfg, sessionID, compactions)
	if err != nil {
		return turn{}, err
	}
	est := int64(use.Estimated)
	if cfg.Context == nil {
		est = int64(ctxwin.Estimate(msgs, cfg.System, cfg.Tools.Specs()))
	}
	if err := m.check(est, func(u llm.Usage) float64 { return cfg.cost(cfg.ModelRef, u) }); err != nil {
		return turn{}, err
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
		req.InputTokens = int64(use.Estimated)
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
	t := turn{Turn: c.Turn()}
	t.meta.Model = firstNonEmpty(t.Model, cfg.ModelRef)
	if t.Usage != (llm.Usage{}) {
		u := t.Usage
		t.meta.Usage, t.meta.Latency, t.meta.CostUSD = &u, time.Since(start), cfg.cost(t.meta.Model, u)
		if cfg.Context != nil {
			w := cfg.Context.Window
			w.Calibrator.Observe(t.meta.Model, use.Raw, u)
		}
		m.add(u, t.meta.CostUSD)
		t.meta.Breakdown = apportion(breakdown(cfg, msgs, req.Tools), u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens)
		cfg.Emit(&UsageEvent{Usage: u, CostUSD: t.meta.CostUSD, Context: use, Model: t.meta.Model, Latency: t.meta.Latency, Breakdown: t.meta.Breakdown})
	}
	switch {
	case ctx.Err() != nil:
		// Keep what was said; drop calls (none ran).
		partial := textOnly(t.Message)
		if len(partial.Parts) > 0 {
			if _, err := commit(ctx, cfg, sessionID, t.meta, partial); err != nil {
				return t, fmt.Errorf("agent: save the interrupted answer: %w", err)
			}
		} else if t.meta.Usage != nil {
			t.unstored(cfg)
		}
		return t, ErrCanceled
	case streamErr != nil:
		t.unstored(cfg)
		return t, streamErr
	case !t.Done:
		t.unstored(cfg)
		return t, fmt.Errorf("agent: %w: the stream ended without a stop reason", llm.ErrStream)
	}
	return t, nil
}

// unstored hands a request's usage that no message will carry to
// OnUsage.
func (t turn) unstored(cfg Config) {
	if t.meta.Usage != nil && cfg.OnUsage != nil {
		cfg.OnUsage(t.meta.Model, *t.meta.Usage, t.meta.Latency)
	}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
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
