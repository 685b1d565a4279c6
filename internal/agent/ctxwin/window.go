package ctxwin

import (
	"context"
	"sync"

	"den.dev/den/internal/llm"
)

// StoredMsg is a stored message with its id: an element of the path
// from a session's root to its head.
type StoredMsg struct {
	ID      string
	Message llm.Message
}

// Summary stands, in requests, for the messages from the root of the
// history up to and including UpToMessageID (its anchor). It is stored
// beside the history, never in it.
type Summary struct {
	UpToMessageID string
	Text          string
}

// Saver writes a file into the agent's computer, in the offload folder
// (/den/offloads), and returns its path as the computer sees it.
// Writing the same name again writes the same data.
type Saver interface {
	Save(ctx context.Context, name string, data []byte) (guestPath string, err error)
}

// Summarizer asks a model to answer msgs (the summary prompts
// Compact builds; they carry no tool calls) and returns its text and
// usage. The loop implements it with the session's model, no tools,
// MaxTokens Thresholds.SummaryTokens, and records each call's usage
// with purpose "compaction".
type Summarizer func(ctx context.Context, msgs []llm.Message) (string, llm.Usage, error)

// Use is how much of the window a request fills, for the faces.
type Use struct {
	Estimated int // calibrated estimate of the request's input tokens
	Raw       int // the same before calibration: what Calibrator.Observe takes
	Window    int
	Percent   float64 // Estimated / Window × 100
}

// Defaults of a Window's knobs.
const (
	// DefaultKeepTurns: the tool results of the last two assistant
	// messages are offloaded only when nothing else fits.
	DefaultKeepTurns = 2
	// DefaultMinOffloadBytes: smaller tool output is never offloaded (a
	// stub costs about 30 tokens; 4 KB is about 1000).
	DefaultMinOffloadBytes = 4096
)

// Window builds the requests of one session. Its memory of offloaded
// outputs lives as long as it does: the loop keeps one per session, for
// the life of the process. It is safe for concurrent use, though a
// session's loop uses it from one goroutine.
type Window struct {
	Budget     Thresholds
	Model      string      // the model's name, the Calibrator's key
	Calibrator *Calibrator // nil: estimates are used as they are
	System     string      // the system prompt every request carries
	Tools      []llm.Tool  // the tools every request carries
	// Saver writes offloaded outputs; nil: nothing is offloaded and
	// only compaction makes room.
	Saver Saver
	// Summarize writes summaries; Compact needs it.
	Summarize Summarizer
	// KeepTurns and MinOffloadBytes tune offloading (0: the defaults).
	KeepTurns       int
	MinOffloadBytes int

	mu    sync.Mutex
	saved map[partKey]saved
}

// partKey names one content part of one tool result of one stored
// message.
type partKey struct {
	msg           string
	part, content int
}

// saved is an offloaded output.
type saved struct {
	stub  string // the text that replaces it in requests
	path  string // where it is in the computer
	bytes int
}

func (w *Window) keepTurns() int {
	if w.KeepTurns > 0 {
		return w.KeepTurns
	}
	return DefaultKeepTurns
}

func (w *Window) minOffload() int {
	if w.MinOffloadBytes > 0 {
		return w.MinOffloadBytes
	}
	return DefaultMinOffloadBytes
}

func (w *Window) ratio() float64 { return w.Calibrator.Ratio(w.Model) }

