package llm

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
)

// randomHistory builds a history with every kind of damage a crash, a
// bug or a branch can leave: same-role neighbours, missing and orphaned
// results, duplicated results, a leading assistant message, trailing
// calls.
func randomHistory(r *rand.Rand) []Message {
	var msgs []Message
	n := 1 + r.IntN(12)
	var lastCalls []string
	for i := range n {
		if r.IntN(2) == 0 {
			m := Message{Role: Assistant}
			if r.IntN(2) == 0 {
				m.Parts = append(m.Parts, &Text{Text: "t"})
			}
			lastCalls = nil
			for k := range r.IntN(3) {
				id := fmt.Sprintf("c%d_%d", i, k)
				lastCalls = append(lastCalls, id)
				m.Parts = append(m.Parts, &ToolCall{ID: id, Name: "x", Input: json.RawMessage(`{}`)})
			}
			msgs = append(msgs, m)
			continue
		}
		m := Message{Role: User}
		for _, id := range lastCalls {
			if r.IntN(4) > 0 {
				m.Parts = append(m.Parts, &ToolResult{CallID: id})
			}
			if r.IntN(6) == 0 {
				m.Parts = append(m.Parts, &ToolResult{CallID: id})
			}
		}
		if r.IntN(5) == 0 {
			m.Parts = append(m.Parts, &ToolResult{CallID: "orphan"})
		}
		if r.IntN(2) == 0 || len(m.Parts) == 0 {
			m.Parts = append(m.Parts, &Text{Text: "u"})
		}
		msgs = append(msgs, m)
	}
	return msgs
}

// valid is the union of the providers' rules: starts with user, roles
// alternate, each call answered exactly once in the next message, no
// result without its call, results before other parts (Anthropic), no
// empty message.
func valid(msgs []Message) error {
	if len(msgs) == 0 {
		return nil
	}
	if msgs[0].Role != User {
		return fmt.Errorf("starts with %s", msgs[0].Role)
	}
	for i, m := range msgs {
		if len(m.Parts) == 0 {
			return fmt.Errorf("message %d is empty", i)
		}
		if i > 0 && msgs[i-1].Role == m.Role {
			return fmt.Errorf("messages %d and %d are both %s", i-1, i, m.Role)
		}
		want := map[string]bool{}
		if i > 0 {
			for _, c := range Calls(msgs[i-1]) {
				want[c.ID] = true
			}
		}
		got := map[string]int{}
		text := false
		for _, p := range m.Parts {
			switch p := p.(type) {
			case *ToolResult:
				if text {
					return fmt.Errorf("message %d: a result after text", i)
				}
				if !want[p.CallID] {
					return fmt.Errorf("message %d: result %s answers no call", i, p.CallID)
				}
				got[p.CallID]++
			default:
				text = true
			}
		}
		for id := range want {
			if got[id] != 1 {
				return fmt.Errorf("message %d: call %s answered %d times", i, id, got[id])
			}
		}
		if m.Role == Assistant && i == len(msgs)-1 && len(Calls(m)) > 0 {
			return fmt.Errorf("ends with unanswered calls")
		}
	}
	return nil
}

func TestPairMakesEveryHistoryValid(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		h := randomHistory(r)
		if err := valid(Pair(h)); err != nil {
			t.Fatalf("history %d: %v", i, err)
		}
	}
}

func TestPairKeepsValidHistories(t *testing.T) {
	h := []Message{
		{Role: User, Parts: []Part{&Text{Text: "a"}}},
		{Role: Assistant, Parts: []Part{&ToolCall{ID: "1", Name: "x", Input: json.RawMessage(`{}`)}}},
		{Role: User, Parts: []Part{&ToolResult{CallID: "1", Content: []Part{&Text{Text: "r"}}}}},
		{Role: Assistant, Parts: []Part{&Text{Text: "done"}}},
	}
	got := Pair(h)
	if len(got) != 4 || got[2].Parts[0].(*ToolResult).Content[0].(*Text).Text != "r" {
		t.Errorf("a valid history changed: %#v", got)
	}
}
