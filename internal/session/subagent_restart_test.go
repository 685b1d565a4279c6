package session

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"den.dev/den/internal/config"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/store"
)

// gate stands between den and the fake model: it holds the first
// sub-agent's request (its system prompt says it is one) until
// released, and passes every other request on.
type gate struct {
	*httptest.Server
	arrived chan struct{} // closed when the held request arrives
	release chan struct{} // closed to let it go on
	once    sync.Once
}

func newGate(t *testing.T, fake *llmtest.Server) *gate {
	t.Helper()
	target, err := url.Parse(fake.URL)
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{arrived: make(chan struct{}), release: make(chan struct{})}
	proxy := httputil.NewSingleHostReverseProxy(target)
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		if bytes.Contains(body, []byte("You are a sub-agent")) {
			held := false
			g.once.Do(func() { held = true })
			if held {
				close(g.arrived)
				select {
				case <-g.release:
				case <-r.Context().Done():
					return
				}
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(g.Close)
	return g
}

// until polls cond until it holds, or fails the test with what after
// a minute.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// onlyKid is the id of the one sub-agent of parent, once there is one.
func onlyKid(t *testing.T, tr *testRuntime, parent string) string {
	t.Helper()
	var id string
	until(t, "a sub-agent", func() bool {
		kids, err := tr.st.Subagents(context.Background(), parent)
		if err != nil {
			t.Fatal(err)
		}
		if len(kids) == 1 {
			id = kids[0].ID
		}
		return id != ""
	})
	return id
}

// afterRestart checks, on a third runtime on the same store, that what
// was delivered is not delivered again: not when it starts (it watches
// and recovers), nor when the parent runs again; the parent heard from
// its sub-agent want times. It returns that runtime.
func afterRestart(t *testing.T, tr *testRuntime, cfg *config.Config, parent, kid string, want int) *testRuntime {
	t.Helper()
	third := tr.reopen(t, cfg, func(o *Options) { o.Watch = true })
	third.recover(context.Background())
	third.recover(context.Background())
	if o := sendAndWait(t, third, parent, "anything else?", TurnOptions{}); o.Err != nil {
		t.Fatal(o.Err)
	}
	hist := out(t, third, parent)
	if n := strings.Count(hist, "Sub-agent "+kid); n != want {
		t.Errorf("the parent heard from its sub-agent %d times, want %d:\n%s", n, want, hist)
	}
	if q, err := third.st.QueuedMessages(context.Background(), parent); err != nil || len(q) != 0 {
		t.Errorf("the parent's queue %+v %v", q, err)
	}
	return third
}

// TestSubagentAnswerAfterShutdown: a spawned sub-agent that answers as
// den stops (the parent's turn has stopped waiting, no message is
// taken) is not lost: den started again delivers its answer into the
// parent, which runs with it, once; a third start delivers nothing
// again.
func TestSubagentAnswerAfterShutdown(t *testing.T) {
	cfg := profiles(nil, config.Subagents{})
	tr := newTestRuntime(t, cfg)
	g := newGate(t, tr.fake)
	t.Setenv("ANTHROPIC_BASE_URL", g.URL)
	tr.fake.Respond(func(body []byte) llmtest.Turn {
		r := readSubRequest(t, body)
		switch {
		case r.child:
			return answer("the answer is 42")
		case strings.Contains(r.last, "the answer is 42"):
			return answer("got it: 42")
		case strings.Contains(r.last, "anything else?"):
			return answer("nothing else")
		case !strings.Contains(r.text, "tool_result"):
			return shellTurn("p1", "den-agent spawn find the answer --compact")
		}
		return answer("waiting for it")
	})
	parent := tr.session(t)
	if _, err := tr.Send(context.Background(), parent.ID, Message{Text: "go"}, TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	kid := onlyKid(t, tr, parent.ID)
	<-g.arrived
	until(t, "the parent waits", func() bool { return strings.Contains(out(t, tr, parent.ID), "waiting for it") })
	stopped := make(chan struct{})
	go func() {
		tr.Shutdown(time.Minute)
		close(stopped)
	}()
	until(t, "den stops", tr.halting.Load)
	close(g.release)
	<-stopped
	if !strings.Contains(out(t, tr, kid), "the answer is 42") {
		t.Fatalf("the sub-agent did not answer:\n%s", out(t, tr, kid))
	}
	if h := out(t, tr, parent.ID); strings.Contains(h, "the answer is 42") {
		t.Fatalf("the answer reached the parent as den stopped; the test needs it not to:\n%s", h)
	}

	again := tr.reopen(t, cfg, func(o *Options) { o.Watch = true })
	until(t, "the parent answers the sub-agent's answer", func() bool {
		return strings.Contains(out(t, again, parent.ID), "got it: 42") && !again.Running(parent.ID)
	})
	if h := out(t, again, parent.ID); !strings.Contains(h, "Sub-agent "+kid+" finished.\n\nthe answer is 42") {
		t.Errorf("the parent's history:\n%s", h)
	}
	afterRestart(t, again, cfg, parent.ID, kid, 1)
}

// TestSubagentInterruptedByRestart: a spawned sub-agent that runs when
// den stops is reported to its parent when den starts again: it was
// interrupted, with its id and how to go on; den-agent status says so.
// The parent steers it as told, waits, and gets its answer, once; a
// third start reports nothing again.
func TestSubagentInterruptedByRestart(t *testing.T) {
	cfg := profiles(map[string]config.Profile{"slow": {}}, config.Subagents{})
	tr := newTestRuntime(t, cfg)
	var mu sync.Mutex
	var status string // the sub-agent's, as the parent saw it after the restart
	tr.fake.Respond(func(body []byte) llmtest.Turn {
		r := readSubRequest(t, body)
		switch {
		case r.child && strings.Contains(r.last, "go on"):
			return answer("counted 20 stars")
		case r.child:
			return llmtest.Turn{Text: "Halfway: counted 10 stars.", Calls: shellTurn("c1", "sleep 60").Calls}
		case strings.Contains(r.last, "was interrupted"):
			return shellTurn("p2", "den-agent status "+lastID(r)+" --compact; den-agent steer "+lastID(r)+" go on --compact")
		case strings.Contains(r.last, "counted 20 stars"):
			return answer("final: 20 stars")
		case strings.Contains(r.last, "anything else?"):
			return answer("nothing else")
		case strings.Contains(r.text, `"tool_use_id":"p2"`):
			mu.Lock()
			status = r.last
			mu.Unlock()
			return answer("waiting again")
		case !strings.Contains(r.text, "tool_result"):
			return shellTurn("p1", "den-agent spawn --profile slow count the stars --compact")
		}
		return answer("waiting for it")
	})
	parent, kid := spawnedAndWaiting(t, tr)

	again := tr.reopen(t, cfg, func(o *Options) { o.Watch = true })
	until(t, "the parent gets the answer of the sub-agent it steered", func() bool {
		return strings.Contains(out(t, again, parent.ID), "final: 20 stars") && !again.Running(parent.ID)
	})
	h := out(t, again, parent.ID)
	for _, want := range []string{
		"Sub-agent " + kid + " (profile slow) was interrupted",
		"den-agent steer " + kid,
		"Halfway: counted 10 stars.",
		"Sub-agent " + kid + " (profile slow) finished.\n\ncounted 20 stars",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("no %q in the parent's history:\n%s", want, h)
		}
	}
	mu.Lock()
	if !strings.Contains(status, `\"ended\":\"interrupted\"`) || !strings.Contains(status, `\"done\":true`) {
		t.Errorf("den-agent status after the restart: %s", status)
	}
	mu.Unlock()
	afterRestart(t, again, cfg, parent.ID, kid, 2)
}

// TestSubagentResumedAfterRestart: a spawned sub-agent with a message
// queued for it when den starts again (a den killed during its run
// leaves its steering there) runs it, as every session with a queued
// message does, and its answer, given then, joins its parent's
// conversation once; den-agent wait reads it after another restart.
func TestSubagentResumedAfterRestart(t *testing.T) {
	cfg := profiles(nil, config.Subagents{})
	tr := newTestRuntime(t, cfg)
	tr.fake.Respond(func(body []byte) llmtest.Turn {
		r := readSubRequest(t, body)
		switch {
		case r.child && strings.Contains(r.last, "hurry up"):
			return answer("done after all")
		case r.child:
			return shellTurn("c1", "sleep 60")
		case strings.Contains(r.last, "done after all") && strings.Contains(r.last, "Sub-agent"):
			return answer("finally: done after all")
		case strings.Contains(r.last, "anything else?"):
			return shellTurn("p3", "den-agent wait "+lastID(r)+" --compact")
		case strings.Contains(r.text, `"tool_use_id":"p3"`):
			return answer("it said: " + r.last)
		case !strings.Contains(r.text, "tool_result"):
			return shellTurn("p1", "den-agent spawn slow task --compact")
		}
		return answer("waiting for it")
	})
	parent, kid := spawnedAndWaiting(t, tr)
	tr.Close()
	if _, err := tr.st.Enqueue(context.Background(), kid, parent.ID, "hurry up"); err != nil {
		t.Fatal(err)
	}

	again := tr.reopen(t, cfg, func(o *Options) { o.Watch = true })
	until(t, "the parent answers the resumed sub-agent's answer", func() bool {
		return strings.Contains(out(t, again, parent.ID), "finally: done after all") && !again.Running(parent.ID)
	})
	third := afterRestart(t, again, cfg, parent.ID, kid, 1)
	if h := out(t, third, parent.ID); !strings.Contains(h, `\"answer\":\"done after all\"`) || !strings.Contains(h, `\"ended\":\"done\"`) {
		t.Errorf("den-agent wait after the restarts:\n%s", h)
	}
}

// spawnedAndWaiting starts a parent session whose model spawns a
// sub-agent, and returns once the sub-agent runs a command and the
// parent waits for its answer.
func spawnedAndWaiting(t *testing.T, tr *testRuntime) (parent store.Session, kid string) {
	t.Helper()
	parent = tr.session(t)
	if _, err := tr.Send(context.Background(), parent.ID, Message{Text: "go"}, TurnOptions{}); err != nil {
		t.Fatal(err)
	}
	kid = onlyKid(t, tr, parent.ID)
	sub := tr.Subscribe(kid, 0, nil)
	collect(t, sub, "tool_call", "")
	sub.Close()
	until(t, "the parent waits", func() bool { return strings.Contains(out(t, tr, parent.ID), "waiting for it") })
	return parent, kid
}
