package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/egress"
	"den.dev/den/internal/event"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/sandbox/bwrap"
	"den.dev/den/internal/sandbox/rootfs"
	"den.dev/den/internal/sandbox/sandboxtest"
	"den.dev/den/internal/store"
)

// testRuntime is a runtime on a fresh data dir whose agents' computers
// are busybox ones under the real sandbox, answering with fake.
type testRuntime struct {
	*Runtime
	st   *store.Store
	dir  string
	fake *llmtest.Server
}

func newTestRuntime(t *testing.T, cfg *config.Config, turns ...llmtest.Turn) *testRuntime {
	t.Helper()
	return newTestRuntimeTB(t, cfg, turns...)
}

func newTestRuntimeTB(t testing.TB, cfg *config.Config, turns ...llmtest.Turn) *testRuntime {
	t.Helper()
	return newTestRuntimeWith(t, cfg, nil, turns...)
}

// newTestRuntimeWith is newTestRuntime with the options changed by tune
// (nil: none) before the runtime starts. The MCP servers' file is
// mcp.json in the data dir, none unless a test writes it.
func newTestRuntimeWith(t testing.TB, cfg *config.Config, tune func(*Options), turns ...llmtest.Turn) *testRuntime {
	t.Helper()
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	fake := llmtest.NewAnthropic(t, turns...)
	t.Setenv("ANTHROPIC_API_KEY", "sk-test")
	t.Setenv("ANTHROPIC_BASE_URL", fake.URL)
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "den.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return startTestRuntime(t, &testRuntime{st: st, dir: dir, fake: fake}, cfg, tune)
}

// reopen is what den started again finds: a new runtime on tr's store
// and data dir, after tr's runtime is closed (as a den that stopped).
func (tr *testRuntime) reopen(t testing.TB, cfg *config.Config, tune func(*Options)) *testRuntime {
	t.Helper()
	tr.Close()
	return startTestRuntime(t, &testRuntime{st: tr.st, dir: tr.dir, fake: tr.fake}, cfg, tune)
}

// startTestRuntime starts tr's runtime on its store and data dir, with
// computers of busybox.
func startTestRuntime(t testing.TB, tr *testRuntime, cfg *config.Config, tune func(*Options)) *testRuntime {
	t.Helper()
	b, err := bwrap.New("")
	if err != nil {
		t.Fatal(err)
	}
	m, err := computer.New(tr.dir, b)
	if err != nil {
		t.Fatal(err)
	}
	if cfg == nil {
		cfg = &config.Config{}
	}
	// As den's command line does: [network] hosts pins names.
	m.Egress = egress.New(egress.Options{Hosts: cfg.Network.Hosts})
	o := Options{Store: tr.st, DataDir: tr.dir, Config: cfg, Holder: "test", MCP: filepath.Join(tr.dir, "mcp.json"),
		Computer: func(ctx context.Context, agent string) (*computer.Computer, computer.SessionOptions, error) {
			c, err := m.Computer(agent)
			if err != nil {
				return nil, computer.SessionOptions{}, err
			}
			if _, err := c.Ensure(ctx, rootfs.Source{Kind: rootfs.Busybox}, true); err != nil {
				return nil, computer.SessionOptions{}, err
			}
			return c, computer.SessionOptions{}, nil
		}}
	if tune != nil {
		tune(&o)
	}
	rt, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	tr.Runtime = rt
	t.Cleanup(rt.Close)
	return tr
}

func (tr *testRuntime) session(t *testing.T) store.Session {
	t.Helper()
	ctx := context.Background()
	if err := tr.st.EnsureAgent(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	s, err := tr.st.CreateSession(ctx, "default", "anthropic/claude-sonnet-5-5")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// collect reads a subscription's events until one of type until (with
// the status, for "status") arrives, or fails after a while.
func collect(t *testing.T, sub *Subscription, until, status string) []store.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []store.Event
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("after %d events (%s): %v", len(got), types(got), err)
		}
		got = append(got, e)
		if e.Type == until && (status == "" || field(e, "status") == status) {
			return got
		}
	}
}

func field(e store.Event, name string) string {
	var m map[string]any
	json.Unmarshal(e.Data, &m)
	s, _ := m[name].(string)
	return s
}

