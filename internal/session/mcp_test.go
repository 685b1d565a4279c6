package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/store"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if mcpServerBin != "" {
		os.RemoveAll(filepath.Dir(mcpServerBin))
	}
	os.Exit(code)
}

var (
	mcpServerOnce sync.Once
	mcpServerBin  string
	mcpServerErr  error
	mcpServerOut  []byte
)

// mcpTestServer is mcpclient's test MCP server, built static once per
// test binary (it runs in a busybox computer too).
func mcpTestServer(t testing.TB) string {
	t.Helper()
	mcpServerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "den-session-mcp-")
		if err != nil {
			mcpServerErr = err
			return
		}
		mcpServerBin = filepath.Join(dir, "mcpserver")
		cmd := exec.Command("go", "build", "-o", mcpServerBin, "../mcpclient/testdata/mcpserver")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		mcpServerOut, mcpServerErr = cmd.CombinedOutput()
	})
	if mcpServerErr != nil {
		t.Fatalf("build the test MCP server: %v\n%s", mcpServerErr, mcpServerOut)
	}
	return mcpServerBin
}

// mcpRuntime is a test runtime whose MCP servers' file holds servers
// (a JSON object of servers by name), whose agents' computers have the
// test server at /usr/local/bin/den-test-mcp, and whose approvals are
// answered by answer (nil: nobody answers, and asks wait).
func mcpRuntime(t *testing.T, cfg *config.Config, servers string, answer func(*permission.ApprovalRequest) permission.Answer, turns ...llmtest.Turn) *testRuntime {
	t.Helper()
	return mcpRuntimeWith(t, cfg, servers, answer, nil, turns...)
}

// mcpRuntimeWith is mcpRuntime with the options changed by tune (nil:
// none) before the runtime starts.
func mcpRuntimeWith(t *testing.T, cfg *config.Config, servers string, answer func(*permission.ApprovalRequest) permission.Answer, tune func(*Options), turns ...llmtest.Turn) *testRuntime {
	t.Helper()
	bin := mcpTestServer(t)
	servers = strings.ReplaceAll(servers, "$SERVER", bin)
	return newTestRuntimeWith(t, cfg, func(o *Options) {
		if tune != nil {
			tune(o)
		}
		if err := os.WriteFile(o.MCP, []byte(`{"mcpServers": `+servers+`}`), 0o600); err != nil {
			t.Fatal(err)
		}
		open := o.Computer
		o.Computer = func(ctx context.Context, agent string) (*computer.Computer, computer.SessionOptions, error) {
			c, so, err := open(ctx, agent)
			if err != nil {
				return nil, so, err
			}
			data, err := os.ReadFile(bin)
			if err != nil {
				return nil, so, err
			}
			dst := filepath.Join(c.Rootfs(), "usr", "local", "bin", "den-test-mcp")
			os.MkdirAll(filepath.Dir(dst), 0o755)
			return c, so, os.WriteFile(dst, data, 0o755)
		}
		if answer != nil {
			o.Prompt = func(ctx context.Context, r *permission.ApprovalRequest) (permission.Answer, error) {
				return answer(r), nil
			}
		}
	}, turns...)
}

// lastUserText is the text of the last user message of an Anthropic
// request: what the model was just told (results, or the prompt).
func requestText(t *testing.T, body []byte) string {
	t.Helper()
	var r struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	return string(r.Messages[len(r.Messages)-1].Content)
}

