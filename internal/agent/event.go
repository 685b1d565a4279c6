package agent

import (
	"encoding/json"
	"time"

	"den.dev/den/internal/agent/ctxwin"
	"den.dev/den/internal/llm"
)

// Event is what a run reports to the faces: *SessionEvent, *TextEvent,
// *ThinkingEvent, *ToolCallEvent, *ToolResultEvent, *UsageEvent,
// *RetryEvent, *ModelEvent, *CompactionEvent, *WarningEvent,
// *MessageEvent, *ErrorEvent or *DoneEvent. Only the faces turn them
// into JSON.
type Event interface{ isEvent() }

// SessionEvent opens a run.
type SessionEvent struct {
	SessionID string
	Agent     string
	Workspace string // host path of the session's /workspace
}

// TextEvent is more answer text.
type TextEvent struct{ Text string }

// ThinkingEvent is more reasoning text.
type ThinkingEvent struct{ Text string }

// ToolCallEvent is a call about to run. Labels classify it for tool
// cards (for shell commands: read_only, writes, destructive, network,
// package_install, touches_mount, host_command, runs_code).
type ToolCallEvent struct {
	ID     string
	Name   string
	Input  json.RawMessage
	Labels []string
}

// Labeler is what Tools may also do: classify a call for the faces.
type Labeler interface {
	Labels(call *llm.ToolCall) []string
}

// ToolResultEvent is a call's result.
type ToolResultEvent struct {
	ID       string
	Output   string
	IsError  bool
	Duration time.Duration // how long it ran (0 for a call answered without running)
	ExitCode *int          // a shell command's exit status
}

// UsageEvent reports one request's tokens, and how full the model's
// context window was.
type UsageEvent struct {
	Usage   llm.Usage
	CostUSD float64
	Context ctxwin.Use
	Model   string // the model that answered the request
	// Latency is how long the request took, from sending it to the
	// stream's end.
	Latency time.Duration
	// Breakdown shares the input tokens the provider reported among the
	// request's parts, by their estimates: "system", "skills",
	// "memory", "context_files", "tools", "history", "attachments".
	Breakdown map[string]int64
}

// WarningEvent is something the user should know that did not stop the
// run: a model den knows nothing about, calls interrupted when den last
// stopped.
type WarningEvent struct{ Message string }

// MessageEvent says a message was committed to the session's history:
// the prompt, an assistant turn, a turn's results, or a message that
// was queued for the session (Queued) and joined the conversation at
// this turn boundary.
type MessageEvent struct {
	ID     string
	Role   llm.Role
	Queued bool
}

// RetryEvent says the current attempt failed and the turn starts over
// after Delay: what it streamed so far is void.
type RetryEvent struct {
	Attempt int
	Delay   time.Duration
	Reason  string
	Model   string
}

// CompactionEvent says the oldest part of the history was summarized
// for the requests from here on (the stored history is unchanged).
type CompactionEvent struct {
	Compacted, Kept, Calls int
}

// ModelEvent names the model answering from here on.
type ModelEvent struct{ Model string }

// ErrorEvent reports an error that ended the run.
type ErrorEvent struct{ Message string }

// DoneEvent ends a run.
type DoneEvent struct {
	Stop llm.StopReason
	Text string
}

func (*SessionEvent) isEvent()    {}
func (*TextEvent) isEvent()       {}
func (*ThinkingEvent) isEvent()   {}
func (*ToolCallEvent) isEvent()   {}
func (*ToolResultEvent) isEvent() {}
func (*UsageEvent) isEvent()      {}
func (*ErrorEvent) isEvent()      {}
func (*RetryEvent) isEvent()      {}
func (*ModelEvent) isEvent()      {}
func (*CompactionEvent) isEvent() {}
func (*DoneEvent) isEvent()       {}
func (*WarningEvent) isEvent()    {}
func (*MessageEvent) isEvent()    {}
