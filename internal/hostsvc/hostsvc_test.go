package hostsvc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"den.dev/den/internal/hostcmd"
)

type fakeSessions struct{ sent []string }

func (f *fakeSessions) List(ctx context.Context, agent string) ([]SessionInfo, error) {
	return []SessionInfo{{ID: "s1", Title: "one"}, {ID: "s2", Title: "two"}}, nil
}
func (f *fakeSessions) Search(ctx context.Context, agent, q string) ([]Hit, error) {
	if q == "zebra" {
		return []Hit{{Session: "s2", Snippet: "a zebra"}}, nil
	}
	return nil, nil
}
func (f *fakeSessions) Show(ctx context.Context, agent, id string) (SessionInfo, []SessionMessage, error) {
	if id != "s1" {
		return SessionInfo{}, nil, errors.New("no such session")
	}
	return SessionInfo{ID: "s1"}, []SessionMessage{{Role: "user", Text: "hi"}}, nil
}
func (f *fakeSessions) Send(ctx context.Context, agent, from, id, msg string) error {
	f.sent = append(f.sent, agent+":"+from+"->"+id+":"+msg)
	return nil
}

type fakeModels struct{ got ModelRequest }

func (f *fakeModels) List() []ModelInfo { return []ModelInfo{{Ref: "openai/gpt-5-mini"}} }
func (f *fakeModels) Run(ctx context.Context, r ModelRequest) (ModelAnswer, error) {
	f.got = r
	return ModelAnswer{Model: r.Ref, Text: "answer to " + strings.TrimSpace(r.Prompt)}, nil
}

type fakeConfig map[string]string

func (f fakeConfig) Get(k string) (string, error) {
	if v, ok := f[k]; ok {
		return v, nil
	}
	return "", errors.New("no such key")
}
func (f fakeConfig) Plan(agent, k, v string) (string, func() (string, error), error) {
	if k != "agents."+agent+".model" {
		return "", nil, errors.New(k + " is not a setting an agent may change")
	}
	return k + ": " + f[k] + " → " + v, func() (string, error) { old := f[k]; f[k] = v; return old, nil }, nil
}

// parse finds a command and parses a call of it.
func parse(t *testing.T, s *Service, name string, args []string, stdin string) (*Plan, *Result) {
	t.Helper()
	for _, c := range Commands() {
		if c.Name == name {
			return c.Parse(s, &Call{Agent: "a", Session: "s1", Args: args, Cwd: "/workspace", Stdin: strings.NewReader(stdin)})
		}
	}
	t.Fatalf("no command %s", name)
	return nil, nil
}

// run parses and, when there is a plan, runs it.
func run(t *testing.T, s *Service, name string, args []string, stdin string) Result {
	t.Helper()
	p, bad := parse(t, s, name, args, stdin)
	if bad != nil {
		return *bad
	}
	return p.Run(context.Background())
}

