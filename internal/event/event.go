// Package event is the one vocabulary of events every face reads: the
// JSON object of each event a run, a host command or the permission
// gate reports, as `den run --json` prints it, as the daemon stores it
// and as its event streams send it.
//
// An event on the wire is one JSON object: "type", the event's own
// fields, and, once stored, "event_id" (increasing across all
// sessions), "session_id" and "time" (RFC 3339 with nanoseconds, UTC).
// "id" is the event's id too, except on the events that are about
// something with an id of its own, where it is that id, as den run
// --json has always printed it and as the approval routes take it:
// tool_call and tool_result (the call), approval_request and
// approval_resolved (the approval).
//
// The scheduler's events (schedule, schedule_run, schedule_delivery)
// have the same envelope; package schedule defines them and stores each
// in the transaction of the change it tells of, so they do not pass
// through Encode.
package event

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/egress"
	"den.dev/den/internal/hostsvc"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/store"
)

// Statuses of a session, as "status" events carry them.
const (
	Idle        = "idle"        // nothing runs; the session takes a message at once
	Running     = "running"     // a turn runs
	Waiting     = "waiting"     // a turn waits for a person (an approval, a question)
	Queued      = "queued"      // a message waits: another den process runs the session's turn
	Interrupted = "interrupted" // the last turn was stopped (canceled, or den stopped) before it ended
	Error       = "error"       // the last turn ended with an error
)

// Status is a session's new status. Detail says why, for error and
// interrupted.
type Status struct {
	Status string
	Detail string
}

// QueuedMessage says a message was queued because a turn is running: it
// joins the conversation at the next turn boundary, as MessageID.
type QueuedMessage struct {
	MessageID string
	Text      string
}

// Checkpoint says den kept a checkpoint of the computer before a turn's
// first tool call that may change it (undo): ID is the agent's
// checkpoint, Turn the assistant message whose calls come after it.
type Checkpoint struct {
	ID      int
	Turn    string
	Entries int           // entries it holds
	Read    int           // files read because they had changed
	Added   int64         // bytes it added to the agent's checkpoints
	Took    time.Duration // how long it took
}

// Restored says the computer was put back as checkpoint ID had it
// (before turn Turn); Saved is the checkpoint of the state it replaced
// (0: not kept). Untouched names, for people, what a restore never
// touches (the user's folders among them).
type Restored struct {
	ID                      int
	Turn                    string
	Saved                   int
	Added, Removed, Changed int
	Untouched               []string
}

// Encode returns e's type and its fields as a JSON object. e is an
// agent.Event, a host-command event (hostsvc), a permission.Event, a
// connection of a computer (*egress.Record, "egress"), *Status,
// *QueuedMessage, *Checkpoint or *Restored; ok is false for anything else, which faces
// do not see.
func Encode(e any) (typ string, data json.RawMessage, ok bool) {
	v, typ := fields(e)
	if v == nil {
		return "", nil, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		// Every value above marshals; a failure is a bug to show, not
		// an event to drop silently.
		b, _ = json.Marshal(map[string]string{"message": "den could not encode a " + typ + " event: " + err.Error()})
		typ = "error"
	}
	return typ, b, true
}

