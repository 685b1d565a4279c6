package agent

import (
	"context"
	"fmt"
	"strings"
	"time"

	"den.dev/den/internal/llm"
)

// Repair answers the tool calls of a session that den stopped while
// they ran (it was killed, or the machine went down): the head message
// is then an assistant message whose calls have no results message.
// A call that finished gets the result recorded for it; one that was
// running gets a result saying it was interrupted, after how long, and
// what it had printed; one that never started says so. The answers are
// stored as the message after the calls, so the model, and den
// sessions show, know what already ran. Repair returns how many calls
// did not finish. It is safe to call when there is nothing to repair
// (den does, before every run and at the daemon's start).
func Repair(ctx context.Context, st Store, sessionID string) (int, error) {
	msgID, calls, err := st.OpenCalls(ctx, sessionID)
	if err != nil {
		return 0, fmt.Errorf("agent: %w", err)
	}
	if msgID == "" {
		return 0, nil
	}
	msg := llm.Message{Role: llm.User}
	unfinished := 0
	for _, c := range calls {
		if c.Result != nil {
			msg.Parts = append(msg.Parts, c.Result)
			continue
		}
		unfinished++
		msg.Parts = append(msg.Parts, &llm.ToolResult{CallID: c.Call.ID, Name: c.Call.Name, IsError: true,
			Content: []llm.Part{&llm.Text{Text: Interrupted(c, time.Now())}}})
	}
	if _, err := st.Append(context.WithoutCancel(ctx), sessionID, Meta{}, msg); err != nil {
		return unfinished, fmt.Errorf("agent: answer interrupted calls: %w", err)
	}
	return unfinished, nil
}

// Interrupted is the result text of a call den stopped before it ended.
func Interrupted(c OpenCall, now time.Time) string {
	if c.Started.IsZero() {
		return "not run: den stopped before this call started. Run it again if it is still needed."
	}
	var b strings.Builder
	if c.Seen.After(c.Started) {
		fmt.Fprintf(&b, "interrupted: den stopped while this call was running, after it had run for %v.", round(c.Seen.Sub(c.Started)))
	} else {
		fmt.Fprintf(&b, "interrupted: den stopped while this call was running (it started %v before it was found unanswered).", round(now.Sub(c.Started)))
	}
	b.WriteString(" It may have had effects — files written, packages installed, processes started: check what it did before running it again.")
	if out := strings.TrimRight(c.Output, "\n"); out != "" {
		b.WriteString("\nOutput so far (its end):\n")
		b.WriteString(out)
	} else {
		b.WriteString("\nIt had printed nothing (or nothing den saved: output is saved once a second).")
	}
	return b.String()
}

func round(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Second)
}
