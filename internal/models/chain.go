package models

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"den.dev/den/internal/llm"
)

// Opener builds a model client for a target.
type Opener func(t Target) (llm.Model, error)

// Chain is a model that tries its members in order: when a member fails
// before it produced anything (an error answer, no key), the next one
// answers instead. Once a member has streamed an event, its errors are
// final for the turn (retries and finer fallback rules live above).
type Chain struct {
	Targets []Target
	Open    Opener
	// OnSwitch is told when a member is skipped or fails over.
	OnSwitch func(from Target, err error)
	// Answered is the target that answered the last turn.
	Answered Target
}

var _ llm.Model = (*Chain)(nil)

// Stream streams from the first member that answers.
func (c *Chain) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		var errs []error
		for _, t := range c.Targets {
			m, err := c.Open(t)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", t.Ref, err))
				if c.OnSwitch != nil {
					c.OnSwitch(t, err)
				}
				continue
			}
			r := Prepare(t, req, 0)
			started := false
			failed := false
			for ev, err := range m.Stream(ctx, r) {
				if err != nil {
					if started || ctx.Err() != nil {
						yield(nil, err)
						return
					}
					errs = append(errs, fmt.Errorf("%s: %w", t.Ref, err))
					if c.OnSwitch != nil {
						c.OnSwitch(t, err)
					}
					failed = true
					break
				}
				if !started {
					started = true
					c.Answered = t
				}
				if !yield(ev, nil) {
					return
				}
			}
			if !failed {
				return
			}
		}
		yield(nil, fmt.Errorf("every model failed: %w", errors.Join(errs...)))
	}
}

// Prepare fits a request to a target: its model name, a max output
// clamped to what the model allows (and to the window left after the
// estimated input), and no thinking for a model without it.
func Prepare(t Target, req *llm.Request, estInput int64) *llm.Request {
	r := *req
	r.Model = t.Model
	limit := t.Info.MaxOutput
	if limit <= 0 {
		limit = 8192
	}
	if free := int64(t.Info.ContextWindow) - estInput; t.Info.ContextWindow > 0 && free < int64(limit) {
		limit = int(max(free, 1024))
	}
	if r.MaxTokens <= 0 {
		r.MaxTokens = min(limit, 32_000)
	}
	r.MaxTokens = min(r.MaxTokens, limit)
	if !t.Info.Thinking && r.Thinking != "" {
		r.Thinking = llm.ThinkingOff
	}
	return &r
}
