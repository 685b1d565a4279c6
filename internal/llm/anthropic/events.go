package anthropic

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"

	"den.dev/den/internal/llm"
)

// decoder turns one answer's SSE events into llm events, keeping the
// state that spans events: open content blocks, the tool-call count,
// the usage so far and the stop reason.
type decoder struct {
	blocks map[int64]*block
	tools  int // tool calls started so far
	usage  llm.Usage
	stop   anthropic.StopReason
	done   bool // message_stop seen
	out    []llm.Event
}

// block is an open content block.
type block struct {
	kind      string          // the content block's type
	text      strings.Builder // thinking text or tool-call JSON so far
	signature string          // thinking
	data      string          // redacted_thinking
	call      llm.ToolCall    // tool_use: ID and Name
	index     int             // tool_use: index among this turn's calls
	input     string          // tool_use: the input content_block_start carried
}

// decode returns the llm events ev stands for. The slice is reused by
// the next call.
func (d *decoder) decode(ev anthropic.MessageStreamEventUnion) ([]llm.Event, error) {
	d.out = d.out[:0]
	var err error
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		d.usage = llm.Usage{
			InputTokens:      u.InputTokens,
			OutputTokens:     u.OutputTokens,
			CacheReadTokens:  u.CacheReadInputTokens,
			CacheWriteTokens: u.CacheCreationInputTokens,
		}
		d.emitUsage()
	case "content_block_start":
		err = d.start(ev.Index, &ev.ContentBlock)
	case "content_block_delta":
		err = d.delta(ev.Index, &ev.Delta)
	case "content_block_stop":
		err = d.finish(ev.Index)
	case "message_delta":
		if ev.Delta.StopReason != "" {
			d.stop = ev.Delta.StopReason
		}
		// Usage here is cumulative; a field the event leaves out keeps
		// the value message_start gave it.
		u := &ev.Usage
		if u.JSON.InputTokens.Valid() {
			d.usage.InputTokens = u.InputTokens
		}
		if u.JSON.OutputTokens.Valid() {
			d.usage.OutputTokens = u.OutputTokens
		}
		if u.JSON.CacheReadInputTokens.Valid() {
			d.usage.CacheReadTokens = u.CacheReadInputTokens
		}
		if u.JSON.CacheCreationInputTokens.Valid() {
			d.usage.CacheWriteTokens = u.CacheCreationInputTokens
		}
		d.emitUsage()
	case "message_stop":
		d.done = true
		d.out = append(d.out, &llm.Done{Stop: stopReason(d.stop)})
	}
	// Other events (future types) are ignored, as the API's versioning
	// policy asks of clients.
	if err != nil {
		return nil, fmt.Errorf("anthropic: %w: %v", llm.ErrStream, err)
	}
	return d.out, nil
}

func (d *decoder) emitUsage() {
	u := d.usage
	d.out = append(d.out, &u)
}

func (d *decoder) start(i int64, cb *anthropic.ContentBlockStartEventContentBlockUnion) error {
	if d.blocks == nil {
		d.blocks = make(map[int64]*block)
	}
	if _, ok := d.blocks[i]; ok {
		return fmt.Errorf("content block %d started twice", i)
	}
	b := &block{kind: cb.Type}
	d.blocks[i] = b
	switch cb.Type {
	case "text":
		if cb.Text != "" {
			d.out = append(d.out, &llm.TextDelta{Text: cb.Text})
		}
	case "thinking":
		b.signature = cb.Signature
		if cb.Thinking != "" {
			b.text.WriteString(cb.Thinking)
			d.out = append(d.out, &llm.ThinkingDelta{Text: cb.Thinking})
		}
	case "redacted_thinking":
		b.data = cb.Data
	case "tool_use":
		b.call = llm.ToolCall{ID: cb.ID, Name: cb.Name, API: api}
		b.index = d.tools
		b.input = cb.JSON.Input.Raw()
		d.tools++
		d.out = append(d.out, &llm.ToolCallStart{Index: b.index, ID: cb.ID, Name: cb.Name})
	}
	return nil
}

func (d *decoder) delta(i int64, delta *anthropic.MessageStreamEventUnionDelta) error {
	b, ok := d.blocks[i]
	if !ok {
		return fmt.Errorf("%s for content block %d, which was not started", delta.Type, i)
	}
	switch delta.Type {
	case "text_delta":
		if b.kind != "text" {
			return fmt.Errorf("text_delta for a %s block", b.kind)
		}
		if delta.Text != "" {
			d.out = append(d.out, &llm.TextDelta{Text: delta.Text})
		}
	case "thinking_delta":
		if b.kind != "thinking" {
			return fmt.Errorf("thinking_delta for a %s block", b.kind)
		}
		if delta.Thinking != "" {
			b.text.WriteString(delta.Thinking)
			d.out = append(d.out, &llm.ThinkingDelta{Text: delta.Thinking})
		}
	case "signature_delta":
		if b.kind != "thinking" {
			return fmt.Errorf("signature_delta for a %s block", b.kind)
		}
		b.signature += delta.Signature
	case "input_json_delta":
		if b.kind != "tool_use" {
			return fmt.Errorf("input_json_delta for a %s block", b.kind)
		}
		if delta.PartialJSON != "" {
			b.text.WriteString(delta.PartialJSON)
			d.out = append(d.out, &llm.ToolCallDelta{Index: b.index, JSON: delta.PartialJSON})
		}
	}
	// citations_delta and future delta types carry nothing den keeps.
	return nil
}

func (d *decoder) finish(i int64) error {
	b, ok := d.blocks[i]
	if !ok {
		return fmt.Errorf("content_block_stop for content block %d, which was not started", i)
	}
	delete(d.blocks, i)
	switch b.kind {
	case "thinking":
		d.out = append(d.out, &llm.ThinkingDone{Thinking: llm.Thinking{
			Text:      b.text.String(),
			Signature: b.signature,
			API:       api,
		}})
	case "redacted_thinking":
		data, _ := json.Marshal(b.data) // a string always marshals
		d.out = append(d.out, &llm.ThinkingDone{Thinking: llm.Thinking{
			Redacted: true,
			Opaque:   data,
			API:      api,
		}})
	case "tool_use":
		call := b.call
		switch {
		case b.text.Len() > 0:
			call.Input = json.RawMessage(b.text.String())
		case b.input != "" && b.input != "null":
			// Some compatible endpoints send the whole input with the
			// block's start instead of as deltas.
			call.Input = json.RawMessage(b.input)
		default:
			call.Input = json.RawMessage("{}")
		}
		d.out = append(d.out, &llm.ToolCallDone{Index: b.index, Call: call})
	}
	return nil
}

// stopReason maps the API's stop_reason onto llm's.
func stopReason(r anthropic.StopReason) llm.StopReason {
	switch r {
	case anthropic.StopReasonEndTurn, anthropic.StopReasonStopSequence:
		return llm.StopEndTurn
	case anthropic.StopReasonToolUse:
		return llm.StopToolUse
	case anthropic.StopReasonMaxTokens:
		return llm.StopMaxTokens
	case anthropic.StopReasonRefusal:
		return llm.StopRefusal
	default:
		return llm.StopOther
	}
}
