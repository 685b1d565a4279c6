package clitest

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"den.dev/den/internal/llm/llmtest"
)

// mcpClient is the official SDK's client connected to a den, with the
// progress notifications it got.
type mcpClient struct {
	*mcp.ClientSession
	mu       sync.Mutex
	progress []string
}

// newMCPClient makes a client called name; connect it with connect.
func newMCPClient(name string) (*mcp.Client, *mcpClient) {
	c := &mcpClient{}
	cl := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.progress = append(c.progress, strings.TrimSpace(r.Params.Message))
		},
	})
	return cl, c
}

// async calls a tool in a goroutine of its own and sends its result (a
// protocol error as an error result).
func (c *mcpClient) async(tool string, args map[string]any) <-chan *mcp.CallToolResult {
	out := make(chan *mcp.CallToolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), RunBound)
		defer cancel()
		p := &mcp.CallToolParams{Name: tool, Arguments: args}
		p.SetProgressToken("tok-" + tool)
		res, err := c.CallTool(ctx, p)
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "protocol error: " + err.Error()}}}
		}
		out <- res
	}()
	return out
}

// call calls a tool and returns its result.
func (c *mcpClient) call(tool string, args map[string]any) *mcp.CallToolResult {
	return <-c.async(tool, args)
}

// ok calls a tool that must succeed and decodes its output into out.
func (c *mcpClient) ok(t *testing.T, tool string, args map[string]any, out any) {
	t.Helper()
	decodeResult(t, tool, c.call(tool, args), out)
}

func decodeResult(t *testing.T, tool string, res *mcp.CallToolResult, out any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("%s: error result: %s", tool, resultText(res))
	}
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: output %s: %v", tool, b, err)
	}
}

func resultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// waitProgress waits until every message of want came as progress.
func (c *mcpClient) waitProgress(t *testing.T, want ...string) {
	t.Helper()
	for range MaxPolls {
		c.mu.Lock()
		got := slices.Clone(c.progress)
		c.mu.Unlock()
		missing := false
		for _, w := range want {
			missing = missing || !slices.Contains(got, w)
		}
		if !missing {
			return
		}
		time.Sleep(PollInterval)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	t.Fatalf("progress %q, want %q among it", c.progress, want)
}

// mcpModel is a fake model whose first turn runs a command that leaves
// a file, and whose second answers.
func mcpModel(t *testing.T) *llmtest.Server {
	return llmtest.NewAnthropic(t,
		llmtest.Turn{Text: "Writing it.\n", Calls: []llmtest.Call{sh("toolu_1", "echo from-agent > agent.txt")}},
		llmtest.Turn{Text: "Done: agent.txt holds from-agent."})
}

var approveHint = regexp.MustCompile(`den approve (\S+)`)

// TestMCPServeStdio: another agent starts den mcp serve and uses den's
// computer through it, with the official SDK's client over stdin and
// stdout: its tools, the files of a session's /workspace (a link the
// computer planted refused), exec asking the user (answered with den
// approve and den deny from another terminal), run with progress, and
// den audit naming the client.
func TestMCPServeStdio(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "")
	fake := mcpModel(t)
	cmd := d.Command("mcp", "serve")
	cmd.Env = append(cmd.Env, "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL="+fake.URL)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), RunBound)
	defer cancel()
	cl, c := newMCPClient("clitest")
	cs, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	c.ClientSession = cs
	defer func() {
		cs.Close()
		if cmd.ProcessState == nil || !cmd.ProcessState.Exited() {
			t.Errorf("den mcp serve did not exit when its client left")
		}
	}()
	if got := cs.InitializeResult().ServerInfo.Name; got != "den" {
		t.Errorf("server %q", got)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 7 {
		t.Fatalf("tools: %v %v", tools, err)
	}

	var w struct{ Session, Path string }
	c.ok(t, "write_file", map[string]any{"path": "notes/in.txt", "content": "from the client\n"}, &w)
	var r struct{ Content string }
	c.ok(t, "read_file", map[string]any{"path": "notes/in.txt"}, &r)
	if r.Content != "from the client\n" || w.Path != "/workspace/notes/in.txt" {
		t.Errorf("write_file %+v, read_file %q", w, r.Content)
	}
	var l struct{ Entries []struct{ Name, Type string } }
	c.ok(t, "list_files", map[string]any{"path": "notes"}, &l)
	if len(l.Entries) != 1 || l.Entries[0].Name != "in.txt" || l.Entries[0].Type != "file" {
		t.Errorf("list_files notes: %+v", l)
	}

	// exec asks; den approve from another terminal lets it run, in the
	// busybox computer, beside the client's file; with --scope session
	// the session's next commands run unasked.
	answered := map[string]bool{}
	answer := func(verb string, args ...string) {
		t.Helper()
		for range MaxPolls {
			for _, m := range approveHint.FindAllStringSubmatch(stderr.String(), -1) {
				if id := m[1]; !answered[id] {
					answered[id] = true
					d.MustRun(append([]string{verb, id}, args...)...)
					return
				}
			}
			time.Sleep(PollInterval)
		}
		t.Fatalf("den mcp serve told of no new approval:\n%s", stderr)
	}
	pending := c.async("exec", map[string]any{"command": "cat notes/in.txt; busybox | head -1 | cut -d' ' -f1; ln -s /etc/passwd /workspace/pw"})
	answer("approve", "--scope", "session")
	var e struct {
		ExitCode int `json:"exit_code"`
		Output   string
	}
	decodeResult(t, "exec", <-pending, &e)
	if e.ExitCode != 0 || e.Output != "from the client\nBusyBox\n" {
		t.Errorf("exec: %+v", e)
	}
	c.ok(t, "exec", map[string]any{"command": "echo unasked"}, &e)
	if e.Output != "unasked\n" {
		t.Errorf("exec in the session approved for: %+v", e)
	}
	// The link the command planted leads to the host's /etc/passwd if
	// followed: it is not.
	if res := c.call("read_file", map[string]any{"path": "pw"}); !res.IsError || !strings.Contains(resultText(res), "/workspace/pw is a symbolic link") {
		t.Errorf("read_file through a planted link: %s", resultText(res))
	}
	// Another session asks again, and den deny refuses it.
	pending = c.async("exec", map[string]any{"command": "echo no > no.txt", "session": "elsewhere"})
	answer("deny")
	if res := <-pending; !res.IsError || !strings.Contains(resultText(res), "exec was denied: the user said no") {
		t.Errorf("exec denied: %s", resultText(res))
	}

	var run struct{ Session, Answer string }
	c.ok(t, "run", map[string]any{"prompt": "write agent.txt"}, &run)
	if run.Answer != "Done: agent.txt holds from-agent." || run.Session != w.Session {
		t.Errorf("run: %+v (want the client's session %s)", run, w.Session)
	}
	c.waitProgress(t, "→ shell_execute echo from-agent > agent.txt", "← shell_execute (exit 0)", "Writing it.")
	c.ok(t, "read_file", map[string]any{"path": "agent.txt"}, &r)
	if r.Content != "from-agent\n" {
		t.Errorf("the agent's file: %q", r.Content)
	}

	audit := d.MustRun("audit", "--command", "mcp-client")
	for _, want := range []string{"mcp-client clitest exec", "mcp-client clitest write_file", "mcp-client clitest run"} {
		if !strings.Contains(audit.Stdout, want) {
			t.Errorf("den audit does not show %q:\n%s", want, audit.Stdout)
		}
	}
}

