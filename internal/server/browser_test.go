package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/sandbox/sandboxtest"
	"den.dev/den/internal/server/auth"
	"den.dev/den/internal/session"
	"den.dev/den/internal/session/sessiontest"
)

const browserToken = "browser-test-token-0123456789abcdef"

// pressPage is the page the fake model opens: a button over the
// viewport's top left quarter that renames the page when pressed.
const pressPage = `<!doctype html><title>Test page</title>` +
	`<style>button{position:fixed;left:0;top:0;width:50vw;height:50vh;font-size:40px}</style>` +
	`<button onclick="document.title='Pressed';this.textContent='Pressed'">Press me</button>`

// pressURL is pressPage as a data: URL, which the browser opens without
// a network.
func pressURL() string {
	return "data:text/html;base64," + base64.StdEncoding.EncodeToString([]byte(pressPage))
}

// needChromium fails the test in CI (skips elsewhere) without what the
// agent's browser runs.
func needChromium(t *testing.T) {
	t.Helper()
	sandboxtest.Need(t, "nsenter", "util-linux")
	for _, name := range []string{"chromium-headless-shell", "chromium"} {
		if _, err := exec.LookPath(name); err == nil {
			return
		}
	}
	sandboxtest.Need(t, "chromium-headless-shell", "chromium-headless-shell")
}

// browserAPI is the API behind the auth guard on a test server, over a
// real runtime whose agents' computers are busybox ones and whose model
// is a fake that opens pressPage in its browser when asked.
type browserAPI struct {
	srv     *httptest.Server
	rt      *session.Runtime
	session string
}

func newBrowserAPI(t *testing.T) *browserAPI {
	t.Helper()
	needChromium(t)
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "browser_use", Input: `{"action":"navigate","url":"` + pressURL() + `"}`}}},
		llmtest.Turn{Text: "The page is open."})
	t.Setenv("ANTHROPIC_API_KEY", "sk-test")
	t.Setenv("ANTHROPIC_BASE_URL", fake.URL)
	se := sessiontest.New(t, nil)
	sess, err := se.RT.Create(context.Background(), "default", "anthropic/claude-sonnet-5-5")
	if err != nil {
		t.Fatal(err)
	}
	srv := serveToken(t, se, browserToken)
	return &browserAPI{srv: srv, rt: se.RT, session: sess.ID}
}

// browse runs a turn in which the model opens pressPage.
func (a *browserAPI) browse(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sent, err := a.rt.Send(ctx, a.session, session.Message{Text: "open the page"}, session.TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-sent.Done:
		if out.Err != nil {
			t.Fatalf("the turn: %v", out.Err)
		}
	case <-ctx.Done():
		t.Fatal("the turn did not end")
	}
}

// get calls a route with the token (or without, when token is "").
func (a *browserAPI) get(t *testing.T, path, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", a.srv.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := a.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.Bytes()
}

type browserState struct {
	Active, Control bool
	Tabs            []struct {
		ID         int
		URL, Title string
		Current    bool
	}
}

func (a *browserAPI) state(t *testing.T) browserState {
	t.Helper()
	code, body := a.get(t, "/api/v1/sessions/"+a.session+"/browser", browserToken)
	if code != http.StatusOK {
		t.Fatalf("state: %d %s", code, body)
	}
	var st browserState
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatalf("state %s: %v", body, err)
	}
	return st
}

// waitState polls the state until ok says it is so.
func (a *browserAPI) waitState(t *testing.T, what string, ok func(browserState) bool) browserState {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := a.state(t)
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not so: %+v", what, st)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// dial opens the session's screencast with the token.
func (a *browserAPI) dial(t *testing.T) *viewClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(a.srv.URL, "http") + "/api/v1/sessions/" + a.session + "/browser/screencast"
	c, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + browserToken}}})
	if err != nil {
		t.Fatalf("dial: %v (response %v)", err, resp)
	}
	c.SetReadLimit(8 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return &viewClient{c: c}
}

// viewClient reads a screencast socket.
type viewClient struct {
	c     *websocket.Conn
	frame viewMsg // the last frame's metadata
	jpeg  []byte  // and picture
}

