package clitest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/sandbox/sandboxtest"
)

const serveToken = "clitest-token-0123456789abcdefghijklmnop"

// daemonProc is a den serve the test started.
type daemonProc struct {
	cmd    *exec.Cmd
	url    string
	stderr *lockedBuffer
	den    *Den // whose data it serves
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var listening = regexp.MustCompile(`msg="den serve: listening" url=(\S+)`)

// serveConfig makes the default agent's computer a busybox one, for
// every den of the test.
func serveConfig(t testing.TB, d *Den, extra string) {
	t.Helper()
	dir := filepath.Join(d.ConfigHome, "den")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	text := "[agents.default]\nrootfs = \"busybox\"\n" + extra
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startServe starts den serve on a free loopback port with the test's
// token, talking to fake, with env (KEY=value) added to its
// environment.
func startServe(t testing.TB, d *Den, fake *llmtest.Server, env ...string) *daemonProc {
	t.Helper()
	cmd := exec.Command(d.Bin, "serve", "--listen", "127.0.0.1:0")
	cmd.Env = append(append(d.Env(), "DEN_TOKEN="+serveToken, "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL="+fake.URL), env...)
	p := &daemonProc{cmd: cmd, stderr: &lockedBuffer{}, den: d}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for p.url == "" {
		if m := listening.FindStringSubmatch(p.stderr.String()); m != nil {
			p.url = m[1]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("den serve did not start:\n%s", p.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return p
}

// api calls the daemon with the token and decodes its JSON answer.
func (p *daemonProc) api(t testing.TB, method, path string, body any, want int) map[string]any {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, p.url+path, rd)
	req.Header.Set("Authorization", "Bearer "+serveToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
	var out map[string]any
	if len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
	return out
}

// sseEvent is one event of a stream, as received.
type sseEvent struct {
	ID   int64
	Type string
	Data map[string]any
	Raw  string
}

// stream follows the daemon's event stream at path (after lastID when
// it is not "") and sends what it receives; stop closes the connection.
func (p *daemonProc) stream(t *testing.T, path, lastID string) (<-chan sseEvent, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", p.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+serveToken)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("stream %s: %v %v", path, err, resp)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("stream content type %q", ct)
	}
	out := make(chan sseEvent, 10000)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 4<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.Type != "" {
					out <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				ev.ID, _ = strconv.ParseInt(line[4:], 10, 64)
			case strings.HasPrefix(line, "event: "):
				ev.Type = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.Raw = line[6:]
				json.Unmarshal([]byte(ev.Raw), &ev.Data)
			}
		}
	})
	return out, func() {
		cancel()
		wg.Wait()
	}
}

// until reads events until one of type typ (with status status, for a
// status event) arrives.
func until(t *testing.T, evs <-chan sseEvent, typ, status string) []sseEvent {
	t.Helper()
	var got []sseEvent
	timeout := time.After(60 * time.Second)
	for {
		select {
		case e, ok := <-evs:
			if !ok {
				t.Fatalf("the stream ended after %d events: %s", len(got), typesOf(got))
			}
			got = append(got, e)
			if e.Type == typ && (status == "" || e.Data["status"] == status) {
				return got
			}
		case <-timeout:
			t.Fatalf("no %s %s after %d events: %s", typ, status, len(got), typesOf(got))
		}
	}
}

func typesOf(evs []sseEvent) string {
	var b []string
	for _, e := range evs {
		s := e.Type
		if e.Type == "status" {
			s += "(" + fmt.Sprint(e.Data["status"]) + ")"
		}
		b = append(b, s)
	}
	return strings.Join(b, " ")
}

// TestServeStreams: two faces follow one turn over SSE and see the same
// events, in order; a face whose connection drops mid-stream and comes
// back with Last-Event-ID gets every later event once, in order; the
// event objects are den run --json's with event ids.
func TestServeStreams(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "")
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Text: "Let me look at that for you.", Calls: []llmtest.Call{sh("toolu_1", "echo one; sleep 0.3; echo two")}},
		llmtest.Turn{Text: strings.Repeat("All done, here is a long answer. ", 40)})
	p := startServe(t, d, fake)
	sess := p.api(t, "POST", "/api/v1/sessions", map[string]any{"agent": "default"}, http.StatusCreated)
	id := sess["id"].(string)
	if sess["status"] != "idle" || sess["agent"] != "default" {
		t.Errorf("new session %v", sess)
	}
	a, stopA := p.stream(t, "/api/v1/sessions/"+id+"/events", "")
	defer stopA()
	b, stopB := p.stream(t, "/api/v1/sessions/"+id+"/events", "")
	defer stopB()
	c, stopC := p.stream(t, "/api/v1/sessions/"+id+"/events", "")
	all, stopAll := p.stream(t, "/api/v1/events", "")
	defer stopAll()
	sent := p.api(t, "POST", "/api/v1/sessions/"+id+"/messages", map[string]any{"text": "look around"}, http.StatusAccepted)
	if sent["message_id"] == "" || sent["queued"] != false {
		t.Errorf("sent %v", sent)
	}

	// c drops after the tool call and comes back from where it was.
	ec := until(t, c, "tool_call", "")
	stopC()
	last := ec[len(ec)-1].ID
	c2, stopC2 := p.stream(t, "/api/v1/sessions/"+id+"/events", strconv.FormatInt(last, 10))
	defer stopC2()

	ea, eb := until(t, a, "status", "idle"), until(t, b, "status", "idle")
	if typesOf(ea) != typesOf(eb) {
		t.Fatalf("two subscribers saw different streams:\n%s\n%s", typesOf(ea), typesOf(eb))
	}
	for i := range ea {
		if ea[i].ID != eb[i].ID || ea[i].Raw != eb[i].Raw || (i > 0 && ea[i].ID <= ea[i-1].ID) {
			t.Fatalf("event %d differs or is out of order: %d %d", i, ea[i].ID, eb[i].ID)
		}
	}
	rest := until(t, c2, "status", "idle")
	var want []sseEvent
	for _, e := range ea {
		if e.ID > last {
			want = append(want, e)
		}
	}
	if typesOf(rest) != typesOf(want) || rest[0].ID != want[0].ID {
		t.Errorf("resumed after %d:\n%s\nwant\n%s", last, typesOf(rest), typesOf(want))
	}
	// The text a face shows is exactly the model's.
	var text strings.Builder
	for _, e := range ea {
		if e.Type == "text" {
			text.WriteString(e.Data["text"].(string))
		}
	}
	if !strings.HasSuffix(text.String(), strings.Repeat("All done, here is a long answer. ", 40)) {
		t.Errorf("streamed text %q", text.String())
	}
	for _, e := range ea {
		if e.Data["event_id"] == nil || e.Data["session_id"] != id || e.Data["time"] == nil || e.Data["type"] != e.Type {
			t.Fatalf("event lacks its envelope: %s", e.Raw)
		}
	}
	// The sidebar stream saw the status changes, not the text.
	es := until(t, all, "status", "idle")
	for _, e := range es {
		if e.Type == "text" {
			t.Fatalf("the sidebar stream carried text: %s", typesOf(es))
		}
	}
	got := p.api(t, "GET", "/api/v1/sessions/"+id, nil, http.StatusOK)
	msgs := got["messages"].([]any)
	if len(msgs) != 4 || got["title"] != "look around" || got["status"] != "idle" {
		t.Errorf("session after the turn: %d messages, title %v, status %v", len(msgs), got["title"], got["status"])
	}
	list := p.api(t, "GET", "/api/v1/sessions?q=look", nil, http.StatusOK)
	if n := len(list["sessions"].([]any)); n != 1 {
		t.Errorf("search found %d sessions", n)
	}
}

