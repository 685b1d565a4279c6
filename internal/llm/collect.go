package llm

import (
	"encoding/json"
	"strings"
)

// Turn is what one streamed turn produced.
type Turn struct {
	Message Message // the assistant message, parts in stream order
	Usage   Usage
	Stop    StopReason
	Done    bool   // a Done event arrived
	Model   string // the model that answered (the last *Answered), "" when the stream did not say
}

// Collector assembles a turn from stream events. Text deltas are kept
// in builders, so a long answer costs linear work.
type Collector struct {
	turn     Turn
	text     strings.Builder
	thinking strings.Builder
	calls    map[int]*ToolCall
	args     map[int]*strings.Builder
}

// Add takes one event.
func (c *Collector) Add(ev Event) {
	switch e := ev.(type) {
	case *TextDelta:
		c.flushThinking(nil)
		c.text.WriteString(e.Text)
	case *ThinkingDelta:
		c.flushText()
		c.thinking.WriteString(e.Text)
	case *ThinkingDone:
		c.flushText()
		t := e.Thinking
		c.flushThinking(&t)
	case *ToolCallStart:
		c.flushText()
		c.flushThinking(nil)
		if c.calls == nil {
			c.calls = map[int]*ToolCall{}
			c.args = map[int]*strings.Builder{}
		}
		c.calls[e.Index] = &ToolCall{ID: e.ID, Name: e.Name}
		c.args[e.Index] = &strings.Builder{}
	case *ToolCallDelta:
		if b := c.args[e.Index]; b != nil {
			b.WriteString(e.JSON)
		}
	case *ToolCallDone:
		c.flushText()
		c.flushThinking(nil)
		call := e.Call
		if len(call.Input) == 0 {
			if b := c.args[e.Index]; b != nil && b.Len() > 0 {
				call.Input = json.RawMessage(b.String())
			} else {
				call.Input = json.RawMessage("{}")
			}
		}
		delete(c.calls, e.Index)
		delete(c.args, e.Index)
		c.turn.Message.Parts = append(c.turn.Message.Parts, &call)
	case *Usage:
		c.turn.Usage = *e
	case *Done:
		c.turn.Stop = e.Stop
		c.turn.Done = true
	case *Answered:
		c.turn.Model = e.Model
	case *Retry:
		*c = Collector{}
	}
}

func (c *Collector) flushText() {
	if c.text.Len() > 0 {
		c.turn.Message.Parts = append(c.turn.Message.Parts, &Text{Text: c.text.String()})
		c.text.Reset()
	}
}

// flushThinking ends the current reasoning; done, when not nil, is the
// complete block from the stream (with its signature), which wins over
// the accumulated deltas.
func (c *Collector) flushThinking(done *Thinking) {
	if done != nil {
		if done.Text == "" {
			done.Text = c.thinking.String()
		}
		c.thinking.Reset()
		c.turn.Message.Parts = append(c.turn.Message.Parts, done)
		return
	}
	if c.thinking.Len() > 0 {
		c.turn.Message.Parts = append(c.turn.Message.Parts, &Thinking{Text: c.thinking.String()})
		c.thinking.Reset()
	}
}

// Turn returns what was collected: the assistant message (only parts
// that completed, plus the text so far), usage and stop reason. Calls
// that started but never completed are left out: a partial call is
// never run.
func (c *Collector) Turn() Turn {
	c.flushText()
	c.flushThinking(nil)
	t := c.turn
	t.Message.Role = Assistant
	return t
}

// Calls returns the tool calls of a message, in order.
func Calls(m Message) []*ToolCall {
	var out []*ToolCall
	for _, p := range m.Parts {
		if c, ok := p.(*ToolCall); ok {
			out = append(out, c)
		}
	}
	return out
}

// TextOf joins the text parts of a message.
func TextOf(m Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		if t, ok := p.(*Text); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// Alternate merges consecutive messages of the same role into one, so
// that what is sent alternates between user and assistant, as every
// provider API requires (stored history may hold two user messages in a
// row: tool results committed just before a crash, then the next
// prompt). In a merged user message tool results come first.
func Alternate(msgs []Message) []Message {
	out := make([]Message, 0, len(msgs))
	for _, m := range msgs {
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			prev := &out[n-1]
			parts := append(append([]Part(nil), prev.Parts...), m.Parts...)
			if m.Role == User {
				var results, rest []Part
				for _, p := range parts {
					if _, ok := p.(*ToolResult); ok {
						results = append(results, p)
					} else {
						rest = append(rest, p)
					}
				}
				parts = append(results, rest...)
			}
			prev.Parts = parts
			continue
		}
		out = append(out, Message{Role: m.Role, Parts: m.Parts})
	}
	return out
}
