package hostsvc

import (
	"context"
	"errors"
	"strings"
	"testing"
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