// fields is what Encode marshals for e, and e's type.
func fields(e any) (any, string) {
	switch e := e.(type) {
	case *agent.SessionEvent:
		// The session's id is the stored event's own session_id.
		return struct {
			Agent     string `json:"agent"`
			Workspace string `json:"workspace"`
		}{e.Agent, e.Workspace}, "session"
	case *agent.TextEvent:
		return text{e.Text}, "text"
	case *agent.ThinkingEvent:
		return text{e.Text}, "thinking"
	case *agent.ToolCallEvent:
		return struct {
			ID     string          `json:"id"`
			Name   string          `json:"name"`
			Input  json.RawMessage `json:"input"`
			Labels []string        `json:"labels,omitempty"`
		}{e.ID, e.Name, validJSON(e.Input), e.Labels}, "tool_call"
	case *agent.ToolResultEvent:
		return struct {
			ID         string `json:"id"`
			Output     string `json:"output"`
			IsError    bool   `json:"is_error"`
			DurationMS int64  `json:"duration_ms"`
			ExitCode   *int   `json:"exit_code,omitempty"`
		}{e.ID, e.Output, e.IsError, e.Duration.Milliseconds(), e.ExitCode}, "tool_result"
	case *agent.UsageEvent:
		return struct {
			InputTokens      int64   `json:"input_tokens"`
			OutputTokens     int64   `json:"output_tokens"`
			CacheReadTokens  int64   `json:"cache_read_tokens"`
			CacheWriteTokens int64   `json:"cache_write_tokens"`
			CostUSD          float64 `json:"cost_usd"`
			ContextTokens    int     `json:"context_tokens,omitempty"`
			ContextWindow    int     `json:"context_window,omitempty"`
			Model            string  `json:"model,omitempty"`
			LatencyMS        int64   `json:"latency_ms,omitempty"`
			// Breakdown: the input tokens (uncached, cache reads and
			// writes together) shared among the request's parts.
			Breakdown map[string]int64 `json:"breakdown,omitempty"`
		}{e.Usage.InputTokens, e.Usage.OutputTokens, e.Usage.CacheReadTokens, e.Usage.CacheWriteTokens, e.CostUSD,
			e.Context.Estimated, e.Context.Window, e.Model, e.Latency.Milliseconds(), e.Breakdown}, "usage"
	case *agent.WarningEvent:
		return message{e.Message}, "warning"
	case *agent.MessageEvent:
		return struct {
			MessageID string `json:"message_id"`
			Role      string `json:"role"`
			Queued    bool   `json:"queued,omitempty"`
		}{e.ID, string(e.Role), e.Queued}, "message"
	case *agent.CompactionEvent:
		return struct {
			Compacted int `json:"compacted"`
			Kept      int `json:"kept"`
		}{e.Compacted, e.Kept}, "compaction"
	case *agent.RetryEvent:
		return struct {
			Attempt int    `json:"attempt"`
			DelayMS int64  `json:"delay_ms"`
			Reason  string `json:"reason"`
			Model   string `json:"model,omitempty"`
		}{e.Attempt, e.Delay.Milliseconds(), e.Reason, e.Model}, "retry"
	case *agent.ModelEvent:
		return struct {
			Model string `json:"model"`
		}{e.Model}, "model"
	case *agent.ErrorEvent:
		return message{e.Message}, "error"
	case *agent.DoneEvent:
		return struct {
			StopReason string `json:"stop_reason"`
			Text       string `json:"text"`
		}{string(e.Stop), e.Text}, "done"
	case *Status:
		return struct {
			Status string `json:"status"`
			Detail string `json:"detail,omitempty"`
		}{e.Status, e.Detail}, "status"
	case *QueuedMessage:
		return struct {
			MessageID string `json:"message_id"`
			Text      string `json:"text"`
		}{e.MessageID, e.Text}, "queued"
	case *Checkpoint:
		return struct {
			Checkpoint int    `json:"checkpoint"`
			MessageID  string `json:"message_id"`
			Entries    int    `json:"entries"`
			Read       int    `json:"read"`
			Added      int64  `json:"added_bytes"`
			TookMS     int64  `json:"took_ms"`
		}{e.ID, e.Turn, e.Entries, e.Read, e.Added, e.Took.Milliseconds()}, "checkpoint"
	case *Restored:
		return struct {
			Checkpoint int      `json:"checkpoint"`
			MessageID  string   `json:"message_id,omitempty"`
			Saved      int      `json:"saved,omitempty"`
			Added      int      `json:"added"`
			Removed    int      `json:"removed"`
			Changed    int      `json:"changed"`
			Untouched  []string `json:"untouched"`
		}{e.ID, e.Turn, e.Saved, e.Added, e.Removed, e.Changed, e.Untouched}, "restored"
	case *hostsvc.OpenEvent:
		return struct {
			Target string `json:"target"`
		}{e.Target}, "open"
	case *hostsvc.NotifyEvent:
		return struct {
			Title   string `json:"title"`
			Message string `json:"message"`
		}{e.Title, e.Message}, "notify"
	case *hostsvc.SpeechEvent:
		return struct {
			Path string `json:"path"`
			Text string `json:"text"`
		}{e.Path, e.Text}, "speech"
	case *egress.Record:
		// One connection of a computer; "time" is when it ended (a
		// refused one: when it was refused).
		var msg string
		if !e.Allowed {
			msg = egress.Denied(*e)
		}
		return struct {
			*egress.Record
			DurationMS int64  `json:"duration_ms"`
			Message    string `json:"message,omitempty"`
		}{e, e.Duration.Milliseconds(), msg}, "egress"
	case *permission.ApprovalRequest:
		return struct {
			*permission.ApprovalRequest
			Question string `json:"question"`
		}{e, e.Question()}, e.Type()
	case *permission.ApprovalResolved:
		decision := "deny"
		if e.Approved {
			decision = "allow"
		}
		return struct {
			*permission.ApprovalResolved
			Decision string `json:"decision"`
			By       string `json:"by"`
		}{e, decision, string(e.DecidedBy)}, e.Type()
	}
	return nil, ""
}

type text struct {
	Text string `json:"text"`
}

type message struct {
	Message string `json:"message"`
}

// validJSON is raw, or raw as a JSON string when it is not valid JSON
// (a model's malformed arguments must not break the event's object).
func validJSON(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(raw) {
		return raw
	}
	b, _ := json.Marshal(string(raw))
	return b
}

// ownID are the types whose "id" field is their subject's.
var ownID = map[string]bool{"tool_call": true, "tool_result": true, "approval_request": true, "approval_resolved": true}

// Marshal is a stored event as one JSON object: id (see the package
// doc), event_id, session_id (absent for an event of no session), time,
// type, then the event's fields.
func Marshal(e store.Event) ([]byte, error) {
	data := bytes.TrimSpace(e.Data)
	if len(data) < 2 || data[0] != '{' {
		return nil, fmt.Errorf("event %d: data is not a JSON object", e.ID)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	if !ownID[e.Type] {
		fmt.Fprintf(&b, `"id":%d,`, e.ID)
	}
	fmt.Fprintf(&b, `"event_id":%d,`, e.ID)
	if e.Session != "" {
		s, _ := json.Marshal(e.Session)
		fmt.Fprintf(&b, `"session_id":%s,`, s)
	}
	t, _ := json.Marshal(e.Time.UTC().Format(time.RFC3339Nano))
	typ, _ := json.Marshal(e.Type)
	fmt.Fprintf(&b, `"time":%s,"type":%s`, t, typ)
	inner := bytes.TrimSpace(data[1 : len(data)-1])
	if len(inner) > 0 {
		b.WriteByte(',')
		b.Write(inner)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
