package permission

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"den.dev/den/internal/store"
)

// The test binary doubles as "another process" answering an approval,
// as den approve and den deny do: run with these variables set, it
// opens the database, answers, and exits.
const (
	childDB     = "DEN_PERMISSION_TEST_DB"
	childID     = "DEN_PERMISSION_TEST_APPROVAL"
	childStatus = "DEN_PERMISSION_TEST_STATUS"
	childScope  = "DEN_PERMISSION_TEST_SCOPE"
)

func TestMain(m *testing.M) {
	if db := os.Getenv(childDB); db != "" {
		os.Exit(answerFromChild(db))
	}
	os.Exit(m.Run())
}

func answerFromChild(db string) int {
	st, err := store.Open(db)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Close()
	_, err = st.AnswerApproval(context.Background(), os.Getenv(childID), store.ApprovalAnswer{
		Status: os.Getenv(childStatus), Scope: os.Getenv(childScope), DecidedBy: "user",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// events collects what a gate emits.
type events struct {
	mu  sync.Mutex
	all []Event
}

func (e *events) emit(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.all = append(e.all, ev)
}

func (e *events) list() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Event(nil), e.all...)
}

func openStore(t *testing.T) (*store.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "den.db")
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, path
}

var configSet = Request{Session: "s1", Command: CmdConfig, Action: "set", Args: []string{"set", "providers.x.api_key", "sk-abcdefghijklmnopqrstuvwx"}}