func TestCommands(t *testing.T) {
	var events []Event
	sess := &fakeSessions{}
	models := &fakeModels{}
	s := &Service{Emit: func(e Event) { events = append(events, e) }, Sessions: sess, Models: models, Config: fakeConfig{"agents.a.model": `"x/y"`},
		LookPath: func(string) (string, error) { return "", errors.New("missing") }}

	if r := run(t, s, "den-open", []string{"report.html"}, ""); r.Code != "" || events[0].(*OpenEvent).Target != "/workspace/report.html" {
		t.Errorf("open: %+v %+v", r, events)
	}
	if r := run(t, s, "den-open", nil, ""); r.Code != CodeInvalidArgs {
		t.Errorf("open without target: %+v", r)
	}
	if r := run(t, s, "den-notify", []string{"--title", "T", "done", "now"}, ""); r.Code != "" || events[1].(*NotifyEvent).Message != "done now" || events[1].(*NotifyEvent).Title != "T" {
		t.Errorf("notify: %+v", r)
	}
	if r := run(t, s, "den-notify", []string{"--bogus"}, ""); r.Code != CodeInvalidArgs {
		t.Errorf("notify bad flag: %+v", r)
	}
	if r := run(t, s, "den-ask", []string{"ok?"}, ""); r.Code != CodeNotAvailable {
		t.Errorf("ask without a face: %+v", r)
	}
	s.Ask = func(ctx context.Context, q string, choices []string) (string, error) { return "B", nil }
	if r := run(t, s, "den-ask", []string{"--choices", "a,b", "which?"}, ""); r.Code != "" || r.Data.(map[string]string)["answer"] != "b" {
		t.Errorf("ask: %+v", r)
	}
	if r := run(t, s, "den-ask", []string{"--choices", "x,y", "which?"}, ""); r.Code != CodeNoData {
		t.Errorf("answer outside the choices: %+v", r)
	}
	if r := run(t, s, "den-sessions", []string{"list"}, ""); r.Code != "" || len(r.Data.([]SessionInfo)) != 2 {
		t.Errorf("sessions list: %+v", r)
	}
	if r := run(t, s, "den-sessions", []string{"search", "zebra"}, ""); r.Code != "" {
		t.Errorf("search: %+v", r)
	}
	if r := run(t, s, "den-sessions", []string{"search", "nothing"}, ""); r.Code != CodeNoData {
		t.Errorf("search miss: %+v", r)
	}
	if r := run(t, s, "den-sessions", []string{"show", "nope"}, ""); r.Code != CodeNoData {
		t.Errorf("show missing: %+v", r)
	}
	if r := run(t, s, "den-sessions", []string{"send", "s2", "hello", "there"}, ""); r.Code != "" || sess.sent[0] != "a:s1->s2:hello there" {
		t.Errorf("send: %+v %v", r, sess.sent)
	}
	if r := run(t, s, "den-sessions", []string{"send", "s1", "x"}, ""); r.Code != CodeInvalidArgs {
		t.Errorf("send to itself: %+v", r)
	}
	if r := run(t, s, "den-model", []string{"run", "--model", "openai/gpt-5-mini"}, "from stdin\n"); r.Code != "" || models.got.Prompt != "from stdin\n" {
		t.Errorf("model run: %+v", r)
	}
	if r := run(t, s, "den-model", []string{"run", "--prompt", "x"}, ""); r.Code != CodeInvalidArgs {
		t.Errorf("model without --model: %+v", r)
	}
	if r := run(t, s, "den-config", []string{"set", "agents.a.model", "a/b"}, ""); r.Code != "" || r.Data.(map[string]string)["old"] != `"x/y"` {
		t.Errorf("config set: %+v", r)
	}
	if r := run(t, s, "den-config", []string{"get", "nope"}, ""); r.Code != CodeNoData {
		t.Errorf("config get missing: %+v", r)
	}
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	if r := run(t, s, "den-clipboard", []string{"read"}, ""); r.Code != CodeNotAvailable {
		t.Errorf("clipboard without a display: %+v", r)
	}
	if r := run(t, s, "den-speak", []string{"hello"}, ""); r.Code != CodeNotAvailable {
		t.Errorf("speak without espeak-ng: %+v", r)
	}
}

// TestEveryCommandIsLinked: each command and alias has its link in the
// computer, or the agent would get "not found" for it.
func TestEveryCommandIsLinked(t *testing.T) {
	linked := map[string]bool{}
	for _, n := range hostcmd.LinkNames() {
		linked[n] = true
	}
	for _, c := range Commands() {
		for _, n := range append([]string{c.Name}, c.Aliases...) {
			if !linked[n] {
				t.Errorf("%s has no link in the computer (hostcmd.LinkNames)", n)
			}
		}
	}
}