// TestMCPServeHTTP: den serve's /mcp with the streamable HTTP transport
// and the token: exec asks, the approval comes on den serve's event
// stream and is answered through its API; a denied one says so; run
// sends progress; a client not allowed the agent is refused; without
// the token, 401.
func TestMCPServeHTTP(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "\n[mcp_clients.stranger]\nagents = [\"nobody\"]\n")
	p := startServe(t, d, mcpModel(t))
	ctx, cancel := context.WithTimeout(context.Background(), RunBound)
	defer cancel()
	withToken := &http.Client{Transport: bearerTransport{serveToken}}
	cl, c := newMCPClient("clitest-http")
	cs, err := cl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", HTTPClient: withToken, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, p.stderr)
	}
	c.ClientSession = cs
	defer cs.Close()

	var w struct{ Session, Path string }
	c.ok(t, "write_file", map[string]any{"path": "http/in.txt", "content": "over http\n"}, &w)
	var r struct{ Content string }
	c.ok(t, "read_file", map[string]any{"path": "den://workspace/http/in.txt"}, &r)
	if r.Content != "over http\n" {
		t.Errorf("read_file over HTTP: %q", r.Content)
	}
	var l struct{ Entries []struct{ Name string } }
	c.ok(t, "list_files", map[string]any{"path": "http"}, &l)
	if len(l.Entries) != 1 || l.Entries[0].Name != "in.txt" {
		t.Errorf("list_files over HTTP: %+v", l)
	}

	events, stop := p.stream(t, "/api/v1/events", "")
	defer stop()
	approval := func() string {
		t.Helper()
		got := until(t, events, "approval_request", "")
		req := got[len(got)-1].Data
		if req["command"] != "mcp-client" || req["action"] != "exec" || req["subject"] != "clitest-http" || req["session_id"] == "" ||
			!strings.HasPrefix(req["question"].(string), "MCP client clitest-http wants, with agent default: exec") {
			t.Errorf("approval request %v", req)
		}
		return req["id"].(string)
	}
	pending := c.async("exec", map[string]any{"command": "echo over-http; uname -n"})
	p.api(t, "POST", "/api/v1/approvals/"+approval(), map[string]any{"decision": "allow"}, http.StatusOK)
	var e struct {
		ExitCode int `json:"exit_code"`
		Output   string
	}
	decodeResult(t, "exec", <-pending, &e)
	if e.ExitCode != 0 || e.Output != "over-http\nden\n" {
		t.Errorf("exec over HTTP: %+v", e)
	}
	pending = c.async("exec", map[string]any{"command": "echo never"})
	p.api(t, "POST", "/api/v1/approvals/"+approval(), map[string]any{"decision": "deny"}, http.StatusOK)
	if res := <-pending; !res.IsError || !strings.Contains(resultText(res), "exec was denied: the user said no") {
		t.Errorf("exec denied over HTTP: %s", resultText(res))
	}

	var run struct{ Session, Answer string }
	c.ok(t, "run", map[string]any{"prompt": "write agent.txt", "session": "over-http"}, &run)
	if run.Answer != "Done: agent.txt holds from-agent." {
		t.Errorf("run over HTTP: %+v", run)
	}
	c.waitProgress(t, "→ shell_execute echo from-agent > agent.txt", "Done: agent.txt holds from-agent.")
	sess := p.api(t, "GET", "/api/v1/sessions/"+run.Session, nil, http.StatusOK)
	if sess["title"] != "over-http" {
		t.Errorf("the run's session, as den serve shows it: %v", sess["title"])
	}

	scl, sc := newMCPClient("stranger")
	scs, err := scl.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", HTTPClient: withToken, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer scs.Close()
	sc.ClientSession = scs
	if res := sc.call("list_files", map[string]any{}); !res.IsError || !strings.Contains(resultText(res), `does not let MCP client "stranger" use agent default`) {
		t.Errorf("a client not allowed the agent: %s", resultText(res))
	}

	_, err = mcp.NewClient(&mcp.Implementation{Name: "no-token"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: p.url + "/mcp", MaxRetries: -1}, nil)
	if err == nil || !strings.Contains(err.Error(), "Unauthorized") {
		t.Errorf("without the token: %v", err)
	}
}

// bearerTransport sends den's token with every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// BenchmarkMCPServeReady measures den mcp serve from the start of its
// process to the answer of the client's initialize (the SDK's Connect:
// initialize and initialized), on a data dir with no computer.
func BenchmarkMCPServeReady(b *testing.B) {
	d := New(b, denBin)
	ctx := context.Background()
	for b.Loop() {
		cmd := d.Command("mcp", "serve")
		cmd.Stderr = os.Stderr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cs.Close()
		b.StartTimer()
	}
}

