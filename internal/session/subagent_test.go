package session

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/config"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/store"
)

// request is what the fake model reads of a request: whose it is (a
// sub-agent's system prompt says so) and the text of its messages.
type request struct {
	child bool
	tools []string
	text  string // every text and tool result, in order
	last  string // the last message's text
}

func readSubRequest(t *testing.T, body []byte) request {
	var req struct {
		System any `json:"system"`
		Tools  []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Errorf("fake model: %v", err)
	}
	sys, _ := json.Marshal(req.System)
	r := request{child: strings.Contains(string(sys), "You are a sub-agent")}
	for _, tl := range req.Tools {
		r.tools = append(r.tools, tl.Name)
	}
	for _, m := range req.Messages {
		r.last = string(m.Content)
		r.text += r.last + "\n"
	}
	return r
}

func shellTurn(id, cmd string) llmtest.Turn {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return llmtest.Turn{Calls: []llmtest.Call{{ID: id, Name: "shell_execute", Input: string(in)}}, InputTokens: 100, OutputTokens: 10}
}

func answer(text string) llmtest.Turn {
	return llmtest.Turn{Text: text, InputTokens: 100, OutputTokens: 10}
}

var subagentID = regexp.MustCompile(`\\"id\\":\\"([0-9A-Za-z]+)\\"`)

// lastID is the sub-agent id in the last tool result the model got.
func lastID(r request) string {
	m := subagentID.FindAllStringSubmatch(r.text, -1)
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1][1]
}

func sendAndWait(t *testing.T, tr *testRuntime, id, text string, opts TurnOptions) Outcome {
	t.Helper()
	sent, err := tr.Send(context.Background(), id, Message{Text: text}, opts)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case out := <-sent.Done:
		return out
	case <-time.After(90 * time.Second):
		t.Fatal("no outcome")
	}
	return Outcome{}
}

func profiles(p map[string]config.Profile, s config.Subagents) *config.Config {
	return &config.Config{Profiles: p, Subagents: s}
}

