package llm

// Pair makes a conversation valid for every provider API: empty
// messages go, roles alternate (see Alternate), every tool call of an assistant message is
// answered in the next message (a synthetic error result stands in for
// a missing one), results that answer no call of the message before
// are dropped, and the conversation starts with a user message. The
// input is not changed.
func Pair(msgs []Message) []Message {
	nonEmpty := make([]Message, 0, len(msgs))
	for _, m := range msgs {
		if len(m.Parts) > 0 {
			nonEmpty = append(nonEmpty, m)
		}
	}
	msgs = Alternate(nonEmpty)
	for len(msgs) > 0 && msgs[0].Role != User {
		msgs = msgs[1:]
	}
	out := make([]Message, 0, len(msgs)+1)
	for i, m := range msgs {
		var calls []*ToolCall
		if i > 0 && msgs[i-1].Role == Assistant {
			calls = Calls(msgs[i-1])
		}
		if m.Role == User {
			m = answer(m, calls)
		}
		out = append(out, m)
		// An assistant message with calls and nothing after it: answer
		// it, so the conversation can go on.
		if m.Role == Assistant && i == len(msgs)-1 {
			if c := Calls(m); len(c) > 0 {
				out = append(out, answer(Message{Role: User}, c))
			}
		}
	}
	return out
}

// answer keeps the results of m that answer calls (once each, in call
// order, before the other parts) and adds a synthetic error result for
// every call left unanswered.
func answer(m Message, calls []*ToolCall) Message {
	byID := map[string]*ToolResult{}
	var rest []Part
	for _, p := range m.Parts {
		if r, ok := p.(*ToolResult); ok {
			if _, seen := byID[r.CallID]; !seen {
				byID[r.CallID] = r
			}
			continue
		}
		rest = append(rest, p)
	}
	parts := make([]Part, 0, len(calls)+len(rest))
	for _, c := range calls {
		r := byID[c.ID]
		if r == nil {
			r = &ToolResult{CallID: c.ID, Name: c.Name, IsError: true,
				Content: []Part{&Text{Text: "no result: the call was interrupted"}}}
		}
		parts = append(parts, r)
	}
	parts = append(parts, rest...)
	if len(parts) == 0 {
		parts = []Part{&Text{Text: "(continue)"}}
	}
	return Message{Role: m.Role, Parts: parts}
}