// Build returns the messages to send for history (the path from the
// session's root to its head) given the session's summaries, oldest
// first, and how much of the window they fill. It never modifies
// history.
//
// The request is the latest summary whose anchor is on the path (as a
// user message, then an assistant acknowledgement when the next message
// is the user's), followed by the messages after the anchor, in which:
//   - every tool output offloaded before is replaced by its stub;
//   - when the request is above Offload, tool outputs of at least
//     MinOffloadBytes that answer calls older than the last KeepTurns
//     assistant messages are offloaded, oldest first, until it is at
//     most OffloadTarget;
//   - when it is still above Compact, newer outputs are offloaded too,
//     except those in the last message (which the model has not seen
//     yet), until it is at most OffloadTarget: offloading what the
//     model has read is cheaper than a compaction;
//   - when it is still above Limit, the last message's outputs too,
//     until it is at most Limit.
//
// An output is saved through the Saver before its stub is used; an
// error from the Saver is returned (the computer is broken) and leaves
// that output in place. Whether the result still exceeds Compact or
// Limit is for the caller to check (Thresholds.Decide).
func (w *Window) Build(ctx context.Context, history []StoredMsg, summaries []Summary) ([]llm.Message, Use, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	start, sum := anchor(history, summaries)
	live := history[start:]
	msgs := summaryMessages(sum, live)
	base := len(msgs)
	for _, sm := range live {
		msgs = append(msgs, sm.Message)
	}
	cands := w.applyStubs(msgs[base:], live)
	raw := Estimate(msgs, w.System, w.Tools)
	ratio := w.ratio()
	over := func(level int) bool { return scale(raw, ratio) > level }
	if w.Saver == nil {
		return msgs, w.use(raw), nil
	}
	protect, last := protectedFrom(live, w.keepTurns()), len(live)-1
	passes := []struct {
		above, target int
		may           func(msg int) bool
	}{
		{w.Budget.Offload, w.Budget.OffloadTarget, func(i int) bool { return i <= protect }},
		{w.Budget.Compact, w.Budget.OffloadTarget, func(i int) bool { return i < last }},
		{w.Budget.Limit, w.Budget.Limit, func(int) bool { return true }},
	}
	for _, p := range passes {
		if !over(p.above) {
			continue
		}
		for i := range cands {
			c := &cands[i]
			if !over(p.target) {
				break
			}
			if c.done || !p.may(c.msg) {
				continue
			}
			stub, err := w.offload(ctx, c, live[c.msg])
			if err != nil {
				return nil, Use{}, err
			}
			msgs[base+c.msg] = replaced(msgs[base+c.msg], c.key.part, c.key.content, stub)
			raw += EstimatePart(stub) - c.tokens
			c.done = true
		}
	}
	return msgs, w.use(raw), nil
}

func (w *Window) use(raw int) Use {
	u := Use{Raw: raw, Estimated: scale(raw, w.ratio()), Window: w.Budget.Window}
	if u.Window > 0 {
		u.Percent = float64(u.Estimated) * 100 / float64(u.Window)
	}
	return u
}

// anchor finds the latest summary whose anchor is on the path and
// returns the index of the first message after it (0 and nil when
// there is none). A summary of another branch is not on the path.
func anchor(history []StoredMsg, summaries []Summary) (int, *Summary) {
	if len(summaries) == 0 {
		return 0, nil
	}
	pos := make(map[string]int, len(history))
	for i, m := range history {
		pos[m.ID] = i
	}
	for i := len(summaries) - 1; i >= 0; i-- {
		if p, ok := pos[summaries[i].UpToMessageID]; ok {
			return p + 1, &summaries[i]
		}
	}
	return 0, nil
}

// The framing of a summary in requests. These strings are part of the
// cached prefix: changing them costs every session one cache miss.
const (
	SummaryHeader = "[Summary of the conversation so far]"
	SummaryNote   = "(This summary stands for the earlier part of our conversation, which no longer fits in the context. " +
		"It is background: the messages that follow take precedence. Files, outputs and paths it mentions can be read again " +
		"in the computer if needed; do not redo work it reports as done.)"
	SummaryAck = "Understood. I have the summary of our conversation so far and will continue from it."
)

// summaryMessages renders a summary as the head of a request.
func summaryMessages(sum *Summary, live []StoredMsg) []llm.Message {
	if sum == nil {
		return make([]llm.Message, 0, len(live))
	}
	msgs := make([]llm.Message, 0, len(live)+2)
	msgs = append(msgs, llm.Message{Role: llm.User, Parts: []llm.Part{
		&llm.Text{Text: SummaryHeader + "\n\n" + sum.Text + "\n\n" + SummaryNote}}})
	if len(live) > 0 && live[0].Message.Role == llm.User {
		msgs = append(msgs, llm.Message{Role: llm.Assistant, Parts: []llm.Part{&llm.Text{Text: SummaryAck}}})
	}
	return msgs
}

// protectedFrom returns the index in live of the keep-th last assistant
// message (-1 when there are fewer): tool results after it answer the
// latest turns.
func protectedFrom(live []StoredMsg, keep int) int {
	for i := len(live) - 1; i >= 0; i-- {
		if live[i].Message.Role == llm.Assistant {
			if keep--; keep == 0 {
				return i
			}
		}
	}
	return -1
}
