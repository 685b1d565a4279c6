package openairesponses

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3/responses"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/internal/openaiapi"
)

// state assembles one streamed turn.
type state struct {
	model   string
	buf     []llm.Event
	calls   map[int64]*call // by output_index
	n       int             // calls so far
	ids     openaiapi.CallIDs
	refusal bool
	any     bool // text, reasoning or a call arrived
	done    bool // a terminal event arrived
}

// call is a function call being assembled.
type call struct {
	index int
	id    string
	name  string
	args  strings.Builder
}

// event folds one stream event into the turn and returns its events,
// valid until the next call, and the error a failure event carries.
func (s *state) event(e *responses.ResponseStreamEventUnion) ([]llm.Event, error) {
	s.buf = s.buf[:0]
	switch e.Type {
	case "response.output_text.delta":
		s.any = true
		s.buf = append(s.buf, &llm.TextDelta{Text: e.Delta})
	case "response.refusal.delta":
		s.any, s.refusal = true, true
		s.buf = append(s.buf, &llm.TextDelta{Text: e.Delta})
	case "response.reasoning_summary_part.added":
		if e.SummaryIndex > 0 {
			s.buf = append(s.buf, &llm.ThinkingDelta{Text: "\n\n"})
		}
	case "response.reasoning_summary_text.delta":
		s.any = true
		s.buf = append(s.buf, &llm.ThinkingDelta{Text: e.Delta})
	case "response.output_item.added":
		if e.Item.Type == "function_call" {
			s.start(e.OutputIndex, &e.Item)
		}
	case "response.function_call_arguments.delta":
		if c := s.calls[e.OutputIndex]; c != nil && e.Delta != "" {
			c.args.WriteString(e.Delta)
			s.buf = append(s.buf, &llm.ToolCallDelta{Index: c.index, JSON: e.Delta})
		}
	case "response.output_item.done":
		s.itemDone(e.OutputIndex, &e.Item)
	case "response.completed", "response.incomplete":
		s.done = true
		if e.Response.JSON.Usage.Valid() {
			s.buf = append(s.buf, usage(&e.Response.Usage))
		}
		s.buf = append(s.buf, &llm.Done{Stop: s.stop(e.Response.Status, e.Response.IncompleteDetails.Reason)})
	case "response.failed":
		msg := e.Response.Error.Message
		if msg == "" {
			msg = "the response failed"
		}
		return nil, &llm.APIError{API: API, Type: string(e.Response.Error.Code), Message: msg}
	case "error":
		return nil, &llm.APIError{API: API, Type: e.Code, Message: e.Message}
	}
	return s.buf, nil
}

// start opens a function call.
func (s *state) start(at int64, item *responses.ResponseOutputItemUnion) *call {
	s.any = true
	c := &call{index: s.n, id: s.ids.Unique(item.CallID), name: item.Name}
	s.n++
	if s.calls == nil {
		s.calls = make(map[int64]*call)
	}
	s.calls[at] = c
	s.buf = append(s.buf, &llm.ToolCallStart{Index: c.index, ID: c.id, Name: c.name})
	return c
}

// itemDone completes a function call or a reasoning item.
func (s *state) itemDone(at int64, item *responses.ResponseOutputItemUnion) {
	switch item.Type {
	case "function_call":
		c := s.calls[at]
		if c == nil {
			c = s.start(at, item)
		}
		delete(s.calls, at)
		input := item.Arguments.OfString
		if input == "" {
			input = c.args.String()
		}
		s.buf = append(s.buf, &llm.ToolCallDone{Index: c.index, Call: llm.ToolCall{
			ID: c.id, Name: c.name, Input: json.RawMessage(openaiapi.Arguments(input)), API: API,
		}})
	case "reasoning":
		s.any = true
		var text strings.Builder
		for i, sum := range item.Summary {
			if i > 0 {
				text.WriteString("\n\n")
			}
			text.WriteString(sum.Text)
		}
		th := llm.Thinking{Text: text.String(), API: API, Signature: s.model}
		if item.EncryptedContent != "" {
			th.Opaque = json.RawMessage(item.RawJSON())
		}
		s.buf = append(s.buf, &llm.ThinkingDone{Thinking: th})
	}
}

// end is the error for a stream that ended without a terminal event.
func (s *state) end() error {
	if !s.any {
		return fmt.Errorf("openai-responses: %w: no text, tool call or final status", llm.ErrEmpty)
	}
	return fmt.Errorf("openai-responses: %w: the stream ended before response.completed", llm.ErrStream)
}

// stop maps a final status.
func (s *state) stop(status responses.ResponseStatus, reason string) llm.StopReason {
	switch {
	case status == "incomplete" && reason == "max_output_tokens":
		return llm.StopMaxTokens
	case status == "incomplete" && reason == "content_filter":
		return llm.StopRefusal
	case status == "incomplete":
		return llm.StopOther
	case s.n > 0:
		return llm.StopToolUse
	case s.refusal:
		return llm.StopRefusal
	}
	return llm.StopEndTurn
}

// usage maps a usage object.
func usage(u *responses.ResponseUsage) *llm.Usage {
	read, write := u.InputTokensDetails.CachedTokens, u.InputTokensDetails.CacheWriteTokens
	return &llm.Usage{
		InputTokens:      max(0, u.InputTokens-read-write),
		OutputTokens:     u.OutputTokens,
		CacheReadTokens:  read,
		CacheWriteTokens: write,
	}
}