// TestLocation: den-location checks its flags, says what to do without
// a browser, and takes from the browser's answer only a real location.
func TestLocation(t *testing.T) {
	answer := json.RawMessage(`{"latitude":52.5,"longitude":13.4,"accuracy_m":20,"extra":"<script>"}`)
	s := &Service{Device: func(ctx context.Context, session, kind string, args any) (json.RawMessage, error) {
		if kind != "location" || session != "s1" {
			t.Errorf("asked %s for %s", kind, session)
		}
		return answer, nil
	}}
	run := func(args ...string) Result {
		t.Helper()
		p, bad := s.parseLocation(&Call{Session: "s1", Args: args})
		if bad != nil {
			return *bad
		}
		return p.Run(context.Background())
	}
	if r := run(); r.Code != "" || r.Data.(map[string]any)["latitude"] != 52.5 || r.Data.(map[string]any)["extra"] != nil {
		t.Errorf("location: %+v", r)
	}
	for _, args := range [][]string{{"--timeout", "0s"}, {"--timeout", "1h"}, {"--timeout", "1s", "--timeout", "2s"}, {"here"}} {
		if r := run(args...); r.Code != CodeInvalidArgs {
			t.Errorf("%v: %+v", args, r)
		}
	}
	answer = json.RawMessage(`{"latitude":500,"longitude":1}`)
	if r := run(); r.Code != CodeInternal {
		t.Errorf("a latitude of 500: %+v", r)
	}
	s.Device = func(context.Context, string, string, any) (json.RawMessage, error) { return nil, ErrNoDevice }
	if r := run(); r.Code != CodeNotAvailable || !strings.Contains(r.Message, "open den") {
		t.Errorf("no browser: %+v", r)
	}
	s.Device = nil
	if r := run(); r.Code != CodeNotAvailable {
		t.Errorf("no web face: %+v", r)
	}
}

// TestClipboardThroughBrowser: with no graphical session on the host,
// den-clipboard uses the connected browser's clipboard, and says what
// to do when there is none.
func TestClipboardThroughBrowser(t *testing.T) {
	t.Setenv("DISPLAY", "")
	t.Setenv("WAYLAND_DISPLAY", "")
	var asked map[string]string
	s := &Service{Device: func(ctx context.Context, session, kind string, args any) (json.RawMessage, error) {
		asked = args.(map[string]string)
		if asked["action"] == "read" {
			return json.RawMessage(`{"text":"on the phone"}`), nil
		}
		return json.RawMessage(`{"written":true}`), nil
	}}
	run := func(args ...string) Result {
		t.Helper()
		p, bad := s.parseClipboard(&Call{Session: "s1", Args: args, Stdin: strings.NewReader("")})
		if bad != nil {
			return *bad
		}
		return p.Run(context.Background())
	}
	if r := run("read"); r.Code != "" || r.Data.(map[string]string)["text"] != "on the phone" {
		t.Errorf("read: %+v", r)
	}
	if r := run("write", "hello"); r.Code != "" || asked["text"] != "hello" {
		t.Errorf("write: %+v, asked %v", r, asked)
	}
	s.Device = func(context.Context, string, string, any) (json.RawMessage, error) { return nil, ErrNoDevice }
	if r := run("read"); r.Code != CodeNotAvailable || !strings.Contains(r.Message, "no browser") || !strings.Contains(r.Message, "no graphical session") {
		t.Errorf("no browser, no host clipboard: %+v", r)
	}
}

