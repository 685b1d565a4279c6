package retry

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net"
	"net/url"
	"strings"
	"time"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/models"
)

// Policy is how long to wait and how often to retry. A zero field takes
// its default.
type Policy struct {
	// Delays are the waits before the 1st, 2nd, ... retry on the same
	// target; once used up the next target answers. nil means
	// DefaultDelays; an empty non-nil slice means no retries.
	Delays []time.Duration
	// Stall aborts an attempt when no stream event arrives within it
	// (time to first byte included). 0 means DefaultStall; negative
	// turns the watchdog off.
	Stall time.Duration
	// MaxRetryAfter caps a server's Retry-After: a longer wait is not
	// taken, the next target answers instead. 0 means
	// DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
}

// The defaults.
var (
	DefaultDelays = []time.Duration{3 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second}
)

// More defaults.
const (
	DefaultStall         = 120 * time.Second
	DefaultMaxRetryAfter = 5 * time.Minute
)

func (p Policy) withDefaults() Policy {
	if p.Delays == nil {
		p.Delays = DefaultDelays
	}
	if p.Stall == 0 {
		p.Stall = DefaultStall
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = DefaultMaxRetryAfter
	}
	return p
}

// The strategies.
const (
	// StrategyFallback retries the retryable classes on the same target
	// before the next one answers (the default).
	StrategyFallback = "fallback"
	// StrategyAlways moves to the next target at once on any failure
	// but a terminal one; the last target still retries.
	StrategyAlways = "always"
)

// Model is an llm.Model that retries and falls back over its targets.
// It holds no state between turns and is safe for concurrent use: which
// target answered a turn is in the turn's own stream (the last
// *llm.Answered before Done, which llm.Collector keeps as Turn.Model);
// Target looks up what den knows of it.
type Model struct {
	// Targets are tried in order. One with no API key is skipped unless
	// its base URL is a server on this machine.
	Targets []models.Target
	// Open builds a target's adapter; nil means models.Open.
	Open func(models.Target) (llm.Model, error)
	// Policy sets delays, the stall watchdog and the Retry-After cap.
	Policy Policy
	// Strategy is StrategyFallback ("" too) or StrategyAlways.
	Strategy string
	// Sleep waits d or until ctx ends; nil means a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Target returns the target whose ref is ref (as a turn's
// *llm.Answered names it): its window, modalities and prices. ok is
// false for a ref that is none of the model's.
func (m *Model) Target(ref string) (models.Target, bool) {
	for _, t := range m.Targets {
		if t.Ref == ref {
			return t, true
		}
	}
	return models.Target{}, false
}

var _ llm.Model = (*Model)(nil)

// Stream streams one turn from the first target that completes it. Each
// attempt starts with an *llm.Answered event naming its target; a
// failed attempt is followed by an *llm.Retry (consumers drop what the
// attempt streamed) and, after its Delay, the next attempt. The stream
// ends after the winning attempt's Done, or with an error that
// Classify sorts as the failure that ended the turn (an
// *ExhaustedError when every target failed).
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		r := &run{
			m:      m,
			policy: m.Policy.withDefaults(),
			open:   m.Open,
			sleep:  m.Sleep,
			models: make([]llm.Model, len(m.Targets)),
			fails:  make([]*Error, len(m.Targets)),
			always: m.Strategy == StrategyAlways,
		}
		if r.open == nil {
			r.open = models.Open
		}
		if r.sleep == nil {
			r.sleep = sleep
		}
		r.stream(ctx, req, yield)
	}
}

// run is the state of one turn.
type run struct {
	m      *Model
	policy Policy
	open   func(models.Target) (llm.Model, error)
	sleep  func(context.Context, time.Duration) error
	always bool
	input  int64       // the request's estimated input tokens (0: unknown)
	models []llm.Model // opened adapters, by target index
	fails  []*Error    // each target's failure, by target index
}

// stream is the turn: attempt, then retry, fall over or stop.
func (r *run) stream(ctx context.Context, req *llm.Request, yield func(llm.Event, error) bool) {
	r.input = req.InputTokens
	i := r.next(0)
	if i < 0 {
		yield(nil, r.exhausted())
		return
	}
	retries, attempts, n := 0, 0, 0 // retries and attempts on target i; Retry events sent
	for {
		t := r.m.Targets[i]
		attempts++
		if !yield(&llm.Answered{Model: t.Ref}, nil) {
			return
		}
		stopped, err := r.attempt(ctx, i, req, yield)
		if stopped || err == nil {
			return
		}
		class := Classify(err)
		if ctx.Err() != nil {
			class, err = Canceled, fmt.Errorf("%w (last error: %v)", context.Cause(ctx), err)
		}
		fail := &Error{Ref: t.Ref, Class: class, Attempts: attempts, Err: err}
		r.fails[i] = fail
		delay, retry, next := r.decide(class, err, i, retries)
		reason := string(class) + ": " + err.Error()
		switch {
		case retry:
			retries++
		case next >= 0:
			i, retries, attempts, delay = next, 0, 0, 0
		case class.terminal() || (!r.always && !class.Fallbackable()):
			yield(nil, fail)
			return
		default:
			yield(nil, r.exhausted())
			return
		}
		n++
		if !yield(&llm.Retry{Attempt: n, Delay: delay, Reason: reason, Model: r.m.Targets[i].Ref}, nil) {
			return
		}
		wait := ctx.Err()
		if delay > 0 {
			wait = r.sleep(ctx, delay)
		}
		if wait != nil {
			yield(nil, &Error{Ref: r.m.Targets[i].Ref, Class: Canceled, Attempts: attempts, Err: wait})
			return
		}
	}
}