// viewMsg is any message from the server.
type viewMsg struct {
	Type           string
	Control, Yours bool
	Width, Height  float64
	Tab            int
	URL, Title     string
	Code, Message  string
	Reason         string
}

// next reads the next text message, keeping frames' pictures; a read
// that fails is returned as an error.
func (v *viewClient) next(t *testing.T) (viewMsg, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	typ, b, err := v.c.Read(ctx)
	if err != nil {
		return viewMsg{}, err
	}
	if typ != websocket.MessageText {
		t.Fatalf("a binary message (%d bytes) where a text one belongs", len(b))
	}
	var m viewMsg
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("message %s: %v", b, err)
	}
	if m.Type == "frame" {
		typ, pic, err := v.c.Read(ctx)
		if err != nil || typ != websocket.MessageBinary {
			t.Fatalf("after a frame's metadata: %v, %v", typ, err)
		}
		v.frame, v.jpeg = m, pic
	}
	return m, nil
}

// until reads messages until ok says one is what the test waits for.
func (v *viewClient) until(t *testing.T, what string, ok func(viewMsg) bool) viewMsg {
	t.Helper()
	for {
		m, err := v.next(t)
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok(m) {
			return m
		}
	}
}

func (v *viewClient) send(t *testing.T, msg string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := v.c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
		t.Fatalf("send %s: %v", msg, err)
	}
}

func isControl(control, yours bool) func(viewMsg) bool {
	return func(m viewMsg) bool { return m.Type == "control" && m.Control == control && m.Yours == yours }
}

func isError(code string) func(viewMsg) bool {
	return func(m viewMsg) bool { return m.Type == "error" && m.Code == code }
}