// TestMCPServeStops: a client that leaves (closes den's standard
// input) in the middle of a run, and a den mcp serve told to stop
// (SIGTERM) in the middle of an exec, both end what runs in the
// computer, and den exits.
func TestMCPServeStops(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "\n[mcp_clients.\"*\"]\nallow = [\"exec\"]\n")
	leaveArg, termArg := uniqueSleep(t, 601), uniqueSleep(t, 602)
	fake := llmtest.NewAnthropic(t, llmtest.Turn{Calls: []llmtest.Call{sh("toolu_1", "sleep "+leaveArg)}}, llmtest.Turn{Text: "unreachable"})
	// The client leaves while den's agent runs a command: the turn is
	// canceled, the command ends, den exits.
	killOnCleanup(t, "sleep", leaveArg)
	cmd := d.Command("mcp", "serve")
	cmd.Env = append(cmd.Env, "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL="+fake.URL)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"leaver","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"run","arguments":{"prompt":"sleep"}}}
`)
	if pids := WaitProcs(1, "sleep", leaveArg); len(pids) != 1 {
		t.Fatalf("the agent's command did not start: %v", pids)
	}
	stdin.Close()
	waitDen(t, cmd)
	if left := WaitNoProcs("sleep", leaveArg); len(left) > 0 {
		t.Errorf("the agent's command still runs after the client left: %v", left)
	}

	// SIGTERM while an exec runs: the command ends, den exits 130.
	killOnCleanup(t, "sleep", termArg)
	cmd = d.Command("mcp", "serve")
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	cl, c := newMCPClient("stopper")
	cs, err := cl.Connect(context.Background(), &mcp.CommandTransport{Command: cmd, TerminateDuration: RunBound}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.ClientSession = cs
	pending := c.async("exec", map[string]any{"command": "sleep " + termArg})
	if pids := WaitProcs(1, "sleep", termArg); len(pids) != 1 {
		t.Fatalf("the command did not start: %v\n%s", pids, stderr)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if left := WaitNoProcs("sleep", termArg); len(left) > 0 {
		t.Errorf("the command still runs after SIGTERM: %v", left)
	}
	if res := <-pending; !res.IsError {
		t.Errorf("exec of a stopped den: %s", resultText(res))
	}
	cs.Close()
	if code := cmd.ProcessState.ExitCode(); code != 130 {
		t.Errorf("den mcp serve stopped by SIGTERM exits %d, want 130\n%s", code, stderr)
	}
}

// TestMCPServeFlags: --allow-tools offers only the tools it names,
// --client names the client in den's audit log whatever it calls
// itself, and bad values are usage errors.
func TestMCPServeFlags(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "")
	cmd := d.Command("mcp", "serve", "--allow-tools", "list_files,sessions_list", "--client", "named-by-flag")
	ctx, cancel := context.WithTimeout(context.Background(), RunBound)
	defer cancel()
	cl, c := newMCPClient("calls-itself-something-else")
	cs, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.ClientSession = cs
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	if slices.Sort(names); !slices.Equal(names, []string{"list_files", "sessions_list"}) {
		t.Errorf("--allow-tools list_files,sessions_list offers %v", names)
	}
	var out struct{ Sessions []any }
	c.ok(t, "sessions_list", map[string]any{}, &out)
	cs.Close()
	if audit := d.MustRun("audit", "--command", "mcp-client"); !strings.Contains(audit.Stdout, "mcp-client named-by-flag sessions_list") {
		t.Errorf("den audit does not name the client as --client does:\n%s", audit.Stdout)
	}
	for _, tc := range []struct{ flag, value, want string }{
		{"--allow-tools", "exec,rm", `--allow-tools: no tool "rm"`},
		{"--client", "a\nb", "--client"},
		{"--agent", "../x", `agent "../x"`},
	} {
		if r := d.Run("mcp", "serve", tc.flag, tc.value); r.Code != 2 || !strings.Contains(r.Stderr, tc.want) {
			t.Errorf("den mcp serve %s %q: want exit 2 and %q, got %v", tc.flag, tc.value, tc.want, r)
		}
	}
}
