package llm

import (
	"encoding/json"
	"testing"
)

func TestAlternate(t *testing.T) {
	msgs := []Message{
		{Role: User, Parts: []Part{&Text{Text: "a"}}},
		{Role: Assistant, Parts: []Part{&ToolCall{ID: "1", Name: "x", Input: json.RawMessage(`{}`)}}},
		{Role: User, Parts: []Part{&ToolResult{CallID: "1"}}},
		{Role: User, Parts: []Part{&Text{Text: "b"}, &ToolResult{CallID: "2"}}},
		{Role: Assistant, Parts: []Part{&Text{Text: "c"}}},
		{Role: Assistant, Parts: []Part{&Text{Text: "d"}}},
	}
	got := Alternate(msgs)
	if len(got) != 4 {
		t.Fatalf("%d messages", len(got))
	}
	p := got[2].Parts
	if len(p) != 3 || p[0].(*ToolResult).CallID != "1" || p[1].(*ToolResult).CallID != "2" || p[2].(*Text).Text != "b" {
		t.Errorf("merged user message: %#v", p)
	}
	if len(got[3].Parts) != 2 {
		t.Errorf("merged assistant message: %#v", got[3].Parts)
	}
	// The input is not changed.
	if len(msgs[2].Parts) != 1 {
		t.Error("Alternate changed its input")
	}
}

func TestCollectorResetsOnRetry(t *testing.T) {
	var c Collector
	c.Add(&TextDelta{Text: "lost"})
	c.Add(&ToolCallStart{Index: 0, ID: "x", Name: "y"})
	c.Add(&Retry{Attempt: 1})
	c.Add(&TextDelta{Text: "kept"})
	c.Add(&Done{Stop: StopEndTurn})
	turn := c.Turn()
	if TextOf(turn.Message) != "kept" || len(Calls(turn.Message)) != 0 || !turn.Done {
		t.Errorf("turn %+v", turn)
	}
}
