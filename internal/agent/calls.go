package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"den.dev/den/internal/agent/callfix"
	"den.dev/den/internal/agent/loopguard"
	"den.dev/den/internal/llm"
)

// runCalls runs a turn's tool calls, whose assistant message is stored
// as msgID, and returns the message carrying their results, in call
// order. Each call is first repaired (callfix) and checked against the
// run's loop guard, in call order; a call that cannot be repaired or
// loops is answered without running. Consecutive calls that may run
// side by side (Tools.Concurrent) form a batch that runs concurrently,
// up to MaxParallel at once; any other call runs alone, after
// everything before it and before everything after it.
//
// Each call that runs is written ahead (see Store): its start, its
// output's tail while it runs, its result when ready, except that the
// turn's last result goes straight into the results message. A Go error
// (the store failed) ends the turn: the calls' record would be false.
func runCalls(ctx context.Context, cfg Config, guard *loopguard.Guard, msgID string, calls []*llm.ToolCall) (llm.Message, error) {
	results := make([]llm.ToolResult, len(calls))
	notes := make([]string, len(calls))
	answered := make([]bool, len(calls)) // answered without running
	left := int32(0)
	for i, c := range calls {
		results[i], notes[i], answered[i] = prepare(cfg, guard, c)
		if !answered[i] {
			left++
		}
		ev := &ToolCallEvent{ID: c.ID, Name: c.Name, Input: inputJSON(c.Input)}
		if l, ok := cfg.Tools.(Labeler); ok {
			ev.Labels = l.Labels(c)
		}
		cfg.Emit(ev)
	}
	w := &writeAhead{cfg: cfg, msgID: msgID, left: atomic.Int32{}}
	w.left.Store(left)
	limit := cfg.MaxParallel
	if limit <= 0 {
		limit = 10
	}
	outcomes := make([]outcome, len(calls))
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
			outcomes[run[0]] = w.call(ctx, calls[run[0]], false, guard, notes[run[0]])
		} else if len(run) > 1 {
			var wg sync.WaitGroup
			sem := make(chan struct{}, limit)
			for _, k := range run {
				sem <- struct{}{}
				wg.Go(func() {
					defer func() { <-sem }()
					outcomes[k] = w.call(ctx, calls[k], true, guard, notes[k])
				})
			}
			wg.Wait()
		}
		for _, k := range run {
			if outcomes[k].err != nil {
				return llm.Message{}, outcomes[k].err
			}
			results[k] = outcomes[k].result
		}
		for k := i; k < j; k++ {
			o := outcomes[k]
			cfg.Emit(&ToolResultEvent{ID: calls[k].ID, Output: resultText(results[k]), IsError: results[k].IsError, Duration: o.duration, ExitCode: o.exit})
		}
		i = j
	}
	msg := llm.Message{Role: llm.User}
	for k := range results {
		msg.Parts = append(msg.Parts, &results[k])
	}
	return msg, nil
}

// outcome is what one call that ran left.
type outcome struct {
	result   llm.ToolResult
	duration time.Duration
	exit     *int
	err      error // the store failed
}

// writeAhead runs the calls of one assistant message, recording them.
type writeAhead struct {
	cfg   Config
	msgID string
	left  atomic.Int32 // calls still to finish
	guard sync.Mutex   // the loop guard is not safe for concurrent use
}

// call runs one call, or answers it without running once the run is
// canceled, so that every call has a result.
func (w *writeAhead) call(ctx context.Context, c *llm.ToolCall, concurrent bool, guard *loopguard.Guard, note string) outcome {
	st := w.cfg.Store
	bg := context.WithoutCancel(ctx)
	if ctx.Err() != nil {
		w.left.Add(-1)
		return outcome{result: llm.ToolResult{CallID: c.ID, Name: c.Name, IsError: true,
			Content: []llm.Part{&llm.Text{Text: "not run: the user interrupted the turn"}}}}
	}
	start := time.Now()
	if err := st.CallStarted(bg, w.msgID, c.ID, start); err != nil {
		return outcome{err: fmt.Errorf("agent: %w", err)}
	}
	tail := newTail(func(s string, at time.Time) error { return st.CallOutput(bg, w.msgID, c.ID, s, at) })
	o := w.cfg.Tools.Call(ctx, c, CallOptions{Concurrent: concurrent, Output: tail.add, MessageID: w.msgID})
	tailErr := tail.stop()
	d := time.Since(start)
	r := o.Result
	r.CallID, r.Name = c.ID, c.Name
	w.guard.Lock()
	r = finish(guard, c, r, note)
	w.guard.Unlock()
	out := outcome{result: r, duration: d, exit: o.ExitCode}
	if tailErr != nil {
		out.err = fmt.Errorf("agent: %w", tailErr)
		return out
	}
	// The turn's last result goes into the results message, committed
	// next; the others are recorded now.
	if w.left.Add(-1) > 0 {
		if err := st.CallFinished(bg, w.msgID, CallRecord{Result: r, Duration: d, ExitCode: o.ExitCode}); err != nil {
			out.err = fmt.Errorf("agent: %w", err)
		}
	}
	return out
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

// tail keeps the end of a running call's output and saves it, with the
// time, once a second until stop, so that a den killed mid-call leaves
// how long the call had run and what it had printed by then.
type tail struct {
	save func(tail string, at time.Time) error
	quit chan struct{}
	done chan struct{}

	mu  sync.Mutex
	buf []byte
	err error
}

// tailKeep is how much of the output a tail keeps.
const tailKeep = 16 << 10

// tailEvery is how often a tail saves.
const tailEvery = time.Second

func newTail(save func(string, time.Time) error) *tail {
	t := &tail{save: save, quit: make(chan struct{}), done: make(chan struct{})}
	go t.loop()
	return t
}

func (t *tail) add(s string) {
	t.mu.Lock()
	t.buf = append(t.buf, s...)
	if len(t.buf) > 2*tailKeep {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-tailKeep:]...)
	}
	t.mu.Unlock()
}

func (t *tail) loop() {
	defer close(t.done)
	tick := time.NewTicker(tailEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			t.flush()
		case <-t.quit:
			return
		}
	}
}

func (t *tail) flush() {
	t.mu.Lock()
	if t.err != nil {
		t.mu.Unlock()
		return
	}
	b := t.buf
	if len(b) > tailKeep {
		b = b[len(b)-tailKeep:]
	}
	s := string(b)
	t.mu.Unlock()
	if err := t.save(s, time.Now()); err != nil {
		t.mu.Lock()
		t.err = err
		t.mu.Unlock()
	}
}

// stop ends the saving and waits for it; it returns a save's error.
func (t *tail) stop() error {
	close(t.quit)
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}