// TestServeKillAndRestart: den serve killed with SIGKILL while a tool
// runs, with a message queued behind the turn, is started again: the
// session shows the interrupted call (with what it printed), and the
// queued message is answered after it.
func TestServeKillAndRestart(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "")
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Text: "Installing.", Calls: []llmtest.Call{sh("toolu_long", "echo unpacking-marker; sleep 60; echo never")}})
	p := startServe(t, d, fake)
	id := p.api(t, "POST", "/api/v1/sessions", map[string]any{}, http.StatusCreated)["id"].(string)
	evs, stop := p.stream(t, "/api/v1/sessions/"+id+"/events", "")
	p.api(t, "POST", "/api/v1/sessions/"+id+"/messages", map[string]any{"text": "install it"}, http.StatusAccepted)
	until(t, evs, "tool_call", "")
	queued := p.api(t, "POST", "/api/v1/sessions/"+id+"/messages", map[string]any{"text": "and then say hi"}, http.StatusAccepted)
	if queued["queued"] != true {
		t.Fatalf("a message sent while a turn runs: %v", queued)
	}
	stop()
	// Let den save the command's first output (once a second), then kill
	// it in the middle of the command.
	time.Sleep(1500 * time.Millisecond)
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()

	after := llmtest.NewAnthropic(t, llmtest.Turn{Text: "It was interrupted; and hi."})
	p2 := startServe(t, d, after)
	deadline := time.Now().Add(60 * time.Second)
	var got map[string]any
	for {
		got = p2.api(t, "GET", "/api/v1/sessions/"+id, nil, http.StatusOK)
		if got["status"] == "idle" && len(after.Requests()) > 0 && len(got["queued"].([]any)) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the queued message never ran after the restart: %v\n%s", got, p2.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	body := string(after.Requests()[0].Body)
	if !strings.Contains(body, "interrupted") || !strings.Contains(body, "unpacking-marker") || !strings.Contains(body, "and then say hi") {
		t.Errorf("the request after the restart lacks the interrupted call or the queued message: %.2000s", body)
	}
	raw, _ := json.Marshal(got["messages"])
	if !strings.Contains(string(raw), "unpacking-marker") || !strings.Contains(string(raw), "It was interrupted; and hi.") {
		t.Errorf("the session lacks the interrupted result or the answer: %s", raw)
	}
}

