package push

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/store"
	"den.dev/den/internal/webpush"
	"den.dev/den/internal/webpush/webpushtest"
)

// wait bounds every wait for the fake push service; a limit, never an
// expectation.
const wait = 30 * time.Second

type fixture struct {
	st   *store.Store
	svc  *webpushtest.Service
	keys *webpush.Keys
	p    *Service
}

// newFixture is a Service on a real store, sending to a fake push
// service, with contact as its configured VAPID subject.
func newFixture(t *testing.T, contact string) *fixture {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "den.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	keys, err := webpush.LoadKeys(filepath.Join(dir, "push"))
	if err != nil {
		t.Fatal(err)
	}
	svc := webpushtest.NewService(t)
	p := New(Options{Store: st, Keys: keys, Client: svc.Client(), Contact: func() string { return contact },
		Log: slog.New(slog.NewTextHandler(t.Output(), nil))})
	t.Cleanup(p.Close)
	return &fixture{st: st, svc: svc, keys: keys, p: p}
}

// subscribe makes a browser of the fake service and subscribes it to
// den from origin, as the route does.
func (f *fixture) subscribe(t *testing.T, origin string) *webpushtest.Browser {
	t.Helper()
	b := f.svc.Subscribe(f.keys.PublicKey())
	k, a := b.Keys()
	sub, err := webpush.ParseSubscription(b.Endpoint, k, a)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.p.Subscribe(context.Background(), sub, "Mozilla/5.0 (iPhone)", origin); err != nil {
		t.Fatal(err)
	}
	return b
}

func (f *fixture) session(t *testing.T, title string) string {
	t.Helper()
	ctx := context.Background()
	sess, err := f.st.CreateSession(ctx, "default", "anthropic/claude-test")
	if err != nil {
		t.Fatal(err)
	}
	if title != "" {
		if err := f.st.SetTitle(ctx, sess.ID, title); err != nil {
			t.Fatal(err)
		}
	}
	return sess.ID
}

// next is the payload of the next message b gets, which must be one the
// browser accepts.
func next(t *testing.T, b *webpushtest.Browser) (map[string]string, webpushtest.Received) {
	t.Helper()
	r := b.Next(t, wait)
	if r.Err != nil || r.Status != 201 {
		t.Fatalf("the push service refused a message: %d %v", r.Status, r.Err)
	}
	var p map[string]string
	if err := json.Unmarshal(r.Payload, &p); err != nil {
		t.Fatalf("payload %q: %v", r.Payload, err)
	}
	return p, r
}

func ev(id int64, session, typ string, data any) store.Event {
	b, _ := json.Marshal(data)
	return store.Event{ID: id, Session: session, Type: typ, Time: time.Now(), Data: b}
}