// TestMCPToolsReachTheModel: the tools of the agent's MCP servers (one
// in its computer, one on the host) are in the model's request as
// mcp__SERVER__TOOL, the system prompt says what they are, the model's
// calls run, and their results — an image too — reach the model.
func TestMCPToolsReachTheModel(t *testing.T) {
	tr := mcpRuntime(t, nil, `{"box": {"command": "den-test-mcp"}, "host": {"command": "$SERVER", "host": true}}`, nil,
		llmtest.Turn{Calls: []llmtest.Call{
			{ID: "toolu_1", Name: "mcp__box__echo", Input: `{"text":"hello from the computer"}`},
			{ID: "toolu_2", Name: "mcp__host__echo", Input: `{"text":"hello from the host"}`},
			{ID: "toolu_3", Name: "mcp__box__image", Input: `{}`},
		}},
		llmtest.Turn{Text: "done"})
	s := tr.session(t)
	waitSent(t)(tr.Send(context.Background(), s.ID, Message{Text: "use your tools"}, TurnOptions{}))
	reqs := tr.fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	system, tools := readRequest(t, reqs[0].Body)
	names := strings.Join(tools, " ")
	for _, want := range []string{"shell_execute", "mcp__box__echo", "mcp__box__image", "mcp__host__echo", "mcp__host__write_note"} {
		if !strings.Contains(names, want) {
			t.Errorf("the request's tools lack %s: %s", want, names)
		}
	}
	for _, want := range []string{"# MCP servers", "- box (in the agent's computer): 10 tools", "- host (on the host, with your rights): 10 tools"} {
		if !strings.Contains(system, want) {
			t.Errorf("the system prompt lacks %q:\n%s", want, system)
		}
	}
	got := requestText(t, reqs[1].Body)
	for _, want := range []string{"echo: hello from the computer", "echo: hello from the host", `"type":"image"`, "den://attachments/mcp-box-image-"} {
		if !strings.Contains(got, want) {
			t.Errorf("the results the model got lack %q:\n%.2000s", want, got)
		}
	}
	// What the faces list: servers, state, tools with the gate's
	// decision, prompts.
	list, err := tr.MCP(context.Background(), s.ID)
	if err != nil || len(list) != 2 {
		t.Fatalf("MCP: %+v %v", list, err)
	}
	if b := list[1]; b.Name != "host" || !b.Host || len(b.Tools) != 10 || len(b.Prompts) != 1 || b.Prompts[0].Name != "greet" {
		t.Errorf("host: %+v", b)
	}
	for _, tl := range list[1].Tools {
		if want := map[bool]string{true: "allow", false: "ask"}[tl.ReadOnly]; tl.Decision != want {
			t.Errorf("host's %s (read-only %v): %s, want %s", tl.Name, tl.ReadOnly, tl.Decision, want)
		}
	}
}

// TestMCPGate: a call the gate asks about waits for the person's
// answer: approved, it runs; refused, the model is told and the turn
// goes on; both are audited as mcp calls.
func TestMCPGate(t *testing.T) {
	var mu sync.Mutex
	approve := true
	tr := mcpRuntime(t, nil, `{"h": {"command": "$SERVER", "host": true}}`,
		func(r *permission.ApprovalRequest) permission.Answer {
			mu.Lock()
			defer mu.Unlock()
			if r.Command != "mcp" || r.Subject != "h/write_note" || !strings.Contains(r.Detail, "on the host, with your rights") {
				t.Errorf("asked %+v", r)
			}
			a := permission.Answer{Approve: approve}
			approve = false
			return a
		},
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "mcp__h__write_note", Input: `{"text":"first"}`}}},
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_2", Name: "mcp__h__write_note", Input: `{"text":"second"}`}}},
		llmtest.Turn{Text: "done"})
	s := tr.session(t)
	waitSent(t)(tr.Send(context.Background(), s.ID, Message{Text: "take notes"}, TurnOptions{}))
	reqs := tr.fake.Requests()
	if got := requestText(t, reqs[1].Body); !strings.Contains(got, "noted: first") {
		t.Errorf("the approved call: %s", got)
	}
	if got := requestText(t, reqs[2].Body); !strings.Contains(got, "not run: mcp: the call was denied: write_note of h was denied (user)") || strings.Contains(got, "noted: second") {
		t.Errorf("the refused call: %s", got)
	}
	audit, err := tr.st.ListAudit(context.Background(), store.AuditFilter{Agent: "default"}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, e := range audit {
		rows = append(rows, fmt.Sprintf("%s %s %s %s/%s", e.Command, e.Action, strings.Join(e.Args, " "), e.Decision, e.DecidedBy))
	}
	want := `mcp call call h/write_note {"text":"second"} deny/user` + "\n" + `mcp call call h/write_note {"text":"first"} allow/user`
	if strings.Join(rows, "\n") != want {
		t.Errorf("audit:\n%s\nwant:\n%s", strings.Join(rows, "\n"), want)
	}
}