// TestSubagentRun: den-agent run in the computer starts a sub-agent
// with the profile's instructions and tools, and prints its answer;
// the sub-agent is a session of its own under the parent, in the same
// computer with its own /workspace.
func TestSubagentRun(t *testing.T) {
	cfg := profiles(map[string]config.Profile{"counter": {Instructions: "Count carefully.", Tools: []string{"shell_execute", "file_*"}}}, config.Subagents{})
	tr := newTestRuntime(t, cfg)
	var mu sync.Mutex
	var childTools []string
	var childPrompt string
	tr.fake.Respond(func(body []byte) llmtest.Turn {
		r := readSubRequest(t, body)
		switch {
		case r.child && !strings.Contains(r.text, "tool_result"):
			mu.Lock()
			childTools, childPrompt = r.tools, string(body)
			mu.Unlock()
			return shellTurn("c1", "echo mine > /workspace/note; ls /workspace")
		case r.child:
			return answer("There are 42 stars.")
		case !strings.Contains(r.text, "tool_result"):
			return shellTurn("p1", `den-agent run --profile counter "count the stars" --compact`)
		}
		return answer("The sub-agent says: " + r.last)
	})
	parent := tr.session(t)
	if out := sendAndWait(t, tr, parent.ID, "how many stars?", TurnOptions{}); out.Err != nil {
		t.Fatal(out.Err)
	}
	if !strings.Contains(out(t, tr, parent.ID), "There are 42 stars.") {
		t.Errorf("the parent did not get the answer: %s", out(t, tr, parent.ID))
	}
	kids, err := tr.Subagents(context.Background(), parent.ID)
	if err != nil || len(kids) != 1 {
		t.Fatalf("sub-agents %+v %v", kids, err)
	}
	k := kids[0]
	if k.Parent != parent.ID || k.Profile != "counter" || k.Agent != "default" || k.Running || k.Answer != "There are 42 stars." || k.Ended != "done" || k.Title != "count the stars" {
		t.Errorf("sub-agent %+v", k)
	}
	if k.Usage.Requests != 2 {
		t.Errorf("sub-agent usage %+v, want its own 2 requests", k.Usage)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(childTools, ",") != "shell_execute,file_read,file_write,file_edit" {
		t.Errorf("the sub-agent's tools %v, want those its profile allows", childTools)
	}
	if !strings.Contains(childPrompt, "Count carefully.") || !strings.Contains(childPrompt, parent.ID) {
		t.Errorf("the sub-agent's prompt lacks its profile's instructions or its parent")
	}
	// Its own workspace: the parent's has no note.
	f, err := tr.Folders(context.Background(), k.ID)
	if err != nil {
		t.Fatal(err)
	}
	pf, _ := tr.Folders(context.Background(), parent.ID)
	if f.Workspace == pf.Workspace || !exists(f.Workspace+"/note") || exists(pf.Workspace+"/note") {
		t.Errorf("workspaces %s and %s", f.Workspace, pf.Workspace)
	}
}

// out is the session's history as text.
func out(t *testing.T, tr *testRuntime, id string) string {
	t.Helper()
	h, err := tr.st.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range h {
		b.WriteString(string(m.Role) + ": " + Text(m) + "\n")
		for _, p := range m.Parts {
			if r, ok := p.(*llm.ToolResult); ok {
				for _, c := range r.Content {
					if tx, ok := c.(*llm.Text); ok {
						b.WriteString("  result: " + tx.Text + "\n")
					}
				}
			}
		}
	}
	return b.String()
}

// TestSubagentSpawnSteerWaitCancel: a spawned sub-agent runs while its
// parent goes on; a message steers it at its next turn boundary; wait
// returns its answer; cancel stops another; a third's answer, spawned
// and not waited for, joins the parent's conversation after its turn
// ended, and the parent answers it.
func TestSubagentSpawnSteerWaitCancel(t *testing.T) {
	tr := newTestRuntime(t, profiles(nil, config.Subagents{}))
	tr.fake.Respond(func(body []byte) llmtest.Turn {
		r := readSubRequest(t, body)
		if r.child {
			switch {
			case strings.Contains(r.text, "task slow"):
				return shellTurn("s1", "sleep 30")
			case strings.Contains(r.text, "task late"):
				if !strings.Contains(r.text, "tool_result") {
					return shellTurn("l1", "sleep 1")
				}
				return answer("late result")
			case !strings.Contains(r.text, "tool_result"):
				return shellTurn("c1", "sleep 2")
			case strings.Contains(r.text, "also B"):
				return answer("A and B done")
			}
			return answer("A done")
		}
		switch n := strings.Count(r.text, `"tool_use_id":"p`); {
		case n == 0:
			return shellTurn("p1", "den-agent spawn task A --compact")
		case n == 1:
			id := lastID(r)
			return shellTurn("p2", "den-agent steer "+id+" also B --compact && den-agent wait "+id+" --timeout 60s --compact")
		case n == 2:
			return shellTurn("p3", "den-agent spawn task slow --compact")
		case n == 3:
			return shellTurn("p4", "sleep 1; den-agent cancel "+lastID(r)+" --compact; den-agent list --compact")
		case n == 4 && !strings.Contains(r.last, "Sub-agent"):
			return shellTurn("p5", "den-agent spawn task late --compact")
		case strings.Contains(r.last, "Sub-agent") && strings.Contains(r.last, "late result"):
			return answer("the late one said: late result")
		}
		return answer("waiting for the late one")
	})
	parent := tr.session(t)
	o := sendAndWait(t, tr, parent.ID, "go", TurnOptions{})
	if o.Err != nil {
		t.Fatal(o.Err)
	}
	hist := out(t, tr, parent.ID)
	if !strings.Contains(hist, `"answer":"A and B done"`) {
		t.Errorf("steer and wait: the parent did not get the steered answer:\n%s", hist)
	}
	if !strings.Contains(hist, `"ended":"canceled"`) {
		t.Errorf("cancel: not canceled:\n%s", hist)
	}
	if o.Result.Text != "the late one said: late result" {
		t.Errorf("the late sub-agent's answer did not reach the parent: last answer %q\n%s", o.Result.Text, hist)
	}
	kids, err := tr.Subagents(context.Background(), parent.ID)
	if err != nil || len(kids) != 3 {
		t.Fatalf("sub-agents %+v %v", kids, err)
	}
	for _, k := range kids {
		if k.Running {
			t.Errorf("sub-agent %s still runs", k.ID)
		}
	}
	// The steering message is in the first sub-agent's history, marked
	// as its parent's.
	if h := out(t, tr, kids[0].ID); !strings.Contains(h, "[message from session "+parent.ID+"]\nalso B") {
		t.Errorf("the first sub-agent's history:\n%s", h)
	}
	// Deleting the parent deletes its sub-agents.
	if err := tr.Delete(context.Background(), parent.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.st.GetSession(context.Background(), kids[0].ID); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a sub-agent outlived its parent: %v", err)
	}
}

// TestSubagentLimits: a sub-agent starts no sub-agent (depth 1), a
// parent runs at most max_running at once, and an unknown profile is
// refused; each is an error the model reads.
func TestSubagentLimits(t *testing.T) {
	tr := newTestRuntime(t, profiles(nil, config.Subagents{MaxRunning: 1}))
	tr.fake.Respond(func(body []byte) llmtest.Turn {
		r := readSubRequest(t, body)
		if r.child {
			if strings.Contains(r.text, "nest") && !strings.Contains(r.text, "tool_result") {
				return shellTurn("c1", "den-agent spawn deeper --compact")
			}
			if strings.Contains(r.text, "first") && !strings.Contains(r.text, "tool_result") {
				return shellTurn("c1", "sleep 3")
			}
			return answer("child: " + r.last)
		}
		switch n := strings.Count(r.text, `"tool_use_id":"p`); n {
		case 0:
			return shellTurn("p1", "den-agent run nest --compact")
		case 1:
			return shellTurn("p2", "den-agent spawn first --compact; den-agent spawn second --compact; echo rc=$?")
		case 2:
			return shellTurn("p3", "den-agent run --profile nosuch x --compact; echo rc=$?; den-agent wait "+lastID(r)+" --compact")
		}
		return answer("done")
	})
	parent := tr.session(t)
	if o := sendAndWait(t, tr, parent.ID, "go", TurnOptions{}); o.Err != nil {
		t.Fatal(o.Err)
	}
	hist := out(t, tr, parent.ID)
	for _, want := range []string{
		`limit_reached`, `starts no sub-agents of its own`, // the nested spawn, in the child's answer
		`sub-agents of this session run already`, "rc=1", // the second spawn
		`no sub-agent profile \"nosuch\"`, `invalid_args`,
	} {
		if !strings.Contains(hist, want) {
			t.Errorf("no %q in:\n%s", want, hist)
		}
	}
	kids, _ := tr.Subagents(context.Background(), parent.ID)
	if len(kids) != 2 {
		t.Errorf("%d sub-agents, want 2 (nest, first)", len(kids))
	}
}

// TestSubagentBudget: a sub-agent's spending counts against its
// parent's budget: the sub-agent stops before a request would cross
// it, and so does the parent.
func TestSubagentBudget(t *testing.T) {
	tr := newTestRuntime(t, profiles(nil, config.Subagents{}))
	tr.fake.Respond(func(body []byte) llmtest.Turn {
		r := readSubRequest(t, body)
		if r.child {
			turn := shellTurn("c1", "echo spent")
			turn.InputTokens = 6000
			return turn
		}
		if !strings.Contains(r.text, `"tool_use_id":"p`) {
			return shellTurn("p1", "den-agent run spend --compact")
		}
		return answer("unreachable")
	})
	parent := tr.session(t)
	o := sendAndWait(t, tr, parent.ID, "go", TurnOptions{Budget: "15k tokens"})
	if !errors.Is(o.Err, agent.ErrBudget) {
		t.Fatalf("the parent ended with %v, want ErrBudget", o.Err)
	}
	hist := out(t, tr, parent.ID)
	if !strings.Contains(hist, `"ended":"budget"`) || !strings.Contains(hist, "the budget of session "+parent.ID) {
		t.Errorf("the sub-agent did not stop at the parent's budget:\n%s", hist)
	}
	kids, _ := tr.Subagents(context.Background(), parent.ID)
	if len(kids) != 1 || kids[0].Usage.Requests == 0 || kids[0].Usage.InputTokens > 15000 {
		t.Errorf("sub-agent %+v", kids)
	}
	for _, r := range tr.fake.Requests() {
		if strings.Contains(string(r.Body), "unreachable") {
			t.Error("the parent made a request beyond its budget")
		}
	}
}

// TestSubagentTrustAndTools: a sub-agent's trust is its profile's, but
// never above its parent's; host commands its profile leaves out are
// denied.
func TestSubagentTrustAndTools(t *testing.T) {
	cfg := &config.Config{
		Agents: map[string]config.Agent{"default": {Trust: "restricted"}},
		Profiles: map[string]config.Profile{
			"wide":   {Trust: "full"},
			"narrow": {Trust: "restricted", Tools: []string{"shell_execute", "den-notify"}},
		},
	}
	tr := newTestRuntime(t, cfg)
	ctx := context.Background()
	parent := tr.session(t)
	wide, err := tr.st.CreateChild(ctx, parent.ID, "default", "", "wide", false)
	if err != nil {
		t.Fatal(err)
	}
	su, err := tr.setupOf(ctx, wide)
	if err != nil || su.trust != permission.Restricted || su.depth != 1 {
		t.Errorf("a full profile under a restricted parent: %+v %v", su, err)
	}
	cfg.Agents["default"] = config.Agent{Trust: "full"}
	su, _ = tr.setupOf(ctx, wide)
	if su.trust != permission.Full {
		t.Errorf("a full profile under a full parent: %s", su.trust)
	}
	narrow, _ := tr.st.CreateChild(ctx, parent.ID, "default", "", "narrow", false)
	su, _ = tr.setupOf(ctx, narrow)
	p := su.policy(permission.Policy{Trust: permission.Full, Overrides: map[string]permission.Decision{"den-config set": permission.Allow}})
	if p.Trust != permission.Restricted {
		t.Errorf("narrow trust %s", p.Trust)
	}
	for cmd, want := range map[string]permission.Decision{"den-notify": permission.Allow, "den-config": permission.Deny, "den-agent": permission.Deny, "den-model": permission.Deny} {
		if got := p.DecideFor(cmd, "set", ""); got != want {
			t.Errorf("%s under the narrow profile: %s, want %s", cmd, got, want)
		}
	}
	if h := su.hidden([]string{"shell_execute", "file_read", "browser_use"}); !h["file_read"] || !h["browser_use"] || h["shell_execute"] {
		t.Errorf("hidden %v", h)
	}
	if _, err := tr.Spawn(ctx, parent.ID, SpawnOptions{Task: "x", Profile: "nosuch"}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("an unknown profile: %v", err)
	}
	if _, err := tr.Spawn(ctx, parent.ID, SpawnOptions{Task: "x", Agent: "nobody"}); !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), "no agent") {
		t.Errorf("a sub-agent in an unknown agent's computer: %v", err)
	}
	cfg.Profiles["typo"] = config.Profile{Tools: []string{"shel_execute"}}
	if _, err := tr.Spawn(ctx, parent.ID, SpawnOptions{Task: "x", Profile: "typo"}); !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), "shel_execute") {
		t.Errorf("a profile naming no tool: %v", err)
	}
}

