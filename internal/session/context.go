package session

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/agent/ctxwin"
	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/models"
	"den.dev/den/internal/models/retry"
	"den.dev/den/internal/store"
)

// summaryStore adapts the store to the loop's context management.
type summaryStore struct{ st *store.Store }

func (s summaryStore) Messages(ctx context.Context, id string) ([]ctxwin.StoredMsg, error) {
	path, err := s.st.Path(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]ctxwin.StoredMsg, len(path))
	for i, m := range path {
		out[i] = ctxwin.StoredMsg{ID: m.ID, Message: m.Message}
	}
	return out, nil
}

func (s summaryStore) Summaries(ctx context.Context, id string) ([]ctxwin.Summary, error) {
	sums, err := s.st.Summaries(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]ctxwin.Summary, len(sums))
	for i, x := range sums {
		out[i] = ctxwin.Summary{UpToMessageID: x.UpToMessageID, Text: x.Text}
	}
	return out, nil
}

func (s summaryStore) AddSummary(ctx context.Context, id string, sum ctxwin.Summary, compacted int) error {
	return s.st.AddSummary(ctx, id, store.Summary{UpToMessageID: sum.UpToMessageID, Text: sum.Text, Compacted: compacted})
}

// offloadSaver writes into the host side of the session's /den/offloads,
// a folder the computer can change at any moment: through hostfs, so
// that nothing it plants there is followed, the file is new, and it is
// the computer's root's.
type offloadSaver struct {
	dir   string
	owner *hostfs.Owner
}

func (s offloadSaver) Save(ctx context.Context, name string, data []byte) (string, error) {
	if name != filepath.Base(name) || strings.HasPrefix(name, ".") {
		return "", fmt.Errorf("offload: bad name %q", name)
	}
	d, err := hostfs.OpenDirNamed(s.dir, ctxwin.OffloadDir)
	if err != nil {
		return "", fmt.Errorf("offload: %w", err)
	}
	defer d.Close()
	if err := d.WriteFile(name, data, 0o644, s.owner, false); err != nil {
		return "", fmt.Errorf("offload %s: %w", name, err)
	}
	return ctxwin.OffloadDir + "/" + name, nil
}

// contextFor builds a session's context management: the first target's
// window, offloads into the session's folder, and summaries by the same
// model chain (their usage recorded as compaction).
//
// onCompact, when set, is told the summary of every compaction.
func contextFor(st *store.Store, sessionID, offloads string, owner *hostfs.Owner, t models.Target, chain *retry.Model, system string, tools []llm.Tool,
	onCompact func(ctx context.Context, summary string)) *agent.Context {
	w := &ctxwin.Window{
		Budget:     ctxwin.Budget(t.Info.ContextWindow, t.Info.MaxOutput),
		Model:      t.Ref,
		Calibrator: &ctxwin.Calibrator{},
		System:     system,
		Tools:      tools,
		Saver:      offloadSaver{dir: offloads, owner: owner},
	}
	w.Summarize = func(ctx context.Context, msgs []llm.Message) (string, llm.Usage, error) {
		var c llm.Collector
		var serr error
		start := time.Now()
		req := &llm.Request{Model: t.Model, Messages: msgs, MaxTokens: w.Budget.SummaryTokens, Thinking: llm.ThinkingOff}
		for ev, err := range chain.Stream(ctx, req) {
			if err != nil {
				serr = err
				break
			}
			c.Add(ev)
		}
		turn := c.Turn()
		if turn.Usage != (llm.Usage{}) {
			// Priced by the model that answered this summary, which
			// need not be the one answering the conversation.
			err := st.RecordUsage(context.WithoutCancel(ctx), store.UsageRecord{Session: sessionID, Model: firstNonEmpty(turn.Model, t.Ref),
				Purpose: store.PurposeCompaction, InputTokens: turn.Usage.InputTokens, OutputTokens: turn.Usage.OutputTokens,
				CacheReadTokens: turn.Usage.CacheReadTokens, CacheWriteTokens: turn.Usage.CacheWriteTokens,
				CostUSD: priceOf(chain, turn.Model).Cost(turn.Usage), Latency: time.Since(start)})
			if err != nil && serr == nil {
				serr = fmt.Errorf("summary: usage not recorded: %w", err)
			}
		}
		if serr == nil && !turn.Done {
			serr = fmt.Errorf("summary: %w", llm.ErrStream)
		}
		return llm.TextOf(turn.Message), turn.Usage, serr
	}
	return &agent.Context{Window: w, Store: summaryStore{st: st}, OnCompact: onCompact}
}