// TestNotificationsFromEvents: den-notify, an approval request and the
// end of a turn reach the browser as the payloads the service worker
// reads, encrypted to it and signed with den's key; the text events and
// turns stopped by a person send nothing.
func TestNotificationsFromEvents(t *testing.T) {
	f := newFixture(t, "")
	b := f.subscribe(t, "https://den.example.ts.net")
	sid := f.session(t, "Fix the build")
	untitled := f.session(t, "")
	long := strings.Repeat("word ", 100)

	for _, c := range []struct {
		name    string
		events  []store.Event
		want    map[string]string
		urgency string
		topic   string
	}{
		{"notify", []store.Event{ev(41, sid, "notify", map[string]string{"title": "Build", "message": "all tests pass"})},
			map[string]string{"title": "Build", "body": "all tests pass", "tag": "notify-41", "session_id": sid, "url": "/#" + sid, "kind": "notify"}, "normal", ""},
		{"notify without a title", []store.Event{ev(42, sid, "notify", map[string]string{"message": "hello"})},
			map[string]string{"title": "den", "body": "hello", "tag": "notify-42", "session_id": sid, "url": "/#" + sid, "kind": "notify"}, "normal", ""},
		{"approval", []store.Event{ev(43, sid, "approval_request", map[string]any{"id": "ap1", "command": "den-config", "session": sid,
			"question": `agent "default" wants to run: den-config set x y`, "expires": time.Now().Add(10 * time.Minute)})},
			map[string]string{"title": "den needs your approval", "body": `agent "default" wants to run: den-config set x y`, "tag": "approval-ap1",
				"session_id": sid, "url": "/#" + sid, "kind": "approval"}, "high", ""},
		{"a text, a turn stopped, then done", []store.Event{
			ev(44, sid, "text", map[string]string{"text": "hi"}),
			ev(45, sid, "done", map[string]string{"stop_reason": "canceled", "text": "partial"}),
			ev(46, sid, "status", map[string]string{"status": "interrupted", "detail": "stopped"}),
			ev(47, sid, "status", map[string]string{"status": "running"}),
			ev(48, sid, "done", map[string]string{"stop_reason": "end_turn", "text": long}),
			ev(49, sid, "status", map[string]string{"status": "idle"})},
			map[string]string{"title": "Fix the build", "body": strings.TrimSpace(long[:199]) + "…", "tag": "done-" + sid,
				"session_id": sid, "url": "/#" + sid, "kind": "done"}, "normal", "done-" + sid},
		{"done in a session without a title", []store.Event{
			ev(50, untitled, "done", map[string]string{"stop_reason": "end_turn", "text": "The answer is 4."}),
			ev(51, untitled, "status", map[string]string{"status": "idle"})},
			map[string]string{"title": "den is done", "body": "The answer is 4.", "tag": "done-" + untitled,
				"session_id": untitled, "url": "/#" + untitled, "kind": "done"}, "normal", "done-" + untitled},
		{"an idle status without a turn", []store.Event{
			ev(52, sid, "status", map[string]string{"status": "idle"}),
			ev(53, sid, "done", map[string]string{"stop_reason": "", "text": ""}),
			ev(54, sid, "status", map[string]string{"status": "error", "detail": "the model is overloaded"})},
			map[string]string{"title": "den stopped with an error", "body": "the model is overloaded", "tag": "done-" + sid,
				"session_id": sid, "url": "/#" + sid, "kind": "error"}, "normal", "done-" + sid},
		{"notify of no session", []store.Event{ev(55, "", "notify", map[string]string{"title": "t", "message": "m"})},
			map[string]string{"title": "t", "body": "m", "tag": "notify-55", "session_id": "", "url": "/", "kind": "notify"}, "normal", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, e := range c.events {
				if Wanted(e) {
					f.p.Handle(e)
				}
			}
			got, r := next(t, b)
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("payload (-want +got):\n%s", diff)
			}
			if r.Header.Get("Urgency") != c.urgency || r.Header.Get("Topic") != c.topic {
				t.Errorf("urgency %q, topic %q; want %q, %q", r.Header.Get("Urgency"), r.Header.Get("Topic"), c.urgency, c.topic)
			}
			if r.Claims.Sub != "https://den.example.ts.net" {
				t.Errorf("VAPID subject %q, want the origin the browser subscribed from", r.Claims.Sub)
			}
			// Each case sends exactly one message: the next one is the
			// next case's, as a subscription's messages go in order.
		})
	}
	select {
	case r := <-b.Received():
		t.Errorf("one message too many: %q", r.Payload)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestContact: the configured subject wins; without one, the https
// origin the browser subscribed from, unless it is a name for local use
// or an address; else DefaultContact.
func TestContact(t *testing.T) {
	for _, c := range []struct{ configured, origin, want string }{
		{"mailto:me@example.org", "https://den.example.ts.net", "mailto:me@example.org"},
		{"", "https://den.example.ts.net", "https://den.example.ts.net"},
		{"", "https://den.example.org:7700", "https://den.example.org:7700"},
		{"", "http://den.example.org", DefaultContact},
		{"", "https://localhost:7700", DefaultContact},
		{"", "https://den.local", DefaultContact},
		{"", "https://192.168.1.5:7700", DefaultContact},
		{"", "", DefaultContact},
	} {
		f := newFixture(t, c.configured)
		b := f.subscribe(t, c.origin)
		f.p.Queue(Notification{Title: "x", Kind: KindNotify})
		if _, r := next(t, b); r.Claims.Sub != c.want {
			t.Errorf("configured %q, origin %q: subject %q, want %q", c.configured, c.origin, r.Claims.Sub, c.want)
		}
	}
}

// TestGoneIsForgotten: a subscription the push service answers 410 is
// deleted and sent nothing more; another one still gets everything.
func TestGoneIsForgotten(t *testing.T) {
	f := newFixture(t, "mailto:me@example.org")
	gone := f.subscribe(t, "")
	live := f.subscribe(t, "")
	gone.Answer(webpushtest.Answer{Status: 410})
	f.p.Queue(Notification{Title: "one", Kind: KindNotify})
	if r := gone.Next(t, wait); r.Status != 410 {
		t.Fatalf("answer %d", r.Status)
	}
	if p, _ := next(t, live); p["title"] != "one" {
		t.Errorf("live browser got %v", p)
	}
	waitFor(t, "the subscription to be deleted", func() bool {
		list, _ := f.st.PushSubscriptions(context.Background())
		return len(list) == 1 && list[0].Endpoint == live.Endpoint
	})
	f.p.Queue(Notification{Title: "two", Kind: KindNotify})
	if p, _ := next(t, live); p["title"] != "two" {
		t.Errorf("live browser got %v", p)
	}
	select {
	case r := <-gone.Received():
		t.Errorf("a deleted subscription was sent %d", r.Status)
	default:
	}
}

// TestSlowAndFailingServices: a push service that hangs delays only its
// own browser; one that answers 500 is tried again and its browser gets
// the message; the outcomes are recorded.
func TestSlowAndFailingServices(t *testing.T) {
	f := newFixture(t, "mailto:me@example.org")
	slow := f.subscribe(t, "")
	failing := f.subscribe(t, "")
	fine := f.subscribe(t, "")
	slow.Hold()
	failing.Answer(webpushtest.Answer{Status: 500, RetryAfter: "0"})
	f.p.Queue(Notification{Title: "first", Kind: KindNotify})
	f.p.Queue(Notification{Title: "second", Kind: KindNotify})
	for _, title := range []string{"first", "second"} {
		if p, _ := next(t, fine); p["title"] != title {
			t.Errorf("the fine browser got %v, want %s", p, title)
		}
	}
	if r := failing.Next(t, wait); r.Status != 500 {
		t.Errorf("first answer %d", r.Status)
	}
	for _, title := range []string{"first", "second"} {
		if p, _ := next(t, failing); p["title"] != title {
			t.Errorf("the failing browser got %v, want %s", p, title)
		}
	}
	select {
	case r := <-slow.Received():
		t.Fatalf("the held service answered %d", r.Status)
	default:
	}
	slow.Release()
	for _, title := range []string{"first", "second"} {
		if p, _ := next(t, slow); p["title"] != title {
			t.Errorf("the slow browser got %v, want %s", p, title)
		}
	}
	waitFor(t, "every send to be recorded", func() bool {
		list, _ := f.st.PushSubscriptions(context.Background())
		for _, s := range list {
			if s.LastSuccess.IsZero() || s.Failures != 0 {
				return false
			}
		}
		return len(list) == 3
	})
}

// TestFailuresCounted: a refusal is recorded as a failure of the
// subscription, which stays.
func TestFailuresCounted(t *testing.T) {
	f := newFixture(t, "mailto:me@example.org")
	b := f.subscribe(t, "")
	b.Answer(webpushtest.Answer{Status: 403, Body: `{"reason":"BadJwtToken"}`})
	f.p.Queue(Notification{Title: "x", Kind: KindNotify})
	b.Next(t, wait)
	waitFor(t, "the failure to be recorded", func() bool {
		list, _ := f.st.PushSubscriptions(context.Background())
		return len(list) == 1 && list[0].Failures == 1
	})
}

// TestTest: the test notification goes to every subscription; the
// answer counts those it reached and says why the others were not.
func TestTest(t *testing.T) {
	f := newFixture(t, "mailto:me@example.org")
	ok := f.subscribe(t, "")
	refused := f.subscribe(t, "")
	gone := f.subscribe(t, "")
	refused.Answer(webpushtest.Answer{Status: 403, Body: `{"reason":"BadJwtToken"}`})
	gone.Answer(webpushtest.Answer{Status: 410})
	sent, failed, err := f.p.Test(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(f.svc.URL, "https://")
	want := []Failure{
		{host, "the push service answered 403: {\"reason\":\"BadJwtToken\"}"},
		{host, "the push service says this subscription is gone; den forgot it"},
	}
	if sent != 1 || !cmp.Equal(failed, want) {
		t.Errorf("sent %d, failed %v; want 1, %v", sent, failed, want)
	}
	if p, _ := next(t, ok); p["title"] != "den" || p["body"] != "Notifications reach this device." || p["kind"] != "test" {
		t.Errorf("test payload %v", p)
	}
	if n, _ := f.p.Count(context.Background()); n != 2 {
		t.Errorf("%d subscriptions after the test, want 2 (the gone one deleted)", n)
	}
}

// TestSendSkips: Send waits for each browser it sends to and says how
// each went; the browsers skip names get nothing (a retry of the
// scheduler's delivery reaches only the ones that failed).
func TestSendSkips(t *testing.T) {
	f := newFixture(t, "mailto:me@example.org")
	reached := f.subscribe(t, "")
	failing := f.subscribe(t, "")
	failing.Answer(webpushtest.Answer{Status: 403, Body: `{"reason":"BadJwtToken"}`})
	n := Notification{Title: "Morning digest", Body: "news", Tag: "schedule-1", Kind: KindSchedule}
	res, err := f.p.Send(context.Background(), n, func(endpoint string) bool { return endpoint == reached.Endpoint })
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].Endpoint != failing.Endpoint || res[0].Err == nil || res[0].Host() != strings.TrimPrefix(f.svc.URL, "https://") {
		t.Fatalf("sent %+v", res)
	}
	select {
	case r := <-reached.Received():
		t.Errorf("a skipped browser got %q", r.Payload)
	default:
	}
	res, err = f.p.Send(context.Background(), n, nil)
	if err != nil || len(res) != 2 || res[0].Err != nil || res[1].Err != nil {
		t.Fatalf("sent %+v %v", res, err)
	}
	if p, _ := next(t, reached); p["title"] != "Morning digest" || p["kind"] != "schedule" {
		t.Errorf("payload %v", p)
	}
}

// TestPayloadFits: however long the texts, the payload is a JSON object
// that fits a push message, the body cut with "…".
func TestPayloadFits(t *testing.T) {
	for _, body := range []string{strings.Repeat("a", 10000), strings.Repeat("\"\\", 3000), strings.Repeat("\u2028é", 3000), strings.Repeat("x", 995)} {
		n := Notification{Title: strings.Repeat("T", 500), Body: body, Tag: "notify-1", Session: "s1", Kind: KindNotify}
		b := n.Payload()
		var p map[string]string
		if err := json.Unmarshal(b, &p); err != nil {
			t.Fatalf("%q: %v", b, err)
		}
		if len(b) > webpush.MaxPayload || !utf8.ValidString(p["body"]) || utf8.RuneCountInString(p["title"]) > maxTitle {
			t.Errorf("%d bytes, title of %d characters", len(b), utf8.RuneCountInString(p["title"]))
		}
		if len(body) > maxBody && !strings.HasSuffix(p["body"], "…") {
			t.Errorf("a cut body does not end with …: %q", p["body"][len(p["body"])-10:])
		}
		if len(body) <= maxBody && p["body"] != body {
			t.Errorf("a body that fits was changed")
		}
	}
}

// TestCloseEndsSends: Close returns while a push service hangs, and
// nothing is sent after it.
func TestCloseEndsSends(t *testing.T) {
	f := newFixture(t, "mailto:me@example.org")
	b := f.subscribe(t, "")
	b.Hold()
	f.p.Queue(Notification{Title: "x", Kind: KindNotify})
	f.p.Queue(Notification{Title: "y", Kind: KindNotify})
	waitFor(t, "the send to start", func() bool {
		f.p.mu.Lock()
		defer f.p.mu.Unlock()
		return len(f.p.queues[b.Endpoint]) == 1
	})
	f.p.Close()
	b.Release()
	f.p.Queue(Notification{Title: "z", Kind: KindNotify})
	// The fake service may still finish the request Close abandoned
	// (x); what was queued behind it (y) and after Close (z) is never
	// sent.
	timeout := time.After(200 * time.Millisecond)
	for done := false; !done; {
		select {
		case r := <-b.Received():
			if !strings.Contains(string(r.Payload), `"title":"x"`) {
				t.Errorf("sent after Close: %d %q", r.Status, r.Payload)
			}
		case <-timeout:
			done = true
		}
	}
	list, _ := f.st.PushSubscriptions(context.Background())
	if len(list) != 1 || list[0].Failures != 1 {
		t.Errorf("the send Close ended is not recorded as a failure: %+v", list)
	}
}

// waitFor polls cond until it holds, failing the test after wait.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", wait, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestQuietWhileInUse: while the user is using den in a browser, no
// notification is sent (they see what it would say); once they are
// not, the next one is.
func TestQuietWhileInUse(t *testing.T) {
	f := newFixture(t, "mailto:me@example.org")
	inUse := true
	f.p.o.InUse = func() bool { return inUse }
	b := f.subscribe(t, "")
	sid := f.session(t, "")
	f.p.Handle(ev(60, sid, "notify", map[string]string{"message": "while you look"}))
	f.p.Handle(ev(61, sid, "approval_request", map[string]any{"id": "ap2", "command": "den-config", "session": sid, "question": "may I?"}))
	inUse = false
	f.p.Handle(ev(62, sid, "notify", map[string]string{"message": "while you are away"}))
	if got, _ := next(t, b); got["body"] != "while you are away" {
		t.Errorf("the first message sent says %q", got["body"])
	}
	select {
	case r := <-b.Received():
		t.Errorf("one message too many: %q", r.Payload)
	case <-time.After(200 * time.Millisecond):
	}
}
