package agent

import (
	"context"
	"errors"
	"fmt"

	"den.dev/den/internal/agent/ctxwin"
	"den.dev/den/internal/llm"
)

// ErrContextFull ends a run whose history no longer fits the model's
// window even after compaction.
var ErrContextFull = errors.New("context is full and could not be compacted further")

// SummaryStore is what context management needs of the store: the
// history with message ids, and the summaries compaction made (stored
// beside the history, which is never rewritten).
type SummaryStore interface {
	Messages(ctx context.Context, sessionID string) ([]ctxwin.StoredMsg, error)
	Summaries(ctx context.Context, sessionID string) ([]ctxwin.Summary, error)
	AddSummary(ctx context.Context, sessionID string, s ctxwin.Summary, compacted int) error
}

// Context is a session's context management: what of the history is
// sent each turn (old large tool outputs offloaded to files, the oldest
// part summarized when needed).
type Context struct {
	Window *ctxwin.Window
	Store  SummaryStore
	// OnCompact, when set, is told the summary of each compaction once
	// it is stored (den keeps it in the agent's memory).
	OnCompact func(ctx context.Context, summary string)
}

// request builds the messages to send: the stored history through the
// window, compacting first when the window says so (at most
// ctxwin.MaxCompactions times a run; compactions do not count as turns).
func request(ctx context.Context, cfg Config, sessionID string, compactions *int) ([]llm.Message, ctxwin.Use, error) {
	if cfg.Context == nil {
		history, err := cfg.Store.History(ctx, sessionID)
		if err != nil {
			return nil, ctxwin.Use{}, fmt.Errorf("agent: history: %w", err)
		}
		return llm.Pair(history), ctxwin.Use{}, nil
	}
	w := cfg.Context.Window
	for {
		history, err := cfg.Context.Store.Messages(ctx, sessionID)
		if err != nil {
			return nil, ctxwin.Use{}, fmt.Errorf("agent: history: %w", err)
		}
		sums, err := cfg.Context.Store.Summaries(ctx, sessionID)
		if err != nil {
			return nil, ctxwin.Use{}, fmt.Errorf("agent: summaries: %w", err)
		}
		msgs, use, err := w.Build(ctx, history, sums)
		if err != nil {
			return nil, use, fmt.Errorf("agent: build request: %w", err)
		}
		switch w.Budget.Decide(use.Estimated, *compactions) {
		case ctxwin.Send:
			return llm.Pair(msgs), use, nil
		case ctxwin.Stop:
			return nil, use, fmt.Errorf("agent: %w (%d of %d tokens)", ErrContextFull, use.Estimated, use.Window)
		}
		*compactions++ // attempts count, so a failing summarizer cannot loop
		c, err := w.Compact(ctx, history, sums)
		if err != nil {
			if ctx.Err() != nil {
				return nil, use, ErrCanceled
			}
			*compactions = ctxwin.MaxCompactions // send if it fits, else stop
			continue
		}
		if err := cfg.Context.Store.AddSummary(context.WithoutCancel(ctx), sessionID, c.Summary, c.Compacted); err != nil {
			return nil, use, fmt.Errorf("agent: save summary: %w", err)
		}
		if cfg.Context.OnCompact != nil {
			cfg.Context.OnCompact(ctx, c.Summary.Text)
		}
		cfg.Emit(&CompactionEvent{Compacted: c.Compacted, Kept: c.Kept, Calls: c.Calls})
	}
}
