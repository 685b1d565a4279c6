package session

import (
	"context"
	"time"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/store"
)

// loopStore is the store as the loop sees it: appends carry the
// answering model and the request's usage into the same transaction,
// tool calls are written ahead.
type loopStore struct{ st *store.Store }

var _ agent.Store = loopStore{}

func (l loopStore) History(ctx context.Context, id string) ([]llm.Message, error) {
	return l.st.History(ctx, id)
}

func (l loopStore) Append(ctx context.Context, id string, meta agent.Meta, msgs ...llm.Message) ([]string, error) {
	opts := store.AppendOptions{Model: meta.Model, DeliverQueued: meta.Deliver}
	if meta.Usage != nil {
		u := meta.Usage
		opts.Usage = &store.UsageRecord{Model: meta.Model, Purpose: store.PurposeConversation,
			InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CacheReadTokens: u.CacheReadTokens,
			CacheWriteTokens: u.CacheWriteTokens, CostUSD: meta.CostUSD, Latency: meta.Latency, Breakdown: meta.Breakdown}
	}
	var delivered []store.Queued
	if meta.Delivered != nil {
		opts.Delivered = &delivered
	}
	ids, err := l.st.AppendWith(ctx, id, opts, msgs...)
	if meta.Delivered != nil {
		for _, q := range delivered {
			*meta.Delivered = append(*meta.Delivered, q.MessageID)
		}
	}
	return ids, err
}

func (l loopStore) CallStarted(ctx context.Context, msgID, callID string, at time.Time) error {
	return l.st.CallStarted(ctx, msgID, callID, at)
}

func (l loopStore) CallOutput(ctx context.Context, msgID, callID, tail string, at time.Time) error {
	return l.st.CallOutput(ctx, msgID, callID, tail, at)
}

func (l loopStore) CallFinished(ctx context.Context, msgID string, r agent.CallRecord) error {
	return l.st.CallFinished(ctx, msgID, store.CallResult{Result: r.Result, Duration: r.Duration, ExitCode: r.ExitCode})
}

func (l loopStore) OpenCalls(ctx context.Context, id string) (string, []agent.OpenCall, error) {
	msgID, calls, err := l.st.OpenCalls(ctx, id)
	out := make([]agent.OpenCall, len(calls))
	for i, c := range calls {
		out[i] = agent.OpenCall{Call: c.Call, Started: c.Started, Seen: c.Seen, Result: c.Result, Duration: c.Duration, ExitCode: c.ExitCode, Output: c.Output}
	}
	return msgID, out, err
}
