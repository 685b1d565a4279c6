package ctxwin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"den.dev/den/internal/llm"
)

// KeepUserTurns is how many of the latest user turns a compaction keeps
// verbatim when they fit.
const KeepUserTurns = 3

// MaxSplitDepth bounds the halving of a summary's input (at most 2^8
// parts).
const MaxSplitDepth = 8

// Compaction is the outcome of Compact.
type Compaction struct {
	Summary   Summary
	Compacted int       // messages the new summary covers that the previous one did not
	Kept      int       // messages after the anchor, sent verbatim
	Calls     int       // summarizer calls, failed ones included
	Usage     llm.Usage // their usage, summed
}

// Compact summarizes the oldest part of history (with the previous
// summary, if any, merged in) so that the request Build makes next fits.
// The loop stores the returned Summary beside the history; the history
// is not changed.
//
// It keeps verbatim the messages from the start of the last
// KeepUserTurns user turns, when those fit in OffloadTarget together
// with the system prompt, tools and a summary; otherwise the longest
// recent stretch that fits in CompactTarget, or at least the last
// exchange. It never separates a tool call from its result: the cut is
// always where no call before it is answered after it.
//
// When a summary call fails for any reason other than cancellation,
// rate limits, authentication or server errors (a context overflow,
// say), or its input is larger than fits, the part is split in two
// (at a boundary between exchanges where there is one), each half
// summarized (recursively, up to MaxSplitDepth) and the two summaries
// merged by one more call; if that merge fails, they are joined.
func (w *Window) Compact(ctx context.Context, history []StoredMsg, summaries []Summary) (Compaction, error) {
	if w.Summarize == nil {
		return Compaction{}, errors.New("ctxwin: compact: no summarizer")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	start, prev := anchor(history, summaries)
	live := history[start:]
	valid := boundaries(live)
	cut := w.cut(live, valid, prev)
	if cut <= 0 {
		return Compaction{}, ErrNothingToCompact
	}
	var items []item
	if prev != nil {
		items = append(items, item{text: "[Earlier summary]\n" + prev.Text, split: true})
	}
	for i, sm := range live[:cut] {
		items = append(items, item{text: w.render(sm), split: i == 0 || valid[i]})
	}
	s := summarizer{w: w, maxInput: w.Budget.Limit - w.Budget.SummaryTokens - EstimateText(SummaryPrompt) - 64}
	text, err := s.summarize(ctx, items, 0)
	c := Compaction{Compacted: cut, Kept: len(live) - cut, Calls: s.calls, Usage: s.usage}
	if err != nil {
		return c, fmt.Errorf("ctxwin: compact: %w", err)
	}
	c.Summary = Summary{UpToMessageID: live[cut-1].ID, Text: strings.TrimSpace(text)}
	return c, nil
}

// boundaries reports, for each i in [0, len(live)], whether a cut
// before live[i] separates no tool call from its result.
func boundaries(live []StoredMsg) []bool {
	calls := map[string]int{} // call id → index of its message
	open := make([]int, len(live)+2)
	for i, sm := range live {
		for _, p := range sm.Message.Parts {
			switch p := p.(type) {
			case *llm.ToolCall:
				calls[p.ID] = i
			case *llm.ToolResult:
				if c, ok := calls[p.CallID]; ok && c < i {
					// Cuts before c+1 … i separate the pair.
					open[c+1]++
					open[i+1]--
				}
			}
		}
	}
	valid := make([]bool, len(live)+1)
	n := 0
	for i := range valid {
		n += open[i]
		valid[i] = n == 0
	}
	return valid
}

// cut chooses how many of live's messages to summarize (0: none can
// be).
func (w *Window) cut(live []StoredMsg, valid []bool, prev *Summary) int {
	n := len(live)
	// suffix[i] estimates live[i:] as Build would send it once the
	// outputs it may offload are offloaded.
	suffix := make([]int, n+1)
	for i := n - 1; i >= 0; i-- {
		suffix[i] = suffix[i+1] + w.sentSize(live[i], i == n-1)
	}
	ratio := w.ratio()
	fixed := EstimateFixed(w.System, w.Tools) + w.Budget.SummaryTokens + EstimateText(SummaryHeader+SummaryNote+SummaryAck) + 3*MessageOverhead
	fits := func(i, target int) bool { return scale(fixed+suffix[i], ratio) <= target }

	var users []int
	for i, sm := range live {
		if isUserTurn(sm.Message) {
			users = append(users, i)
		}
	}
	from := 1
	if len(users) >= KeepUserTurns {
		c := users[len(users)-KeepUserTurns]
		for c > 0 && !valid[c] {
			c--
		}
		if c > 0 && fits(c, w.Budget.OffloadTarget) {
			return c
		}
		from = max(c+1, 1)
	}
	last := 0
	for i := from; i < n; i++ {
		if !valid[i] {
			continue
		}
		if fits(i, w.Budget.CompactTarget) {
			return i
		}
		last = i
	}
	if last == 0 { // from passed every boundary: take the latest there is
		for i := n - 1; i > 0; i-- {
			if valid[i] {
				return i
			}
		}
	}
	return last
}

// sentSize estimates a stored message as a request above Compact will
// carry it: with its offloaded outputs as stubs and, unless it is the
// last message (protected), those Build may offload as stubs too.
func (w *Window) sentSize(sm StoredMsg, protected bool) int {
	t := EstimateMessage(sm.Message)
	for j, p := range sm.Message.Parts {
		r, ok := p.(*llm.ToolResult)
		if !ok {
			continue
		}
		for k, c := range r.Content {
			s, done := w.saved[partKey{sm.ID, j, k}]
			switch {
			case done:
				t += PartOverhead + EstimateText(s.stub) - EstimatePart(c)
			case w.Saver != nil && !protected && contentBytes(c) >= w.minOffload():
				t += stubTokens - EstimatePart(c)
			}
		}
	}
	return t
}

// stubTokens is about what a stub costs.
const stubTokens = PartOverhead + 40

// isUserTurn reports whether m opens a user turn: a user message with
// text or images.
func isUserTurn(m llm.Message) bool {
	if m.Role != llm.User {
		return false
	}
	for _, p := range m.Parts {
		switch p.(type) {
		case *llm.Text, *llm.Image:
			return true
		}
	}
	return false
}

// Limits of the transcript a summary is written from.
const (
	transcriptText   = 6000 // characters of a user or assistant text
	transcriptInput  = 1000 // of a tool call's input
	transcriptResult = 1500 // of a tool output
)

// render writes one message as transcript lines.
func (w *Window) render(sm StoredMsg) string {
	var b strings.Builder
	who := "[User]"
	if sm.Message.Role == llm.Assistant {
		who = "[Assistant]"
	}
	for j, p := range sm.Message.Parts {
		switch p := p.(type) {
		case *llm.Text:
			fmt.Fprintf(&b, "%s %s\n", who, clip(p.Text, transcriptText))
		case *llm.Image:
			fmt.Fprintf(&b, "%s [image attached]\n", who)
		case *llm.ToolCall:
			fmt.Fprintf(&b, "[Tool call] %s %s\n", p.Name, clip(string(p.Input), transcriptInput))
		case *llm.ToolResult:
			status := ""
			if p.IsError {
				status = " (error)"
			}
			for k, c := range p.Content {
				switch c := c.(type) {
				case *llm.Text:
					out := clip(c.Text, transcriptResult)
					if s, ok := w.saved[partKey{sm.ID, j, k}]; ok {
						out += fmt.Sprintf("\n(full output, %d bytes: %s)", s.bytes, s.path)
					}
					fmt.Fprintf(&b, "[Result%s] %s: %s\n", status, p.Name, out)
				case *llm.Image:
					fmt.Fprintf(&b, "[Result%s] %s: [image]\n", status, p.Name)
				}
			}
		}
	}
	return b.String()
}

// clip shortens s to about n bytes: its head and its tail, on character
// boundaries.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n*3/4, n/4
	for head > 0 && !isStart(s[head]) {
		head--
	}
	t := len(s) - tail
	for t < len(s) && !isStart(s[t]) {
		t++
	}
	return fmt.Sprintf("%s\n[… %d bytes left out …]\n%s", s[:head], t-head, s[t:])
}

