package openai

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/internal/openaiapi"
)

// state assembles one streamed turn.
type state struct {
	buf      []llm.Event
	calls    []*call
	byWire   map[int64]*call // the latest call at each wire index
	ids      openaiapi.CallIDs
	thinking *strings.Builder // the open reasoning block, if any
	refusal  bool
	any      bool   // text, reasoning or a call arrived
	finish   string // the finish reason, once sent
	usage    *llm.Usage
}

// call is a tool call being assembled.
type call struct {
	index  int
	rawID  string
	id     string
	name   string
	args   strings.Builder
	closed bool
}

// chunk folds one chunk into the turn and returns its events, valid
// until the next call.
func (s *state) chunk(c *openai.ChatCompletionChunk) []llm.Event {
	s.buf = s.buf[:0]
	if c.JSON.Usage.Valid() {
		s.usage = usage(&c.Usage)
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 || s.finish != "" {
			continue // n is 1; nothing counts after the finish
		}
		d := &ch.Delta
		if f, ok := d.JSON.ExtraFields["reasoning_content"]; ok {
			if text, ok := jsonString(f.Raw()); ok {
				s.any = true
				if s.thinking == nil {
					s.thinking = new(strings.Builder)
				}
				if text != "" {
					s.thinking.WriteString(text)
					s.buf = append(s.buf, &llm.ThinkingDelta{Text: text})
				}
			}
		}
		if d.Content != "" {
			s.closeThinking()
			s.any = true
			s.buf = append(s.buf, &llm.TextDelta{Text: d.Content})
		}
		if d.Refusal != "" {
			s.closeThinking()
			s.any, s.refusal = true, true
			s.buf = append(s.buf, &llm.TextDelta{Text: d.Refusal})
		}
		for j := range d.ToolCalls {
			s.closeThinking()
			s.toolCall(&d.ToolCalls[j])
		}
		if ch.FinishReason != "" {
			s.closeThinking()
			s.closeCalls()
			s.finish = ch.FinishReason
		}
	}
	return s.buf
}

// toolCall folds one tool_calls delta into its call.
func (s *state) toolCall(tc *openai.ChatCompletionChunkChoiceDeltaToolCall) {
	s.any = true
	c := s.byWire[tc.Index]
	if c == nil || (tc.ID != "" && tc.ID != c.rawID && tc.Function.Name != "") {
		c = &call{index: len(s.calls), rawID: tc.ID, id: s.ids.Unique(tc.ID), name: tc.Function.Name}
		s.calls = append(s.calls, c)
		if s.byWire == nil {
			s.byWire = make(map[int64]*call)
		}
		s.byWire[tc.Index] = c
		s.buf = append(s.buf, &llm.ToolCallStart{Index: c.index, ID: c.id, Name: c.name})
	} else if c.name == "" {
		c.name = tc.Function.Name
	}
	if a := tc.Function.Arguments; a != "" && !c.closed {
		c.args.WriteString(a)
		s.buf = append(s.buf, &llm.ToolCallDelta{Index: c.index, JSON: a})
	}
}

// closeThinking ends the open reasoning block with its echo.
func (s *state) closeThinking() {
	if s.thinking == nil {
		return
	}
	s.buf = append(s.buf, &llm.ThinkingDone{Thinking: llm.Thinking{Text: s.thinking.String(), API: API}})
	s.thinking = nil
}

// closeCalls completes every open call, in order.
func (s *state) closeCalls() {
	for _, c := range s.calls {
		if c.closed {
			continue
		}
		c.closed = true
		input := openaiapi.Arguments(c.args.String())
		s.buf = append(s.buf, &llm.ToolCallDone{Index: c.index, Call: llm.ToolCall{
			ID: c.id, Name: c.name, Input: json.RawMessage(input), API: API,
		}})
	}
}

// end finishes a stream that ended cleanly: Usage, then Done.
func (s *state) end() ([]llm.Event, error) {
	s.buf = s.buf[:0]
	if s.finish == "" {
		if !s.any {
			return nil, fmt.Errorf("openai: %w: no text, tool call or finish reason", llm.ErrEmpty)
		}
		return nil, fmt.Errorf("openai: %w: the stream ended without a finish reason", llm.ErrStream)
	}
	if s.usage != nil {
		s.buf = append(s.buf, s.usage)
	}
	return append(s.buf, &llm.Done{Stop: s.stop()}), nil
}

// stop maps the finish reason.
func (s *state) stop() llm.StopReason {
	switch s.finish {
	case "stop", "end_turn", "eos":
		switch {
		case len(s.calls) > 0: // gateways that say stop after calls
			return llm.StopToolUse
		case s.refusal:
			return llm.StopRefusal
		}
		return llm.StopEndTurn
	case "tool_calls", "function_call":
		return llm.StopToolUse
	case "length":
		return llm.StopMaxTokens
	case "content_filter":
		return llm.StopRefusal
	}
	return llm.StopOther
}

// usage maps a usage object. prompt_tokens counts every prompt token,
// cache reads and writes included. Cache reads are
// prompt_tokens_details.cached_tokens (OpenAI, OpenRouter), else
// DeepSeek's prompt_cache_hit_tokens, else LiteLLM's Anthropic-style
// cache_read_input_tokens; cache writes are
// prompt_tokens_details.cache_write_tokens (OpenRouter), else LiteLLM's
// cache_creation_input_tokens.
func usage(u *openai.CompletionUsage) *llm.Usage {
	read := u.PromptTokensDetails.CachedTokens
	if read == 0 {
		read = extraInt(u, "prompt_cache_hit_tokens")
	}
	if read == 0 {
		read = extraInt(u, "cache_read_input_tokens")
	}
	write := u.PromptTokensDetails.CacheWriteTokens
	if write == 0 {
		write = extraInt(u, "cache_creation_input_tokens")
	}
	return &llm.Usage{
		InputTokens:      max(0, u.PromptTokens-read-write),
		OutputTokens:     u.CompletionTokens,
		CacheReadTokens:  read,
		CacheWriteTokens: write,
	}
}

// extraInt is a non-standard integer field of a usage object, or 0.
func extraInt(u *openai.CompletionUsage, name string) int64 {
	f, ok := u.JSON.ExtraFields[name]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(f.Raw(), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// jsonString decodes raw when it is a JSON string.
func jsonString(raw string) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if !strings.ContainsRune(raw, '\\') {
		return raw[1 : len(raw)-1], true
	}
	var s string
	if json.Unmarshal([]byte(raw), &s) != nil {
		return "", false
	}
	return s, true
}