// TestSendToAgent: den-agent send puts a message into another agent's
// inbox, marked with who sent it; den-sessions send reaches a session
// of another agent the same way. Both ask first (here: approved).
func TestSendToAgent(t *testing.T) {
	tr := newTestRuntime(t, &config.Config{Agents: map[string]config.Agent{"bob": {}}})
	ctx := context.Background()
	bobs, err := tr.Create(ctx, "bob", "")
	if err != nil {
		t.Fatal(err)
	}
	tr.fake.Respond(func(body []byte) llmtest.Turn {
		r := readSubRequest(t, body)
		if !strings.Contains(r.text, `"tool_use_id":"p`) {
			return shellTurn("p1", "den-agent send bob 'the report is ready' --compact; den-agent send nobody hi --compact; den-sessions send "+bobs.ID+" 'hello bob' --compact")
		}
		return answer("sent")
	})
	parent := tr.session(t)
	if o := sendAndWait(t, tr, parent.ID, "tell bob", TurnOptions{Approvals: permission.AutoApprove}); o.Err != nil {
		t.Fatal(o.Err)
	}
	hist := out(t, tr, parent.ID)
	if !strings.Contains(hist, `no agent \"nobody\"`) {
		t.Errorf("send to an unknown agent:\n%s", hist)
	}
	in, created, err := tr.st.Inbox(ctx, "bob", "")
	if err != nil || created {
		t.Fatalf("bob's inbox %+v %v %v", in, created, err)
	}
	q, _ := tr.st.QueuedMessages(ctx, in.ID)
	if len(q) != 1 || store.QueuedText(q[0]) != "[message from agent default, session "+parent.ID+"]\nthe report is ready" {
		t.Errorf("bob's inbox holds %+v", q)
	}
	q, _ = tr.st.QueuedMessages(ctx, bobs.ID)
	if len(q) != 1 || q[0].FromAgent != "default" || q[0].Text != "hello bob" {
		t.Errorf("bob's session holds %+v", q)
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestSubagentInAnotherAgentsComputer: --agent runs the sub-agent as a
// session of that agent, in its computer, told that its parent sees
// none of its files; its trust is the lower of the two agents'.
func TestSubagentInAnotherAgentsComputer(t *testing.T) {
	cfg := &config.Config{Agents: map[string]config.Agent{"bob": {Trust: "restricted"}}}
	tr := newTestRuntime(t, cfg)
	var prompt string
	var mu sync.Mutex
	tr.fake.Respond(func(body []byte) llmtest.Turn {
		mu.Lock()
		prompt = string(body)
		mu.Unlock()
		return answer("bob's hostname checked")
	})
	ctx := context.Background()
	parent := tr.session(t)
	sa, err := tr.RunSubagent(ctx, parent.ID, SpawnOptions{Task: "check the hostname", Agent: "bob"})
	if err != nil || sa.Agent != "bob" || sa.Parent != parent.ID || sa.Answer != "bob's hostname checked" {
		t.Fatalf("sub-agent %+v %v", sa, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(prompt, "You run in agent bob's computer for a session of agent default") {
		t.Errorf("the sub-agent is not told where it runs")
	}
	su, _ := tr.setupOf(ctx, sa.Session)
	if su.trust != permission.Restricted {
		t.Errorf("trust %s, want bob's restricted", su.trust)
	}
}