func isStart(b byte) bool { return b < 0x80 || b >= 0xC0 }

// The prompts of summary calls.
const (
	SummaryPrompt = `You are compacting the context of an AI agent that works for a user in its own Linux computer. ` +
		`The transcript below is the older part of their conversation; it will be replaced by your summary, ` +
		`and the agent will continue the work from your summary and the newer messages alone.

Write the summary. Keep verbatim: file paths, URLs, identifiers (ids, hashes, names of branches, sessions, ` +
		`processes, packages), exact commands that changed state, and error messages that mattered. Record:
- the user's goals, requests, constraints and preferences, in their own words where it matters;
- every decision made, and why;
- what was done, as past events, with outcomes (files written, commands run, results found, errors and their fixes);
- what remains to be done, and open questions.
If the transcript begins with an earlier summary, merge it in: your summary must stand alone. ` +
		`Start with one line saying what the conversation is about. Write in the user's language; keep code as it is; ` +
		`invent nothing. Answer with the summary only.`
	MergePrompt = `Below are summaries of consecutive parts of one conversation between a user and an AI agent, oldest first. ` +
		`Merge them into one summary that stands alone, following the same rules: keep file paths, URLs and identifiers ` +
		`verbatim; keep the user's goals, constraints and decisions, what was done (as past events, with outcomes) and ` +
		`what remains to be done. Answer with the summary only.`
)