// TestServeSeesCLIRun: a turn den run drives in a terminal is visible
// live to the daemon's faces, and its approval is answered over HTTP
// while den run waits (nobody is at den run's terminal).
func TestServeSeesCLIRun(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "[agents.default.permissions]\n\"den-notify\" = \"ask\"\n")
	idle := llmtest.NewAnthropic(t)
	p := startServe(t, d, idle)
	cli := llmtest.NewAnthropic(t,
		llmtest.Turn{Calls: []llmtest.Call{sh("toolu_n", "den-notify --title hello from-the-cli")}},
		llmtest.Turn{Text: "Notified."})
	all, stopAll := p.stream(t, "/api/v1/events", "")
	defer stopAll()
	run := exec.Command(d.Bin, "run", "--json", "notify me")
	run.Env = append(d.Env(), "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL="+cli.URL)
	var out bytes.Buffer
	run.Stdout = &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer run.Process.Kill()
	evs := until(t, all, "approval_request", "")
	req := evs[len(evs)-1]
	approval := req.Data["id"].(string)
	sessionID := req.Data["session_id"].(string)
	list := p.api(t, "GET", "/api/v1/approvals", nil, http.StatusOK)
	if n := len(list["approvals"].([]any)); n != 1 {
		t.Fatalf("%d pending approvals", n)
	}
	ans := p.api(t, "POST", "/api/v1/approvals/"+approval, map[string]any{"decision": "allow", "scope": "once"}, http.StatusOK)
	if ans["status"] != "approved" {
		t.Errorf("answer %v", ans)
	}
	p.api(t, "POST", "/api/v1/approvals/"+approval, map[string]any{"decision": "deny"}, http.StatusConflict)
	if err := run.Wait(); err != nil {
		t.Fatalf("den run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), `"type":"notify"`) || !strings.Contains(out.String(), "Notified.") {
		t.Errorf("den run did not go on after the approval:\n%s", out.String())
	}
	// The daemon's stream of the session carries the CLI's run.
	sev, stop := p.stream(t, "/api/v1/sessions/"+sessionID+"/events", "")
	defer stop()
	got := until(t, sev, "done", "")
	if !strings.Contains(typesOf(got), "tool_call") || !strings.Contains(typesOf(got), "approval_resolved") {
		t.Errorf("the session's events as the daemon serves them: %s", typesOf(got))
	}
}

