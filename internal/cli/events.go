package cli

import (
	"encoding/json"
	"io"
	"sync"

	"den.dev/den/internal/agent"
)

// jsonEvents writes each run event as one JSON object per line, with
// its type. This is den run --json's wire format: scripts depend on it.
type jsonEvents struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func newJSONEvents(w io.Writer) *jsonEvents { return &jsonEvents{enc: json.NewEncoder(w)} }

func (j *jsonEvents) emit(e agent.Event) {
	var v any
	switch e := e.(type) {
	case *agent.SessionEvent:
		v = struct {
			Type      string `json:"type"`
			SessionID string `json:"session_id"`
			Agent     string `json:"agent"`
			Workspace string `json:"workspace"`
		}{"session", e.SessionID, e.Agent, e.Workspace}
	case *agent.TextEvent:
		v = textLine{"text", e.Text}
	case *agent.ThinkingEvent:
		v = textLine{"thinking", e.Text}
	case *agent.ToolCallEvent:
		v = struct {
			Type   string          `json:"type"`
			ID     string          `json:"id"`
			Name   string          `json:"name"`
			Input  json.RawMessage `json:"input"`
			Labels []string        `json:"labels,omitempty"`
		}{"tool_call", e.ID, e.Name, e.Input, e.Labels}
	case *agent.ToolResultEvent:
		v = struct {
			Type       string `json:"type"`
			ID         string `json:"id"`
			Output     string `json:"output"`
			IsError    bool   `json:"is_error"`
			DurationMS int64  `json:"duration_ms"`
			ExitCode   *int   `json:"exit_code,omitempty"`
		}{"tool_result", e.ID, e.Output, e.IsError, e.Duration.Milliseconds(), e.ExitCode}
	case *agent.UsageEvent:
		v = struct {
			Type             string  `json:"type"`
			InputTokens      int64   `json:"input_tokens"`
			OutputTokens     int64   `json:"output_tokens"`
			CacheReadTokens  int64   `json:"cache_read_tokens"`
			CacheWriteTokens int64   `json:"cache_write_tokens"`
			CostUSD          float64 `json:"cost_usd"`
			ContextTokens    int     `json:"context_tokens,omitempty"`
			ContextWindow    int     `json:"context_window,omitempty"`
			Model            string  `json:"model,omitempty"`
		}{"usage", e.Usage.InputTokens, e.Usage.OutputTokens, e.Usage.CacheReadTokens, e.Usage.CacheWriteTokens, e.CostUSD,
			e.Context.Estimated, e.Context.Window, e.Model}
	case *agent.WarningEvent:
		v = struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}{"warning", e.Message}
	case *agent.QueuedEvent:
		v = struct {
			Type      string `json:"type"`
			Delivered int    `json:"delivered"`
		}{"queued", e.Delivered}
	case *agent.CompactionEvent:
		v = struct {
			Type      string `json:"type"`
			Compacted int    `json:"compacted"`
			Kept      int    `json:"kept"`
		}{"compaction", e.Compacted, e.Kept}
	case *agent.RetryEvent:
		v = struct {
			Type    string `json:"type"`
			Attempt int    `json:"attempt"`
			DelayMS int64  `json:"delay_ms"`
			Reason  string `json:"reason"`
			Model   string `json:"model,omitempty"`
		}{"retry", e.Attempt, e.Delay.Milliseconds(), e.Reason, e.Model}
	case *agent.ModelEvent:
		v = struct {
			Type  string `json:"type"`
			Model string `json:"model"`
		}{"model", e.Model}
	case *agent.ErrorEvent:
		v = struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}{"error", e.Message}
	case *agent.DoneEvent:
		v = struct {
			Type       string `json:"type"`
			StopReason string `json:"stop_reason"`
			Text       string `json:"text"`
		}{"done", string(e.Stop), e.Text}
	default:
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.enc.Encode(v)
}

type textLine struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// emitHost writes a host-command or permission event.
func (j *jsonEvents) emitHost(e any) {
	v := hostEventJSON(e)
	if v == nil {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.enc.Encode(v)
}
