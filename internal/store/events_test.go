package store

import (
	"context"
	"encoding/json"
	"testing"
)

// TestEvents: events get increasing ids across sessions, read back per
// session or all, after any id; a status event sets the session's
// status; removing a session removes its events.
func TestEvents(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	a, b := newSession(t, s, "a"), newSession(t, s, "a")
	evs, err := s.AddEvents(ctx, []Event{
		{Session: a.ID, Type: "text", Data: json.RawMessage(`{"text":"he"}`)},
		{Session: b.ID, Type: "status", Data: json.RawMessage(`{"status":"running"}`)},
		{Session: a.ID, Type: "text", Data: json.RawMessage(`{"text":"llo"}`)},
		{Type: "notify", Data: json.RawMessage(`{"title":"x"}`)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(evs); i++ {
		if evs[i].ID <= evs[i-1].ID {
			t.Fatalf("ids not increasing: %d then %d", evs[i-1].ID, evs[i].ID)
		}
	}
	got, err := s.Events(ctx, a.ID, 0, 0)
	if err != nil || len(got) != 2 || string(got[1].Data) != `{"text":"llo"}` || got[1].Session != a.ID {
		t.Fatalf("session a: %+v %v", got, err)
	}
	got, _ = s.Events(ctx, a.ID, evs[0].ID, 0)
	if len(got) != 1 || got[0].ID != evs[2].ID {
		t.Errorf("after the first: %+v", got)
	}
	all, _ := s.Events(ctx, "", evs[1].ID, 0)
	if len(all) != 2 || all[1].Session != "" || all[1].Type != "notify" {
		t.Errorf("all after the second: %+v", all)
	}
	if last, _ := s.LastEventID(ctx); last != evs[3].ID {
		t.Errorf("last event %d, want %d", last, evs[3].ID)
	}
	if got, _ := s.GetSession(ctx, b.ID); got.Status != "running" {
		t.Errorf("status of b: %q", got.Status)
	}
	if got, _ := s.GetSession(ctx, a.ID); got.Status != "idle" {
		t.Errorf("status of a: %q", got.Status)
	}
	if _, err := s.AddEvents(ctx, []Event{{Session: a.ID, Type: "x", Data: json.RawMessage(`{bad`)}}); err == nil {
		t.Error("invalid JSON stored")
	}
	if err := s.DeleteSession(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Events(ctx, a.ID, 0, 0); len(got) != 0 {
		t.Errorf("events of a removed session: %+v", got)
	}
}