// check runs Check and fails the test on a Go error.
func check(t *testing.T, g *Gate, r Request) *Call {
	t.Helper()
	c, err := g.Check(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAllowAndDenyByPolicy(t *testing.T) {
	ctx := context.Background()
	st, _ := openStore(t)
	var ev events
	p := Policy{Overrides: map[string]Decision{"den-notify": Deny}}
	g := New(st, "a", p, Options{Emit: ev.emit})

	ran := false
	c, code, err := g.Do(ctx, Request{Session: "s1", Command: CmdOpen, Subject: "https://x", Args: []string{"https://x"}}, func(context.Context) int { ran = true; return 0 })
	if err != nil || c.Decision != Allow || c.By != ByPolicy || !ran || code != 0 {
		t.Errorf("open: %+v code %d ran %v err %v", c, code, ran, err)
	}
	ran = false
	c, code, err = g.Do(ctx, Request{Session: "s1", Command: CmdNotify, Args: []string{"hi"}}, func(context.Context) int { ran = true; return 0 })
	if err != nil || c.Decision != Deny || ran || code != ExitDenied {
		t.Errorf("notify: %+v code %d ran %v err %v", c, code, ran, err)
	}
	if len(ev.list()) != 0 {
		t.Errorf("events without an ask: %v", ev.list())
	}
	audit, err := st.ListAudit(ctx, store.AuditFilter{Agent: "a"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 2 {
		t.Fatalf("audit %+v", audit)
	}
	if e := audit[0]; e.Command != CmdNotify || e.Decision != "deny" || e.DecidedBy != "policy" || e.ExitCode != ExitDenied || e.Session != "s1" {
		t.Errorf("denied call audited as %+v", e)
	}
	if e := audit[1]; e.Command != CmdOpen || e.Decision != "allow" || e.ExitCode != 0 || len(e.Args) != 1 {
		t.Errorf("allowed call audited as %+v", e)
	}
}

func TestAnsweredByAnotherProcess(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		status string
		want   Decision
	}{{store.ApprovalApproved, Allow}, {store.ApprovalDenied, Deny}} {
		t.Run(tt.status, func(t *testing.T) {
			st, path := openStore(t)
			var child *exec.Cmd
			var out []byte
			var childErr error
			done := make(chan struct{})
			emit := func(ev Event) {
				req, ok := ev.(*ApprovalRequest)
				if !ok {
					return
				}
				child = exec.Command(exe)
				child.Env = append(os.Environ(), childDB+"="+path, childID+"="+req.ID, childStatus+"="+tt.status, childScope+"=once")
				go func() {
					defer close(done)
					out, childErr = child.CombinedOutput()
				}()
			}
			g := New(st, "a", Policy{}, Options{Emit: emit, Timeout: time.Minute})
			c := check(t, g, configSet)
			<-done
			if childErr != nil {
				t.Fatalf("child: %v\n%s", childErr, out)
			}
			if c.Decision != tt.want || c.By != ByUser || c.Scope != Once || c.ApprovalID == "" {
				t.Errorf("call %+v, want %s by user, scope once", c, tt.want)
			}
			a, err := st.GetApproval(context.Background(), c.ApprovalID)
			if err != nil || a.Status != tt.status {
				t.Errorf("approval %+v %v", a, err)
			}
		})
	}
}

func TestApprovalRequestEvent(t *testing.T) {
	st, _ := openStore(t)
	var ev events
	prompt := func(ctx context.Context, r *ApprovalRequest) (Answer, error) {
		return Answer{Approve: true, Scope: Once}, nil
	}
	g := New(st, "agent1", Policy{}, Options{Emit: ev.emit, Prompt: prompt})
	c := check(t, g, configSet)
	if c.Decision != Allow || c.By != ByUser {
		t.Fatalf("call %+v", c)
	}
	list := ev.list()
	if len(list) != 2 {
		t.Fatalf("events %v", list)
	}
	req, ok := list[0].(*ApprovalRequest)
	if !ok || req.Type() != "approval_request" {
		t.Fatalf("first event %#v", list[0])
	}
	if req.ID != c.ApprovalID || req.Agent != "agent1" || req.Session != "s1" || req.Command != CmdConfig || req.Action != "set" ||
		len(req.Scopes) != 3 || req.Expires.IsZero() {
		t.Errorf("request %+v", req)
	}
	if want := []string{"set", "providers.x.api_key", Redacted}; fmt.Sprint(req.Args) != fmt.Sprint(want) {
		t.Errorf("args %q, want %q", req.Args, want)
	}
	res, ok := list[1].(*ApprovalResolved)
	if !ok || res.ID != c.ApprovalID || !res.Approved || res.DecidedBy != ByUser {
		t.Errorf("second event %#v", list[1])
	}
	// The audit log has the redacted arguments too.
	audit, _ := st.ListAudit(context.Background(), store.AuditFilter{}, 0)
	if len(audit) != 1 || audit[0].Args[2] != Redacted || audit[0].ApprovalID != c.ApprovalID || audit[0].DecidedBy != "user" {
		t.Errorf("audit %+v", audit)
	}
}

func TestTimeoutDenies(t *testing.T) {
	st, _ := openStore(t)
	var ev events
	g := New(st, "a", Policy{}, Options{Emit: ev.emit, Timeout: 50 * time.Millisecond, PollInterval: 10 * time.Millisecond})
	c := check(t, g, configSet)
	if c.Decision != Deny || c.By != ByTimeout {
		t.Errorf("call %+v, want denied by timeout", c)
	}
	a, _ := st.GetApproval(context.Background(), c.ApprovalID)
	if a.Status != store.ApprovalExpired {
		t.Errorf("approval %+v", a)
	}
	if res, ok := ev.list()[1].(*ApprovalResolved); !ok || res.Approved || res.DecidedBy != ByTimeout {
		t.Errorf("resolution %#v", ev.list()[1])
	}
	if p, _ := st.PendingApprovals(context.Background(), ""); len(p) != 0 {
		t.Errorf("still pending %+v", p)
	}
}

func TestCancelWhileWaiting(t *testing.T) {
	st, _ := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	promptDone := make(chan struct{})
	prompt := func(pctx context.Context, r *ApprovalRequest) (Answer, error) {
		cancel() // the user interrupts den while it asks
		<-pctx.Done()
		close(promptDone)
		return Answer{}, pctx.Err()
	}
	g := New(st, "a", Policy{}, Options{Prompt: prompt})
	c, err := g.Check(ctx, configSet)
	if !errors.Is(err, context.Canceled) || c != nil {
		t.Fatalf("Check: %+v, %v; want context.Canceled", c, err)
	}
	select {
	case <-promptDone:
	default:
		t.Error("Check returned before the prompt did")
	}
	audit, _ := st.ListAudit(context.Background(), store.AuditFilter{}, 0)
	if len(audit) != 1 || audit[0].Decision != "deny" || audit[0].DecidedBy != "canceled" {
		t.Errorf("audit %+v", audit)
	}
	a, _ := st.GetApproval(context.Background(), audit[0].ApprovalID)
	if a.Status != store.ApprovalExpired || a.DecidedBy != "canceled" {
		t.Errorf("approval %+v", a)
	}
}

// A face's prompt and another process race; the store keeps the first
// answer and the gate follows it.
func TestPromptLosesToAnotherProcess(t *testing.T) {
	st, path := openStore(t)
	other, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	prompt := func(ctx context.Context, r *ApprovalRequest) (Answer, error) {
		if _, err := other.AnswerApproval(ctx, r.ID, store.ApprovalAnswer{Status: store.ApprovalDenied, Scope: "once", DecidedBy: "user"}); err != nil {
			return Answer{}, err
		}
		return Answer{Approve: true}, nil // too late
	}
	g := New(st, "a", Policy{}, Options{Prompt: prompt})
	if c := check(t, g, configSet); c.Decision != Deny {
		t.Errorf("call %+v, want the first answer (deny)", c)
	}
}

func TestScopes(t *testing.T) {
	ctx := context.Background()
	st, path := openStore(t)
	var mu sync.Mutex
	asked := 0
	answer := Answer{Approve: true, Scope: Once}
	prompt := func(ctx context.Context, r *ApprovalRequest) (Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		asked++
		return answer, nil
	}
	setAnswer := func(a Answer) { mu.Lock(); answer = a; mu.Unlock() }
	timesAsked := func() int { mu.Lock(); defer mu.Unlock(); return asked }
	g := New(st, "a", Policy{}, Options{Prompt: prompt})

	// once: asked every time.
	check(t, g, configSet)
	check(t, g, configSet)
	if n := timesAsked(); n != 2 {
		t.Errorf("scope once: asked %d times, want 2", n)
	}

	// session: asked once more, then remembered in this session only.
	setAnswer(Answer{Approve: true, Scope: Session})
	check(t, g, configSet)
	c := check(t, g, configSet)
	if n := timesAsked(); n != 3 || c.Decision != Allow || c.By != BySession {
		t.Errorf("scope session: asked %d times (want 3), then %+v", n, c)
	}
	other := configSet
	other.Session = "s2"
	setAnswer(Answer{Approve: false, Scope: Session})
	if c := check(t, g, other); c.Decision != Deny || c.By != ByUser || timesAsked() != 4 {
		t.Errorf("another session: %+v", c)
	}
	if c := check(t, g, other); c.Decision != Deny || c.By != BySession || timesAsked() != 4 {
		t.Errorf("a session denial is remembered: %+v", c)
	}
	// A session answer survives a new Gate (another den process) too.
	if c := check(t, New(st, "a", Policy{}, Options{Mode: DenyAsks}), configSet); c.Decision != Allow || c.By != BySession {
		t.Errorf("session answer in a new gate: %+v", c)
	}

	// always: a rule, which a new Gate on another handle of the same
	// file honours without asking, in any session.
	send := Request{Session: "s3", Command: CmdSessions, Action: "send", Args: []string{"send", "x", "hello"}}
	setAnswer(Answer{Approve: true, Scope: Always})
	check(t, g, send)
	st2, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	g2 := New(st2, "a", Policy{}, Options{Mode: DenyAsks})
	send.Session = "s4"
	if c := check(t, g2, send); c.Decision != Allow || c.By != ByRule || c.Scope != Always {
		t.Errorf("always: new gate decided %+v", c)
	}
	// The rule is the agent's: another agent is still asked.
	if c := check(t, New(st2, "b", Policy{}, Options{Mode: DenyAsks}), send); c.Decision != Deny || c.By != ByUnattended {
		t.Errorf("agent b: %+v", c)
	}
	// Earlier answers never beat the config: a deny override wins.
	deny := New(st2, "a", Policy{Overrides: map[string]Decision{"den-sessions send": Deny}}, Options{})
	if c := check(t, deny, send); c.Decision != Deny || c.By != ByPolicy {
		t.Errorf("override after an always answer: %+v", c)
	}
	rules, _ := st.Rules(ctx, "a")
	if len(rules) != 1 || rules[0].Command != CmdSessions || rules[0].Decision != "allow" {
		t.Errorf("rules %+v", rules)
	}
}

func TestModes(t *testing.T) {
	ctx := context.Background()
	st, _ := openStore(t)
	var ev events
	yes := New(st, "a", Policy{}, Options{Mode: AutoApprove, Emit: ev.emit})
	if c := check(t, yes, configSet); c.Decision != Allow || c.By != ByAuto || c.Scope != Once {
		t.Errorf("--yes: %+v", c)
	}
	// --yes approves once: nothing is remembered.
	if c := check(t, New(st, "a", Policy{}, Options{Mode: DenyAsks}), configSet); c.Decision != Deny || c.By != ByUnattended {
		t.Errorf("no terminal: %+v", c)
	}
	// --yes never turns a deny into an allow.
	if c := check(t, New(st, "a", Policy{Trust: Restricted}, Options{Mode: AutoApprove}), configSet); c.Decision != Deny || c.By != ByPolicy {
		t.Errorf("--yes under restricted: %+v", c)
	}
	if len(ev.list()) != 0 {
		t.Errorf("events: %v", ev.list())
	}
	if p, _ := st.PendingApprovals(ctx, ""); len(p) != 0 {
		t.Errorf("pending %+v", p)
	}
	audit, _ := st.ListAudit(ctx, store.AuditFilter{}, 0)
	var by []string
	for _, e := range audit {
		by = append(by, e.Decision+"/"+e.DecidedBy)
	}
	if fmt.Sprint(by) != "[deny/policy deny/unattended allow/auto]" {
		t.Errorf("audit %v", by)
	}
}

// Nothing the sandbox sends answers an ask: arguments that look like
// answers, approval ids or --yes change nothing.
func TestRequestCannotApprove(t *testing.T) {
	st, _ := openStore(t)
	g := New(st, "a", Policy{}, Options{Mode: DenyAsks})
	first := check(t, New(st, "a", Policy{}, Options{Timeout: 20 * time.Millisecond, PollInterval: 5 * time.Millisecond}), configSet)
	r := configSet
	r.Args = []string{"--yes", "approve", first.ApprovalID, "--scope", "always"}
	r.Subject = "approved"
	if c := check(t, g, r); c.Decision != Deny {
		t.Errorf("%+v", c)
	}
}

func TestFinishOnce(t *testing.T) {
	st, _ := openStore(t)
	g := New(st, "a", Policy{}, Options{})
	c := check(t, g, Request{Command: CmdNotify})
	if err := c.Finish(context.Background(), 0); err == nil {
		t.Error("a second Finish succeeded")
	}
	if audit, _ := st.ListAudit(context.Background(), store.AuditFilter{}, 0); len(audit) != 1 {
		t.Errorf("%d audit rows, want 1", len(audit))
	}
}

// TestAnswersCoverTheirSubject: a "session" or "always" answer covers
// the command, action and subject it was given for; the same command
// with another subject (another key, another model, another session)
// asks again.
func TestAnswersCoverTheirSubject(t *testing.T) {
	st, _ := openStore(t)
	var asked []*ApprovalRequest
	var mu sync.Mutex
	prompt := func(ctx context.Context, r *ApprovalRequest) (Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, r)
		return Answer{Approve: true, Scope: Session}, nil
	}
	g := New(st, "a", Policy{}, Options{Prompt: prompt})
	model := Request{Session: "s1", Command: CmdConfig, Action: "set", Subject: "agents.a.model", Detail: `agents.a.model: "x" → "y"`, Args: []string{"set", "agents.a.model", "y"}}
	check(t, g, model)
	if c := check(t, g, model); c.By != BySession || len(asked) != 1 {
		t.Fatalf("the same subject was asked again: %+v", c)
	}
	if asked[0].Detail != model.Detail || !strings.Contains(asked[0].Covers, "agents.a.model") {
		t.Errorf("the question does not say what it changes and covers: %+v", asked[0])
	}
	trust := model
	trust.Subject, trust.Args = "agents.a.trust", []string{"set", "agents.a.trust", "full"}
	if c := check(t, g, trust); c.By != ByUser || len(asked) != 2 {
		t.Errorf("a session answer for agents.a.model allowed agents.a.trust unasked: %+v", c)
	}

	// always, for den-model run: one model's rule is not another's.
	prompt2 := func(ctx context.Context, r *ApprovalRequest) (Answer, error) {
		return Answer{Approve: true, Scope: Always}, nil
	}
	g2 := New(st, "a", Policy{}, Options{Prompt: prompt2})
	run := Request{Session: "s1", Command: CmdModel, Action: "run", Subject: "openai/gpt-5-mini", Args: []string{"run", "--model", "openai/gpt-5-mini"}}
	check(t, g2, run)
	unattended := New(st, "a", Policy{}, Options{Mode: DenyAsks})
	if c := check(t, unattended, run); c.By != ByRule || c.Decision != Allow {
		t.Errorf("the rule does not cover its model: %+v", c)
	}
	run.Subject = "openai/gpt-5"
	if c := check(t, unattended, run); c.Decision != Deny || c.By != ByUnattended {
		t.Errorf("a rule for gpt-5-mini allowed gpt-5: %+v", c)
	}
}

// TestCheckWith: a decision den gives from outside the policy (an MCP
// tool's) takes the policy's place: allow and deny stand, an ask is
// asked and its answer remembered for its subject as any other; and a
// value that is no decision asks.
func TestCheckWith(t *testing.T) {
	ctx := context.Background()
	st, _ := openStore(t)
	asked := 0
	g := New(st, "a", Policy{Trust: Full}, Options{Prompt: func(ctx context.Context, r *ApprovalRequest) (Answer, error) {
		asked++
		return Answer{Approve: true, Scope: Session}, nil
	}})
	call := Request{Session: "s1", Command: MCP, Action: "call", Subject: "fs/write_file", Args: []string{`{"path":"x"}`}}
	for _, tt := range []struct {
		d    Decision
		want Decision
		by   By
	}{{Deny, Deny, ByPolicy}, {Allow, Allow, ByPolicy}, {Ask, Allow, ByUser}, {Ask, Allow, BySession}, {"maybe", Allow, BySession}} {
		c, err := g.CheckWith(ctx, call, tt.d)
		if err != nil {
			t.Fatal(err)
		}
		c.Finish(ctx, 0)
		if c.Decision != tt.want || c.By != tt.by {
			t.Errorf("CheckWith %q: %s by %s, want %s by %s", tt.d, c.Decision, c.By, tt.want, tt.by)
		}
	}
	if asked != 1 {
		t.Errorf("asked %d times, want 1", asked)
	}
	other := call
	other.Subject = "fs/delete_file"
	if c, _ := g.CheckWith(ctx, other, Ask); c.By != ByUser || asked != 2 {
		t.Errorf("another tool was not asked: %+v", c)
	}
	audit, _ := st.ListAudit(ctx, store.AuditFilter{Agent: "a"}, 0)
	if len(audit) != 5 || audit[len(audit)-1].Command != MCP || audit[len(audit)-1].Decision != "deny" {
		t.Errorf("audit %+v", audit)
	}
}