// BenchmarkServeRSS is the figures: den serve's resident memory
// idle with no session loaded, and with 10 sessions that each ran a turn
// (their computers still up, idle).
func BenchmarkServeRSS(b *testing.B) {
	sandboxtest.Need(b, "bwrap", "bubblewrap")
	sandboxtest.Need(b, "busybox", "busybox-static")
	for b.Loop() {
		d := New(b, denBin)
		dir := filepath.Join(d.ConfigHome, "den")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "config.toml"), []byte("[agents.default]\nrootfs = \"busybox\"\nnetwork = \"off\"\n"), 0o644)
		fake := llmtest.NewAnthropic(b, llmtest.Turn{Text: "ok", InputTokens: 10, OutputTokens: 1})
		p := startServe(b, d, fake)
		time.Sleep(time.Second)
		idle := rss(b, p.cmd.Process.Pid)
		for range 10 {
			id := p.api(b, "POST", "/api/v1/sessions", map[string]any{}, http.StatusCreated)["id"].(string)
			p.api(b, "POST", "/api/v1/sessions/"+id+"/messages", map[string]any{"text": "hi"}, http.StatusAccepted)
		}
		deadline := time.Now().Add(60 * time.Second)
		for {
			list := p.api(b, "GET", "/api/v1/sessions", nil, http.StatusOK)["sessions"].([]any)
			done := 0
			for _, s := range list {
				if s.(map[string]any)["status"] == "idle" && s.(map[string]any)["usage"].(map[string]any)["requests"].(float64) > 0 {
					done++
				}
			}
			if done == 10 {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("sessions did not finish: %v", list)
			}
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(time.Second)
		loaded := rss(b, p.cmd.Process.Pid)
		b.ReportMetric(idle, "MB-idle")
		b.ReportMetric(loaded, "MB-10-sessions")
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.cmd.Wait()
	}
}

func rss(b *testing.B, pid int) float64 {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(st), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.Atoi(f[1])
			return float64(kb) / 1024
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// TestServeSIGTERM: den serve stopped with SIGTERM while a tool runs
// lets the tool finish (its result is on record, not "interrupted"),
// stops the turn at that boundary and exits cleanly; the session says
// it was interrupted, and the next message goes on from there.
func TestServeSIGTERM(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "")
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Text: "Working.", Calls: []llmtest.Call{sh("toolu_1", "sleep 1.5; echo finished-properly")}},
		llmtest.Turn{Text: "never asked before the restart"})
	p := startServe(t, d, fake)
	id := p.api(t, "POST", "/api/v1/sessions", map[string]any{}, http.StatusCreated)["id"].(string)
	evs, stop := p.stream(t, "/api/v1/sessions/"+id+"/events", "")
	p.api(t, "POST", "/api/v1/sessions/"+id+"/messages", map[string]any{"text": "work"}, http.StatusAccepted)
	until(t, evs, "tool_call", "")
	stop()
	start := time.Now()
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("den serve after SIGTERM: %v\n%s", err, p.stderr)
	}
	if took := time.Since(start); took > 25*time.Second {
		t.Errorf("stopping took %v", took)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d model requests: the turn went on after SIGTERM", n)
	}
	p2 := startServe(t, d, fake)
	got := p2.api(t, "GET", "/api/v1/sessions/"+id, nil, http.StatusOK)
	raw, _ := json.Marshal(got["messages"])
	if !strings.Contains(string(raw), "finished-properly") || strings.Contains(string(raw), "interrupted") {
		t.Errorf("the running tool was not let finish: %s", raw)
	}
	if got["status"] != "interrupted" {
		t.Errorf("status %v, want interrupted", got["status"])
	}
}
