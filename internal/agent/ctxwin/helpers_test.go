package ctxwin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"den.dev/den/internal/llm"
)

// fakeSaver records what it saves: how often each name, and how many
// bytes.
type fakeSaver struct {
	mu    sync.Mutex
	saves map[string]int
	bytes int64
	err   error
}

func (s *fakeSaver) Save(ctx context.Context, name string, data []byte) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return "", s.err
	}
	if s.saves == nil {
		s.saves = map[string]int{}
	}
	s.saves[name]++
	s.bytes += int64(len(data))
	return OffloadDir + "/" + name, nil
}

// hist builds a stored history with ids m00000, m00001, …
type hist struct {
	msgs  []StoredMsg
	calls int
}

func (h *hist) add(role llm.Role, parts ...llm.Part) string {
	id := fmt.Sprintf("m%05d", len(h.msgs))
	h.msgs = append(h.msgs, StoredMsg{ID: id, Message: llm.Message{Role: role, Parts: parts}})
	return id
}

func (h *hist) user(text string) string { return h.add(llm.User, &llm.Text{Text: text}) }

func (h *hist) assistant(text string) string { return h.add(llm.Assistant, &llm.Text{Text: text}) }

// call appends an assistant message calling tool with outputs, one per
// call, and the user message with the results.
func (h *hist) call(text string, outputs ...string) {
	var calls, results []llm.Part
	if text != "" {
		calls = append(calls, &llm.Text{Text: text})
	}
	for _, out := range outputs {
		h.calls++
		id := fmt.Sprintf("call_%d", h.calls)
		input, _ := json.Marshal(map[string]string{"command": "cat /workspace/data-" + id + ".txt"})
		calls = append(calls, &llm.ToolCall{ID: id, Name: "shell_execute", Input: input})
		results = append(results, &llm.ToolResult{CallID: id, Name: "shell_execute", Content: []llm.Part{&llm.Text{Text: out}}})
	}
	h.add(llm.Assistant, calls...)
	h.add(llm.User, results...)
}

// checkRequest reports what makes msgs an invalid request: roles that
// do not alternate, a call not answered in the next message, a result
// answering no call of the previous message.
func checkRequest(msgs []llm.Message) error {
	for i, m := range msgs {
		if i > 0 && msgs[i-1].Role == m.Role {
			return fmt.Errorf("messages %d and %d are both %s", i-1, i, m.Role)
		}
		if m.Role == llm.User && i > 0 {
			calls := map[string]bool{}
			for _, c := range llm.Calls(msgs[i-1]) {
				calls[c.ID] = true
			}
			for _, p := range m.Parts {
				if r, ok := p.(*llm.ToolResult); ok && !calls[r.CallID] {
					return fmt.Errorf("message %d: result for %s answers no call of message %d", i, r.CallID, i-1)
				}
			}
		}
		if m.Role == llm.User && i == 0 {
			for _, p := range m.Parts {
				if r, ok := p.(*llm.ToolResult); ok {
					return fmt.Errorf("message 0: result for %s answers nothing", r.CallID)
				}
			}
		}
		if m.Role == llm.Assistant && i+1 < len(msgs) {
			answered := map[string]bool{}
			for _, p := range msgs[i+1].Parts {
				if r, ok := p.(*llm.ToolResult); ok {
					answered[r.CallID] = true
				}
			}
			for _, c := range llm.Calls(m) {
				if !answered[c.ID] {
					return fmt.Errorf("message %d: call %s not answered in the next message", i, c.ID)
				}
			}
		}
	}
	return nil
}

// markers returns the "turn-N" markers of s, in order, without repeats.
func markers(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z') }) {
		if strings.HasPrefix(f, "turn-") && !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	return out
}

func textOf(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(llm.TextOf(m))
		b.WriteByte('\n')
	}
	return b.String()
}