// decide says what follows a failure of class c on target i after
// retries retries there: a retry after delay, the next target (next
// >= 0), or neither (the turn ends).
func (r *run) decide(c Class, err error, i, retries int) (delay time.Duration, retry bool, next int) {
	if c.terminal() {
		return 0, false, -1
	}
	if (r.always || c == Auth || c == Invalid) && r.next(i+1) >= 0 {
		return 0, false, r.next(i + 1)
	}
	if c.Retryable() && retries < len(r.policy.Delays) {
		var ae *llm.APIError
		wait := time.Duration(0)
		if errors.As(err, &ae) {
			wait = ae.RetryAfter
		}
		if wait <= r.policy.MaxRetryAfter {
			return max(r.policy.Delays[retries], wait), true, -1
		}
	}
	if r.always || c.Fallbackable() {
		return 0, false, r.next(i + 1)
	}
	return 0, false, -1
}

// attempt streams target i once. stopped means the consumer broke off;
// a nil err with !stopped means the turn completed.
func (r *run) attempt(ctx context.Context, i int, req *llm.Request, yield func(llm.Event, error) bool) (stopped bool, err error) {
	t := r.m.Targets[i]
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var timer *time.Timer
	if r.policy.Stall > 0 {
		timer = time.AfterFunc(r.policy.Stall, func() { cancel(ErrStall) })
		defer timer.Stop()
	}
	stalled := func(err error) error {
		if ctx.Err() == nil && errors.Is(context.Cause(actx), ErrStall) {
			return fmt.Errorf("%s: %w: no event for %v", t.Ref, ErrStall, r.policy.Stall)
		}
		return err
	}

	content := false
	for ev, err := range r.models[i].Stream(actx, models.Prepare(t, req, req.InputTokens)) {
		if timer != nil {
			timer.Stop()
		}
		if err != nil {
			return false, stalled(err)
		}
		switch e := ev.(type) {
		case *llm.TextDelta:
			content = content || e.Text != ""
		case *llm.ThinkingDelta:
			content = content || e.Text != ""
		case *llm.ThinkingDone, *llm.ToolCallStart, *llm.ToolCallDone:
			content = true
		case *llm.Done:
			if !content && e.Stop == llm.StopEndTurn {
				return false, fmt.Errorf("%s: %w: the turn ended with nothing in it", t.Ref, llm.ErrEmpty)
			}
			return !yield(ev, nil), nil
		}
		if !yield(ev, nil) {
			return true, nil
		}
		if timer != nil {
			timer.Reset(r.policy.Stall)
		}
	}
	return false, stalled(fmt.Errorf("%s: %w: the stream ended without Done", t.Ref, llm.ErrStream))
}

// next returns the first target from index from on that can be asked
// (it has a key or is local, its window holds the request, and its
// adapter opens), recording why the others were skipped; -1 when there
// is none.
func (r *run) next(from int) int {
	for i := from; i < len(r.m.Targets); i++ {
		if r.models[i] != nil {
			return i
		}
		if r.fails[i] != nil {
			continue
		}
		t := r.m.Targets[i]
		if t.Provider.APIKey == "" && !isLocal(t.Provider.BaseURL) {
			r.fails[i] = &Error{Ref: t.Ref, Class: Auth, Err: llm.ErrNoKey}
			continue
		}
		if w := int64(t.Info.ContextWindow); w > 0 && r.input > 0 && r.input+minOutput > w {
			r.fails[i] = &Error{Ref: t.Ref, Class: ContextOverflow,
				Err: fmt.Errorf("the request's ~%d input tokens do not fit its %d-token context window", r.input, w)}
			continue
		}
		m, err := r.open(t)
		if err != nil {
			r.fails[i] = &Error{Ref: t.Ref, Class: Classify(err), Err: err}
			continue
		}
		r.models[i] = m
		return i
	}
	return -1
}

// minOutput is the least room for an answer a target's window must
// leave beside the request's input to be asked at all.
const minOutput = 1024

// exhausted is the error when no target is left.
func (r *run) exhausted() error {
	e := &ExhaustedError{}
	for _, f := range r.fails {
		if f != nil {
			e.Failures = append(e.Failures, f)
		}
	}
	if len(e.Failures) == 0 {
		return errors.New("retry: no model targets")
	}
	return e
}

// isLocal reports whether base names a server on this machine, which
// may need no key.
func isLocal(base string) bool {
	u, err := url.Parse(base)
	if base == "" || err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}
