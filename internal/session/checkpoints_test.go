package session

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/event"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/store"
)

// withUndo gives the test runtime's agents den's default checkpoint
// policy.
func withUndo(o *Options) {
	open := o.Computer
	o.Computer = func(ctx context.Context, agent string) (*computer.Computer, computer.SessionOptions, error) {
		c, so, err := open(ctx, agent)
		so.Undo = computer.DefaultUndo()
		return c, so, err
	}
}

// A turn that only reads takes no checkpoint; one that writes takes one
// before its first call, once, named by its message; the turn's
// changes are listed, and undone.
func TestCheckpointBeforeTurnsThatWrite(t *testing.T) {
	tr := newTestRuntimeWith(t, nil, withUndo,
		llmtest.Turn{Text: "Reading.", Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute", Input: `{"command":"cat /root/keep"}`}}},
		llmtest.Turn{Text: "Writing.", Calls: []llmtest.Call{
			{ID: "toolu_2", Name: "shell_execute", Input: `{"command":"echo new > /root/new && rm /root/keep"}`},
			{ID: "toolu_3", Name: "shell_execute", Input: `{"command":"echo more > /workspace/more"}`}}},
		llmtest.Turn{Text: "Done."})
	s := tr.session(t)
	ctx := context.Background()
	if r, err := tr.Exec(ctx, s.ID, sandbox.Command{Script: "echo kept > /root/keep", Timeout: time.Minute}); err != nil || r.ExitCode != 0 {
		t.Fatalf("exec: %+v %v", r, err)
	}
	sub := tr.Subscribe(s.ID, 0, nil)
	defer sub.Close()
	if _, err := tr.Send(ctx, s.ID, Message{Text: "go"}, TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	evs := collect(t, sub, "status", event.Idle)
	var checkpoints []store.Event
	var assistant []string
	for _, e := range evs {
		switch {
		case e.Type == "checkpoint":
			checkpoints = append(checkpoints, e)
		case e.Type == "message" && field(e, "role") == "assistant":
			assistant = append(assistant, field(e, "message_id"))
		}
	}
	if len(checkpoints) != 1 || len(assistant) < 2 {
		t.Fatalf("want one checkpoint, for the second of the assistant's messages %v; events: %s", assistant, types(evs))
	}
	if got := field(checkpoints[0], "message_id"); got != assistant[1] {
		t.Errorf("checkpoint of message %q, want %q (the turn that writes)", got, assistant[1])
	}
	list, err := tr.Checkpoints(ctx, s.ID)
	if err != nil || len(list) != 1 || list[0].Turn != assistant[1] || list[0].Next != 0 {
		t.Fatalf("checkpoints: %+v %v", list, err)
	}
	id := list[0].ID
	d, err := tr.TurnChanges(ctx, s.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range d.Changes {
		got[c.Path] = c.Op
	}
	for p, op := range map[string]string{"/root/new": "added", "/root/keep": "removed", "/workspace/more": "added"} {
		if got[p] != op {
			t.Errorf("turn changes: %s: want %s, got %q (all: %v)", p, op, got[p], got)
		}
	}
	if _, err := tr.TurnChanges(ctx, s.ID, id+1); !errors.Is(err, ErrNoCheckpoint) {
		t.Errorf("another checkpoint: %v", err)
	}

	// The session's computer is still up (idle): the restore stops it.
	res, err := tr.Restore(ctx, s.ID, id)
	if err != nil {
		t.Fatal(err)
	}
	if res.Undone.Added != 2 || res.Undone.Removed != 1 || res.Saved.ID == 0 {
		t.Errorf("restored: %+v", res)
	}
	r, err := tr.Exec(ctx, s.ID, sandbox.Command{Script: "cat /root/keep; ls /root; ls /workspace", Timeout: time.Minute})
	if err != nil || r.Output != "kept\nkeep\n" {
		t.Errorf("after the restore: %q %v", r.Output, err)
	}
	restored := collect(t, sub, "restored", "")
	if e := restored[len(restored)-1]; field(e, "message_id") != assistant[1] {
		t.Errorf("restored event: %s", e.Data)
	}
}

// A restore waits for no turn: it refuses while one runs on the
// computer.
func TestRestoreRefusedWhileATurnRuns(t *testing.T) {
	tr := newTestRuntimeWith(t, nil, withUndo,
		llmtest.Turn{Text: "Writing.", Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute", Input: `{"command":"echo a > /root/a; sleep 30"}`}}},
		llmtest.Turn{Text: "Done."})
	s := tr.session(t)
	ctx := context.Background()
	sub := tr.Subscribe(s.ID, 0, nil)
	defer sub.Close()
	if _, err := tr.Send(ctx, s.ID, Message{Text: "go"}, TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	evs := collect(t, sub, "checkpoint", "")
	_, err := tr.Restore(ctx, s.ID, int(number(evs[len(evs)-1], "checkpoint")))
	if !errors.Is(err, store.ErrSessionBusy) {
		t.Errorf("restore during a turn: %v", err)
	}
	tr.Cancel(s.ID)
	collect(t, sub, "status", event.Interrupted)
}

func number(e store.Event, name string) float64 {
	var m map[string]any
	json.Unmarshal(e.Data, &m)
	n, _ := m[name].(float64)
	return n
}