func types(evs []store.Event) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.Type)
		if e.Type == "status" {
			b.WriteString("(" + field(e, "status") + ")")
		}
		b.WriteByte(' ')
	}
	return strings.TrimSpace(b.String())
}

// TestTwoSubscribers: two faces following one turn see the same events,
// in the same order, with increasing ids, ending with done and idle;
// the run's outcome reaches the sender.
func TestTwoSubscribers(t *testing.T) {
	tr := newTestRuntime(t, nil,
		llmtest.Turn{Text: "Looking.", Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute", Input: `{"command":"echo hi"}`}}},
		llmtest.Turn{Text: "All done here."})
	s := tr.session(t)
	a, b := tr.Subscribe(s.ID, 0, nil), tr.Subscribe(s.ID, 0, nil)
	defer a.Close()
	defer b.Close()
	sent, err := tr.Send(context.Background(), s.ID, Message{Text: "look"}, TurnOptions{})
	if err != nil || sent.Queued || sent.MessageID == "" {
		t.Fatalf("send: %+v %v", sent, err)
	}
	ea, eb := collect(t, a, "status", event.Idle), collect(t, b, "status", event.Idle)
	if types(ea) != types(eb) {
		t.Fatalf("the subscribers saw different streams:\n%s\n%s", types(ea), types(eb))
	}
	for i := range ea {
		if ea[i].ID != eb[i].ID || (i > 0 && ea[i].ID <= ea[i-1].ID) {
			t.Fatalf("event %d: ids %d and %d (previous %d)", i, ea[i].ID, eb[i].ID, ea[max(i-1, 0)].ID)
		}
	}
	want := []string{"session", "status(running)", "message", "text", "message", "tool_call", "tool_result", "message", "text", "message", "done", "status(idle)"}
	got := strings.Fields(types(ea))
	j := 0
	for _, g := range got {
		if j < len(want) && g == want[j] {
			j++
		}
	}
	if j != len(want) {
		t.Errorf("events %s\nwant in order: %s", types(ea), strings.Join(want, " "))
	}
	if first := ea[2]; field(first, "message_id") != sent.MessageID || field(first, "role") != "user" {
		t.Errorf("the first message event is not the sent message: %s", first.Data)
	}
	select {
	case out := <-sent.Done:
		if out.Err != nil || out.Result.Text != "All done here." {
			t.Errorf("outcome %+v", out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no outcome")
	}
	// A face that comes back after the first event replays the rest,
	// exactly once and in order.
	c := tr.Subscribe(s.ID, ea[0].ID, nil)
	defer c.Close()
	ec := collect(t, c, "status", event.Idle)
	if types(ec) != types(ea[1:]) {
		t.Errorf("replay after the first event:\n%s\nwant\n%s", types(ec), types(ea[1:]))
	}
}

// TestSendWhileRunning: a message sent while a turn runs is queued, its
// id known at once, and joins at the next turn boundary of the same run.
func TestSendWhileRunning(t *testing.T) {
	tr := newTestRuntime(t, nil,
		llmtest.Turn{Text: "Working.", Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute", Input: `{"command":"sleep 1; echo slept"}`}}},
		llmtest.Turn{Text: "Got both."})
	s := tr.session(t)
	sub := tr.Subscribe(s.ID, 0, nil)
	defer sub.Close()
	ctx := context.Background()
	first, err := tr.Send(ctx, s.ID, Message{Text: "start"}, TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	collect(t, sub, "tool_call", "")
	second, err := tr.Send(ctx, s.ID, Message{Text: "and also this"}, TurnOptions{})
	if err != nil || !second.Queued || second.MessageID == "" {
		t.Fatalf("second send: %+v %v", second, err)
	}
	evs := collect(t, sub, "status", event.Idle)
	sawQueued := false
	for _, e := range evs {
		if e.Type == "queued" && field(e, "message_id") == second.MessageID && field(e, "text") == "and also this" {
			sawQueued = true
		}
	}
	if !sawQueued {
		t.Errorf("no queued event for the second message: %s", types(evs))
	}
	<-first.Done
	path, err := tr.st.Path(ctx, s.ID)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range path {
		ids = append(ids, m.ID)
	}
	// prompt, call, results, the queued message, the answer.
	if len(path) != 5 || path[3].ID != second.MessageID {
		for _, m := range path {
			t.Logf("%s %s %q", m.ID, m.Message.Role, Text(m.Message))
		}
		t.Fatalf("history %v, want the queued message (%s) fourth", ids, second.MessageID)
	}
	reqs := tr.fake.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "and also this") {
		t.Errorf("the model did not get the queued message in the run's next request: %d requests", len(reqs))
	}
}

// TestApprovalAnsweredByAFace: an approval a turn waits for is answered
// through the runtime (as the daemon's API does): the first answer wins,
// a second gets ErrAnswered, and the status goes waiting → running.
func TestApprovalAnsweredByAFace(t *testing.T) {
	cfg := &config.Config{Agents: map[string]config.Agent{"default": {Permissions: map[string]string{"den-notify": "ask"}}}}
	tr := newTestRuntime(t, cfg,
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute", Input: `{"command":"den-notify --title hi there"}`}}},
		llmtest.Turn{Text: "Notified."})
	s := tr.session(t)
	sub := tr.Subscribe(s.ID, 0, nil)
	defer sub.Close()
	sent, err := tr.Send(context.Background(), s.ID, Message{Text: "notify me"}, TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, sub, "approval_request", "")
	req := evs[len(evs)-1]
	id := field(req, "id")
	if id == "" || !strings.Contains(field(req, "question"), "den-notify") {
		t.Fatalf("approval request %s", req.Data)
	}
	evs = collect(t, sub, "status", event.Waiting)
	if _, err := tr.Answer(context.Background(), id, true, permission.Once, "web"); err != nil {
		t.Fatal(err)
	}
	if a, err := tr.Answer(context.Background(), id, false, permission.Once, "phone"); !errors.Is(err, store.ErrAnswered) || a.Status != store.ApprovalApproved {
		t.Errorf("second answer: %+v %v, want ErrAnswered with the first answer kept", a, err)
	}
	evs = collect(t, sub, "approval_resolved", "")
	res := evs[len(evs)-1]
	if field(res, "decision") != "allow" || field(res, "by") != "web" {
		t.Errorf("resolved %s", res.Data)
	}
	evs = collect(t, sub, "status", event.Idle)
	notified := false
	for _, e := range evs {
		if e.Type == "notify" && field(e, "title") == "hi" {
			notified = true
		}
	}
	if !notified {
		t.Errorf("the approved command did not run: %s", types(evs))
	}
	<-sent.Done
}

// TestEventsOfAnotherProcess: events another den process stores (den run
// in a terminal while the daemon serves) reach this runtime's
// subscribers live.
func TestEventsOfAnotherProcess(t *testing.T) {
	tr := newTestRuntime(t, nil)
	s := tr.session(t)
	sub := tr.Subscribe(s.ID, 0, nil)
	defer sub.Close()
	other, err := store.Open(filepath.Join(tr.dir, "den.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	for i := range 3 {
		if _, err := other.AddEvents(context.Background(), []store.Event{{Session: s.ID, Type: "text", Data: json.RawMessage(fmt.Sprintf(`{"text":"%d"}`, i))}}); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var got []string
	for len(got) < 3 {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("after %v: %v", got, err)
		}
		got = append(got, field(e, "text"))
	}
	if strings.Join(got, "") != "012" {
		t.Errorf("got %v", got)
	}
}

// TestSlowSubscriberCatchesUp: a subscriber that falls more than its
// buffer behind still gets every event, in order, from the store.
func TestSlowSubscriberCatchesUp(t *testing.T) {
	tr := newTestRuntime(t, nil)
	s := tr.session(t)
	sub := tr.Subscribe(s.ID, 0, nil)
	defer sub.Close()
	n := subBuffer*2 + 17
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			tr.hub.publish(s.ID, &event.QueuedMessage{MessageID: fmt.Sprint(i), Text: "x"})
		}
	})
	wg.Wait()
	tr.Sync()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range n {
		e, err := sub.Next(ctx)
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		if got := field(e, "message_id"); got != fmt.Sprint(i) {
			t.Fatalf("event %d is %s", i, got)
		}
	}
}

// TestVersions: regenerating an answer and editing a question each make
// a new version beside the old one, which stays and can be shown again.
func TestVersions(t *testing.T) {
	tr := newTestRuntime(t, nil, llmtest.Turn{Text: "first answer"}, llmtest.Turn{Text: "second answer"}, llmtest.Turn{Text: "answer to the edit"})
	s := tr.session(t)
	ctx := context.Background()
	wait := func(sent Sent, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		select {
		case out := <-sent.Done:
			if out.Err != nil {
				t.Fatal(out.Err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no outcome")
		}
	}
	wait(tr.Send(ctx, s.ID, Message{Text: "question"}, TurnOptions{}))
	path, _ := tr.st.Path(ctx, s.ID)
	if len(path) != 2 {
		t.Fatalf("%d messages", len(path))
	}
	question, first := path[0], path[1]
	wait(tr.Regenerate(ctx, s.ID, first.ID, TurnOptions{}))
	path, _ = tr.st.Path(ctx, s.ID)
	if len(path) != 2 || path[0].ID != question.ID || path[1].ID == first.ID || strings.Contains(Text(path[1].Message), "first") {
		t.Fatalf("after regenerate: %+v", path)
	}
	vs, err := tr.st.Versions(ctx, s.ID, []string{path[1].ID, question.ID})
	if err != nil || len(vs[path[1].ID]) != 2 || vs[path[1].ID][0] != first.ID || len(vs[question.ID]) != 0 {
		t.Fatalf("versions %v %v", vs, err)
	}
	wait(tr.Edit(ctx, s.ID, question.ID, "a better question", TurnOptions{}))
	path, _ = tr.st.Path(ctx, s.ID)
	if len(path) != 2 || Text(path[0].Message) != "a better question" || Text(path[1].Message) != "answer to the edit" {
		t.Fatalf("after edit: %v", Transcript([]llm.Message{path[0].Message, path[1].Message}))
	}
	// The first question's branch is still there: show it again.
	if err := tr.Switch(ctx, s.ID, question.ID); err != nil {
		t.Fatal(err)
	}
	path, _ = tr.st.Path(ctx, s.ID)
	if len(path) != 2 || path[0].ID != question.ID || Text(path[1].Message) != "second answer" {
		t.Errorf("after switching back: %v", path)
	}
	if _, err := tr.Edit(ctx, s.ID, path[1].ID, "x", TurnOptions{}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("editing the agent's message: %v", err)
	}
	if _, err := tr.Regenerate(ctx, s.ID, "nosuch", TurnOptions{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("regenerating a missing message: %v", err)
	}
}

// TestNewAgentSessionsTogether: sessions of an agent whose computer does
// not exist yet, started at once, provision it once and all run (they
// once raced to provision, and to write the host-command shim, which a
// start renamed over another's staged bind of it).
func TestNewAgentSessionsTogether(t *testing.T) {
	tr := newTestRuntime(t, nil, llmtest.Turn{Text: "ok"})
	var sents []Sent
	for range 5 {
		s := tr.session(t)
		sent, err := tr.Send(context.Background(), s.ID, Message{Text: "hi"}, TurnOptions{})
		if err != nil {
			t.Fatal(err)
		}
		sents = append(sents, sent)
	}
	for i, sent := range sents {
		select {
		case out := <-sent.Done:
			if out.Err != nil {
				t.Errorf("session %d: %v", i, out.Err)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("session %d: no outcome", i)
		}
	}
}

// TestFilteredReplay: a subscription that keeps only some types replays
// them from the store and then says it has nothing more, rather than
// reading the same page of other events forever.
func TestFilteredReplay(t *testing.T) {
	tr := newTestRuntime(t, nil, llmtest.Turn{Text: "Hello there."})
	s := tr.session(t)
	sent, err := tr.Send(context.Background(), s.ID, Message{Text: "hi"}, TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-sent.Done
	tr.Sync()
	sub := tr.Subscribe(s.ID, 0, func(e store.Event) bool { return e.Type == "done" })
	defer sub.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []string
	for {
		e, ok, err := sub.Poll(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, e.Type)
	}
	if strings.Join(got, " ") != "done" {
		t.Errorf("filtered replay: %v, want [done]", got)
	}
}
