package agent

import (
	"context"
	"errors"
	"strings"
	"sync"

	"den.dev/den/internal/agent/callfix"
	"den.dev/den/internal/agent/loopguard"
	"den.dev/den/internal/llm"
)

// runCalls runs a turn's tool calls and returns the message carrying
// their results, in call order. Each call is first repaired (callfix)
// and checked against the run's loop guard, in call order; a call that
// cannot be repaired or loops is answered without running. Consecutive
// calls that may run side by side (reads, shell commands) form a batch
// that runs concurrently, up to MaxParallel at once; any other call (a
// file write or edit) runs alone, after everything before it and
// before everything after it.
func runCalls(ctx context.Context, cfg Config, guard *loopguard.Guard, calls []*llm.ToolCall) llm.Message {
	results := make([]llm.ToolResult, len(calls))
	notes := make([]string, len(calls))
	answered := make([]bool, len(calls)) // answered without running
	for i, c := range calls {
		results[i], notes[i], answered[i] = prepare(cfg, guard, c)
		ev := &ToolCallEvent{ID: c.ID, Name: c.Name, Input: inputJSON(c.Input)}
		if l, ok := cfg.Tools.(Labeler); ok {
			ev.Labels = l.Labels(c)
		}
		cfg.Emit(ev)
	}
	limit := cfg.MaxParallel
	if limit <= 0 {
		limit = 10
	}
	// An answered call runs nothing, so it joins any batch.
	parallel := func(k int) bool { return answered[k] || cfg.Tools.Concurrent(calls[k]) }
	for i := 0; i < len(calls); {
		j := i + 1
		if parallel(i) {
			for j < len(calls) && parallel(j) {
				j++
			}
		}
		var run []int
		for k := i; k < j; k++ {
			if !answered[k] {
				run = append(run, k)
			}
		}
		if len(run) == 1 {
			results[run[0]] = call(ctx, cfg, calls[run[0]], false)
		} else if len(run) > 1 {
			var wg sync.WaitGroup
			sem := make(chan struct{}, limit)
			for _, k := range run {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					results[k] = call(ctx, cfg, calls[k], true)
				}()
			}
			wg.Wait()
		}
		for _, k := range run {
			results[k] = finish(guard, calls[k], results[k], notes[k])
		}
		for k := i; k < j; k++ {
			cfg.Emit(&ToolResultEvent{ID: calls[k].ID, Output: resultText(results[k]), IsError: results[k].IsError})
		}
		i = j
	}
	msg := llm.Message{Role: llm.User}
	for k := range results {
		msg.Parts = append(msg.Parts, &results[k])
	}
	return msg
}

// prepare repairs c in place (so that the turn's message records the
// call as it runs, with a name and input its result pairs with) and
// asks the loop guard about it. A call that must not run is answered
// here (answered is true); otherwise note is what the repair did.
func prepare(cfg Config, guard *loopguard.Guard, c *llm.ToolCall) (r llm.ToolResult, note string, answered bool) {
	fixed, note, err := callfix.Fix(c, cfg.Tools)
	if err == nil && fixed != c {
		*c = *fixed
	}
	block, warning := guard.Before(c, !errors.Is(err, callfix.ErrUnknownTool))
	switch {
	case block:
		return loopguard.Blocked(c, warning), "", true
	case err != nil:
		r = llm.ToolResult{CallID: c.ID, Name: c.Name, IsError: true, Content: []llm.Part{&llm.Text{Text: err.Error()}}}
		r = loopguard.Annotate(r, guard.After(c, r))
		return loopguard.Annotate(r, warning), "", true
	}
	return llm.ToolResult{}, note, false
}

// finish adds to a call's result what the repair did and what the loop
// guard has to say about it. A call that ran on cut-off arguments is
// marked failed.
func finish(guard *loopguard.Guard, c *llm.ToolCall, r llm.ToolResult, note string) llm.ToolResult {
	warning := guard.After(c, r)
	if strings.HasPrefix(note, callfix.TruncatedNote) {
		r.IsError = true
	}
	return loopguard.Annotate(loopguard.Annotate(r, note), warning)
}

// call runs one call, or answers it without running once the run is
// canceled, so that every call has a result.
func call(ctx context.Context, cfg Config, c *llm.ToolCall, concurrent bool) llm.ToolResult {
	if ctx.Err() != nil {
		return llm.ToolResult{CallID: c.ID, Name: c.Name, IsError: true,
			Content: []llm.Part{&llm.Text{Text: "not run: the user interrupted the turn"}}}
	}
	r := cfg.Tools.Call(ctx, c, concurrent)
	r.CallID, r.Name = c.ID, c.Name
	return r
}

func resultText(r llm.ToolResult) string {
	var s string
	for _, p := range r.Content {
		switch p := p.(type) {
		case *llm.Text:
			s += p.Text
		case *llm.Image:
			s += "[image " + p.MediaType + "]"
		}
	}
	return s
}
