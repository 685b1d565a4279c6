package event

import (
	"encoding/json"
	"testing"
	"time"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/egress"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/store"
)

// TestMarshal: a stored event is one object with id, session_id, time,
// type and the event's own fields; an event without a session has no
// session_id.
func TestMarshal(t *testing.T) {
	typ, data, ok := Encode(&agent.ToolResultEvent{ID: "c1", Output: "hi", Duration: 1500 * time.Millisecond})
	if !ok || typ != "tool_result" {
		t.Fatalf("encode: %s %v", typ, ok)
	}
	at := time.Date(2026, 12, 1, 20, 0, 0, 5, time.UTC)
	b, err := Marshal(store.Event{ID: 42, Session: "s1", Type: typ, Time: at, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	// A tool result's id is its call's; event_id is the event's.
	want := map[string]any{"id": "c1", "event_id": 42.0, "session_id": "s1", "time": "2026-12-01T20:00:00.000000005Z", "type": "tool_result"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (%s)", k, got[k], v, b)
		}
	}
	if got["output"] != "hi" || got["duration_ms"] != 1500.0 {
		t.Errorf("fields lost: %s", b)
	}
	b, _ = Marshal(store.Event{ID: 1, Type: "notify", Time: at, Data: json.RawMessage(`{}`)})
	if string(b) != `{"id":1,"event_id":1,"time":"2026-12-01T20:00:00.000000005Z","type":"notify"}` {
		t.Errorf("no session: %s", b)
	}
	if _, err := Marshal(store.Event{ID: 1, Type: "x", Data: json.RawMessage(`[1]`)}); err == nil {
		t.Error("an array accepted as an event's data")
	}
}

// TestEncode: the types faces rely on, the fields the issue names, and
// malformed tool input kept as a string rather than breaking the object.
func TestEncode(t *testing.T) {
	for _, tc := range []struct {
		e    any
		typ  string
		keys []string
	}{
		{&Status{Status: Waiting}, "status", []string{"status"}},
		{&QueuedMessage{MessageID: "m", Text: "t"}, "queued", []string{"message_id", "text"}},
		{&agent.MessageEvent{ID: "m", Role: "user"}, "message", []string{"message_id", "role"}},
		{&permission.ApprovalRequest{ID: "a", Command: "den-notify", Args: []string{"x"}, Scopes: []permission.Scope{permission.Once}}, "approval_request",
			[]string{"id", "command", "action", "args", "question", "scopes"}},
		{&permission.ApprovalResolved{ID: "a", Approved: true, Scope: permission.Once, DecidedBy: "web"}, "approval_resolved",
			[]string{"id", "decision", "scope", "by"}},
		{&agent.ToolCallEvent{ID: "c", Name: "shell_execute", Input: json.RawMessage(`{"command": "ls"`)}, "tool_call", []string{"id", "name", "input"}},
		// One connection of a computer: time (the event's), domain, port,
		// bytes, allowed or denied, and for a refused one how to allow it.
		{&egress.Record{Agent: "a", Host: "example.org", Port: 443, Protocol: "tls", By: "policy", Mode: egress.Allowlist}, "egress",
			[]string{"agent", "host", "port", "protocol", "allowed", "by", "mode", "bytes_out", "bytes_in", "duration_ms", "message"}},
	} {
		typ, data, ok := Encode(tc.e)
		if !ok || typ != tc.typ {
			t.Errorf("%T: %s %v", tc.e, typ, ok)
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Errorf("%s: %s: %v", typ, data, err)
			continue
		}
		for _, k := range tc.keys {
			if _, ok := m[k]; !ok && k != "action" {
				t.Errorf("%s lacks %q: %s", typ, k, data)
			}
		}
	}
	if _, data, _ := Encode(&agent.ToolCallEvent{ID: "c", Input: json.RawMessage(`{"command": "ls"`)}); !json.Valid(data) {
		t.Errorf("malformed input broke the event: %s", data)
	}
	if _, _, ok := Encode(42); ok {
		t.Error("an int encoded as an event")
	}
}