// TestBrowserRoutes: the browser's routes need the token; a session
// that has not used its browser has none to show; once the model opened
// a page, the screencast streams it, input is refused until this socket
// takes over, a tap presses the page's button, release gives the browser
// back, and a socket that closes while holding it gives it back too.
func TestBrowserRoutes(t *testing.T) {
	a := newBrowserAPI(t)
	base := "/api/v1/sessions/" + a.session + "/browser"

	// Every way in needs the token.
	if code, body := a.get(t, base, ""); code != http.StatusUnauthorized {
		t.Errorf("state without the token: %d %s", code, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ws := "ws" + strings.TrimPrefix(a.srv.URL, "http") + base + "/screencast"
	if c, resp, err := websocket.Dial(ctx, ws, nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		if c != nil {
			c.CloseNow()
		}
		t.Errorf("screencast without the token: %v %v", resp, err)
	}
	if code, body := a.get(t, "/api/v1/sessions/nosuch/browser", browserToken); code != http.StatusNotFound {
		t.Errorf("an unknown session: %d %s", code, body)
	}
	if code, body := a.get(t, base+"/screencast", browserToken); code != http.StatusUpgradeRequired || !strings.Contains(string(body), "websocket_required") {
		t.Errorf("a plain GET of the screencast: %d %s", code, body)
	}

	// No browser yet: nothing to show, and the socket says so.
	if st := a.state(t); st.Active || st.Control || st.Tabs == nil || len(st.Tabs) != 0 {
		t.Errorf("before the browser was used: %+v", st)
	}
	early := a.dial(t)
	if m := early.until(t, "the end", func(m viewMsg) bool { return m.Type == "end" }); m.Reason == "" {
		t.Errorf("end without a reason: %+v", m)
	}
	if _, err := early.next(t); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Errorf("after the end: %v, want a normal close", err)
	}

	a.browse(t)
	st := a.state(t)
	if !st.Active || st.Control || len(st.Tabs) != 1 || !st.Tabs[0].Current || st.Tabs[0].Title != "Test page" || !strings.HasPrefix(st.Tabs[0].URL, "data:text/html") {
		t.Fatalf("after the model opened the page: %+v", st)
	}

	// Frames of the page arrive.
	v := a.dial(t)
	v.until(t, "the agent's control", isControl(false, false))
	f := v.until(t, "a frame", func(m viewMsg) bool { return m.Type == "frame" })
	if f.Width != 1280 || f.Height != 800 || f.Title != "Test page" || f.Tab != st.Tabs[0].ID || len(v.jpeg) < 100 || v.jpeg[0] != 0xFF || v.jpeg[1] != 0xD8 {
		t.Errorf("a frame: %+v, %d bytes", f, len(v.jpeg))
	}

	// Input is refused until this socket takes over; then it is the
	// only one whose input is taken.
	v.send(t, `{"type":"input","kind":"down","x":320,"y":200}`)
	v.until(t, "input refused", isError("no_control"))
	v.send(t, `{"type":"take"}`)
	v.until(t, "control", isControl(true, true))
	if st := a.state(t); !st.Control {
		t.Errorf("state after take: %+v", st)
	}
	other := a.dial(t)
	other.until(t, "another socket's control", isControl(true, false))
	other.until(t, "a frame for another socket", func(m viewMsg) bool { return m.Type == "frame" })
	other.send(t, `{"type":"input","kind":"down","x":320,"y":200}`)
	other.until(t, "input from another socket refused", isError("no_control"))
	other.send(t, `{"type":"release"}`) // not its to give back
	v.send(t, `{"type":"input","kind":"move","x":0,"y":0}`)
	v.send(t, `{"type":"input","kind":"teleport","x":0,"y":0}`)
	v.until(t, "a bad input refused", isError("bad_input"))

	// A tap on the button presses it: the page says so, in frames and
	// in the tabs.
	for _, kind := range []string{"move", "down", "up"} {
		v.send(t, `{"type":"input","kind":"`+kind+`","x":320,"y":200,"button":"left"}`)
	}
	v.until(t, "a frame of the pressed page", func(m viewMsg) bool { return m.Type == "frame" && m.Title == "Pressed" })
	a.waitState(t, "the tab renamed", func(st browserState) bool { return len(st.Tabs) == 1 && st.Tabs[0].Title == "Pressed" })
	if !a.state(t).Control {
		t.Error("another socket's release gave the browser back")
	}

	// Release gives it back.
	v.send(t, `{"type":"release"}`)
	v.until(t, "control back to the agent", isControl(false, false))
	other.until(t, "control back to the agent, seen by the other socket", isControl(false, false))
	if st := a.state(t); st.Control {
		t.Errorf("state after release: %+v", st)
	}

	// A socket that goes away holding control gives it back.
	other.send(t, `{"type":"take"}`)
	other.until(t, "control", isControl(true, true))
	other.c.CloseNow()
	a.waitState(t, "control back after the socket closed", func(st browserState) bool { return !st.Control })

	// A flood is cut, and a message the protocol does not have closes
	// the socket.
	for range 400 {
		v.send(t, `{"type":"release"}`)
	}
	v.until(t, "the flood cut", isError("rate_limited"))
	v.send(t, `{"type":"jump"}`)
	for {
		_, err := v.next(t)
		if err == nil {
			continue
		}
		if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
			t.Errorf("after an unknown message: %v, want 1008", err)
		}
		break
	}
	// Every socket is gone, and with them the screencast.
	for i := 0; ; i++ {
		var b bytes.Buffer
		pprof.Lookup("goroutine").WriteTo(&b, 1)
		if !strings.Contains(b.String(), "internal/server/browserview.") {
			break
		}
		if i == 200 {
			t.Fatalf("goroutines left after every socket closed:\n%s", b.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// serveToken serves se's runtime behind the token gate, with token as
// DEN_TOKEN.
func serveToken(t *testing.T, se *sessiontest.Env, token string) *httptest.Server {
	t.Helper()
	g, err := auth.New(auth.Options{DataDir: t.TempDir(), Public: IsPublic, Env: func(k string) string {
		if k == "DEN_TOKEN" {
			return token
		}
		return ""
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := New(Options{Runtime: se.RT, Store: se.Store, ConfigPath: filepath.Join(t.TempDir(), "config.toml")}).Handler()
	srv := httptest.NewServer(g.Wrap(h))
	t.Cleanup(srv.Close)
	return srv
}