// TestMCPHostCommand: den-mcp in the computer lists the servers and
// calls a tool, decided and audited as the model's own call.
func TestMCPHostCommand(t *testing.T) {
	tr := mcpRuntime(t, nil, `{"t": {"command": "den-test-mcp"}}`, nil,
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute",
			Input: `{"command":"den-mcp list; den-mcp call t echo '{\"text\":\"from the shell\"}'; den-mcp read t test://hello; den-mcp call nope x; echo code=$?"}`}}},
		llmtest.Turn{Text: "done"})
	s := tr.session(t)
	waitSent(t)(tr.Send(context.Background(), s.ID, Message{Text: "use den-mcp"}, TurnOptions{}))
	got := requestText(t, tr.fake.Requests()[1].Body)
	for _, want := range []string{`\"name\": \"t\"`, `\"where\": \"computer\"`, `echo: from the shell`, `hello world`, `code=2`} {
		if !strings.Contains(got, want) {
			t.Errorf("den-mcp's output lacks %s:\n%s", want, got)
		}
	}
	audit, _ := tr.st.ListAudit(context.Background(), store.AuditFilter{Agent: "default"}, 0)
	var cmds []string
	for _, e := range audit {
		cmds = append(cmds, e.Command+" "+e.Action)
	}
	if got := strings.Join(cmds, ","); got != "den-mcp call,den-mcp read,den-mcp call,mcp call,den-mcp list" {
		t.Errorf("audit: %s", got)
	}
}

// TestMCPPrompt: "/SERVER:PROMPT args" sends that prompt's messages;
// a name of no server is sent as it is.
func TestMCPPrompt(t *testing.T) {
	tr := mcpRuntime(t, nil, `{"t": {"command": "den-test-mcp"}}`, nil,
		llmtest.Turn{Text: "hi Ada"}, llmtest.Turn{Text: "hi Bob"}, llmtest.Turn{Text: "?"})
	s := tr.session(t)
	ctx := context.Background()
	waitSent(t)(tr.Send(ctx, s.ID, Message{Text: "/t:greet name=Ada"}, TurnOptions{}))
	waitSent(t)(tr.Send(ctx, s.ID, Message{Text: "/t:greet Bob"}, TurnOptions{}))
	waitSent(t)(tr.Send(ctx, s.ID, Message{Text: "/nope:greet Bob"}, TurnOptions{}))
	if !tr.IsMCPPrompt("default", "/t:greet Bob") || tr.IsMCPPrompt("default", "/nope:greet Bob") || tr.IsMCPPrompt("default", "/t") {
		t.Error("IsMCPPrompt")
	}
	reqs := tr.fake.Requests()
	for i, want := range []string{"Please greet Ada warmly.", "Please greet Bob warmly.", "/nope:greet Bob"} {
		if got := requestText(t, reqs[i].Body); !strings.Contains(got, want) {
			t.Errorf("message %d: %s, want %q", i, got, want)
		}
	}
}

// TestMCPFailuresTurnGoesOn: a server that prints garbage is left out
// with a warning and a line in the system prompt; a server that crashes
// in a call gives the model an error result, and its next call starts
// it again: the turn goes on.
func TestMCPFailuresTurnGoesOn(t *testing.T) {
	tr := mcpRuntime(t, nil, `{"bad": {"command": "den-test-mcp", "args": ["garbage"], "startupTimeout": 2}, "ok": {"command": "den-test-mcp"}}`, nil,
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "mcp__ok__crash", Input: `{}`}}},
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_2", Name: "mcp__ok__echo", Input: `{"text":"again"}`}}},
		llmtest.Turn{Text: "done"})
	s := tr.session(t)
	sub := tr.Subscribe(s.ID, 0, nil)
	defer sub.Close()
	waitSent(t)(tr.Send(context.Background(), s.ID, Message{Text: "go"}, TurnOptions{}))
	reqs := tr.fake.Requests()
	if system, tools := readRequest(t, reqs[0].Body); !strings.Contains(system, "- bad is unavailable right now: mcp: the server is unavailable: bad did not answer within 2s") ||
		strings.Contains(strings.Join(tools, " "), "mcp__bad__") {
		t.Errorf("the garbage server: tools %v\n%s", tools, system)
	}
	if got := requestText(t, reqs[1].Body); !strings.Contains(got, "ok broke off (the server ended (exit status 3))") || !strings.Contains(got, `"is_error":true`) {
		t.Errorf("the crash: %s", got)
	}
	if got := requestText(t, reqs[2].Body); !strings.Contains(got, "echo: again") {
		t.Errorf("after the crash: %s", got)
	}
	warned := false
	for _, e := range collect(t, sub, "done", "") {
		warned = warned || (e.Type == "warning" && strings.Contains(string(e.Data), "MCP server bad is unavailable"))
	}
	if !warned {
		t.Error("no warning about the garbage server")
	}
}