// TestCamera: den-camera asks the browser for a photo and prints the
// path of the one it uploaded, once den has checked it is an image in
// the attachments folder; a name that leaves the folder, a link the
// computer planted and a file that is no image are refused.
func TestCamera(t *testing.T) {
	dir := t.TempDir()
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00")
	os.WriteFile(filepath.Join(dir, "photo.png"), png, 0o644)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("just text"), 0o644)
	os.WriteFile(filepath.Join(t.TempDir(), "secret.png"), png, 0o644)
	os.Symlink("/etc/shadow", filepath.Join(dir, "planted.png"))
	var name string
	var prompt string
	s := &Service{Attachments: dir, Device: func(ctx context.Context, session, kind string, args any) (json.RawMessage, error) {
		if kind != "camera" || session != "s1" {
			t.Errorf("asked %s for %s", kind, session)
		}
		prompt = args.(map[string]string)["prompt"]
		return json.Marshal(map[string]string{"name": name})
	}}
	run := func(args ...string) Result {
		t.Helper()
		p, bad := s.parseCamera(&Call{Session: "s1", Args: args})
		if bad != nil {
			return *bad
		}
		return p.Run(context.Background())
	}
	name = "photo.png"
	r := run("--prompt", "the receipt")
	if r.Code != "" || r.Data.(map[string]any)["path"] != "/den/attachments/photo.png" || r.Data.(map[string]any)["type"] != "image/png" {
		t.Errorf("a photo: %+v", r)
	}
	if prompt != "the receipt" {
		t.Errorf("the prompt reached the browser as %q", prompt)
	}
	for _, bad := range []string{"notes.txt", "planted.png", "../" + filepath.Base(dir) + "/photo.png", "missing.png", ".."} {
		name = bad
		if r := run(); r.Code != CodeInternal {
			t.Errorf("answer %q: %+v", bad, r)
		}
	}
	for _, args := range [][]string{{"--timeout", "0s"}, {"--timeout", "1h"}, {"now"}, {"--prompt", "a\nb"}, {"--prompt", strings.Repeat("x", 501)}} {
		if r := run(args...); r.Code != CodeInvalidArgs {
			t.Errorf("%v: %+v", args, r)
		}
	}
	s.Device = func(context.Context, string, string, any) (json.RawMessage, error) { return nil, ErrNoDevice }
	if r := run(); r.Code != CodeNotAvailable || !strings.Contains(r.Message, "open den") {
		t.Errorf("no browser: %+v", r)
	}
	s.Device = func(context.Context, string, string, any) (json.RawMessage, error) {
		return nil, fmt.Errorf("%w: the user declined", ErrDeviceRefused)
	}
	if r := run(); r.Code != CodeDenied || !strings.Contains(r.Message, "declined") {
		t.Errorf("declined: %+v", r)
	}
	s.Device = nil
	if r := run(); r.Code != CodeNotAvailable {
		t.Errorf("no web face: %+v", r)
	}
}

// TestSpeakInBrowser: den-speak --browser sends the text, language,
// voice and rate to the browser and waits for it to have spoken; its
// flags are checked, and without a browser it says what else to do.
func TestSpeakInBrowser(t *testing.T) {
	var asked map[string]any
	s := &Service{Device: func(ctx context.Context, session, kind string, args any) (json.RawMessage, error) {
		if kind != "speak" {
			t.Errorf("asked %s", kind)
		}
		asked = args.(map[string]any)
		return json.RawMessage(`{"voice":"Samantha"}`), nil
	}}
	run := func(args ...string) Result {
		t.Helper()
		p, bad := s.parseSpeak(&Call{Session: "s1", Args: args})
		if bad != nil {
			return *bad
		}
		return p.Run(context.Background())
	}
	r := run("--browser", "--lang", "en-GB", "--rate", "1.25", "good", "morning")
	if r.Code != "" || r.Data.(map[string]any)["voice"] != "Samantha" {
		t.Errorf("spoken: %+v", r)
	}
	if asked["text"] != "good morning" || asked["lang"] != "en-GB" || asked["rate"] != 1.25 {
		t.Errorf("the browser was asked %v", asked)
	}
	for _, args := range [][]string{
		{"--browser", "--lang", "en_US!", "hi"}, {"--browser", "--rate", "9", "hi"}, {"--browser", "--rate", "NaN", "hi"},
		{"--browser", "--voice", "a\nb", "hi"}, {"--browser"}, {"--lang", "de", "hallo"}, {"--browser", "--browser", "hi"},
	} {
		if r := run(args...); r.Code != CodeInvalidArgs {
			t.Errorf("%q: %+v", args, r)
		}
	}
	s.Device = func(context.Context, string, string, any) (json.RawMessage, error) { return nil, ErrNoDevice }
	if r := run("--browser", "hi"); r.Code != CodeNotAvailable || !strings.Contains(r.Message, "without --browser") {
		t.Errorf("no browser: %+v", r)
	}
	s.Device = nil
	if r := run("--browser", "hi"); r.Code != CodeNotAvailable {
		t.Errorf("no web face: %+v", r)
	}
}