// item is one message of a transcript.
type item struct {
	text  string
	split bool // a part may start here without separating a call from its result
}

// summarizer runs the summary calls of one compaction.
type summarizer struct {
	w        *Window
	maxInput int // the calibrated tokens a call's input may have
	calls    int
	usage    llm.Usage
}

func (s *summarizer) summarize(ctx context.Context, items []item, depth int) (string, error) {
	var b strings.Builder
	for _, it := range items {
		b.WriteString(it.text)
		b.WriteByte('\n')
	}
	text := b.String()
	if len(items) > 1 && depth < MaxSplitDepth && scale(EstimateText(text), s.w.ratio()) > s.maxInput {
		return s.split(ctx, items, depth)
	}
	out, err := s.call(ctx, SummaryPrompt+"\n\n<transcript>\n"+text+"</transcript>")
	if err == nil {
		return out, nil
	}
	if !splittable(ctx, err) || len(items) < 2 || depth >= MaxSplitDepth {
		return "", err
	}
	return s.split(ctx, items, depth)
}

// split summarizes the two halves of items and merges the summaries.
func (s *summarizer) split(ctx context.Context, items []item, depth int) (string, error) {
	m := middle(items)
	a, err := s.summarize(ctx, items[:m], depth+1)
	if err != nil {
		return "", err
	}
	b, err := s.summarize(ctx, items[m:], depth+1)
	if err != nil {
		return "", err
	}
	merged, err := s.call(ctx, MergePrompt+"\n\n<summary>\n"+a+"\n</summary>\n\n<summary>\n"+b+"\n</summary>")
	if err == nil {
		return merged, nil
	}
	if !splittable(ctx, err) {
		return "", err
	}
	return a + "\n\n" + b, nil
}

// middle returns the index in [1, len(items)) that halves items by size,
// preferring places where a part may start.
func middle(items []item) int {
	total := 0
	for _, it := range items {
		total += len(it.text)
	}
	best, bestAny := -1, -1
	bestD, bestAnyD := total+1, total+1
	acc := 0
	for i := 1; i < len(items); i++ {
		acc += len(items[i-1].text)
		d := acc - total/2
		if d < 0 {
			d = -d
		}
		if items[i].split && d < bestD {
			best, bestD = i, d
		}
		if d < bestAnyD {
			bestAny, bestAnyD = i, d
		}
	}
	if best > 0 {
		return best
	}
	return bestAny
}

func (s *summarizer) call(ctx context.Context, prompt string) (string, error) {
	s.calls++
	out, u, err := s.w.Summarize(ctx, []llm.Message{{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: prompt}}}})
	s.usage.InputTokens += u.InputTokens
	s.usage.OutputTokens += u.OutputTokens
	s.usage.CacheReadTokens += u.CacheReadTokens
	s.usage.CacheWriteTokens += u.CacheWriteTokens
	if err == nil && strings.TrimSpace(out) == "" {
		err = errEmptySummary
	}
	return out, err
}

// splittable reports whether a failed summary call may succeed on less
// input: not when the run is canceled, nor when the failure has
// nothing to do with the input's size (no key, authentication, rate
// limits, server errors).
func splittable(ctx context.Context, err error) bool {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, llm.ErrNoKey) {
		return false
	}
	var ae *llm.APIError
	if errors.As(err, &ae) {
		switch {
		case ae.Status == http.StatusUnauthorized, ae.Status == http.StatusForbidden,
			ae.Status == http.StatusTooManyRequests, ae.Status >= 500:
			return false
		}
	}
	return true
}
