package agent

import (
	"context"
	"sync"

	"den.dev/den/internal/llm"
)

// runCalls runs a turn's tool calls and returns the message carrying
// their results, in call order. Consecutive calls that may run side by
// side (reads, shell commands) form a batch that runs concurrently, up
// to MaxParallel at once; any other call (a file write or edit) runs
// alone, after everything before it and before everything after it.
func runCalls(ctx context.Context, cfg Config, calls []*llm.ToolCall) llm.Message {
	for _, c := range calls {
		cfg.Emit(&ToolCallEvent{ID: c.ID, Name: c.Name, Input: inputJSON(c.Input)})
	}
	limit := cfg.MaxParallel
	if limit <= 0 {
		limit = 10
	}
	results := make([]llm.ToolResult, len(calls))
	for i := 0; i < len(calls); {
		j := i + 1
		if cfg.Tools.Concurrent(calls[i]) {
			for j < len(calls) && cfg.Tools.Concurrent(calls[j]) {
				j++
			}
		}
		batch := calls[i:j]
		if len(batch) == 1 {
			results[i] = call(ctx, cfg, batch[0], false)
		} else {
			var wg sync.WaitGroup
			sem := make(chan struct{}, limit)
			for k, c := range batch {
				wg.Add(1)
				sem <- struct{}{}
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					results[i+k] = call(ctx, cfg, c, true)
				}()
			}
			wg.Wait()
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
