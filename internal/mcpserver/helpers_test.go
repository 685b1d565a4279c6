package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"den.dev/den/internal/config"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/session/sessiontest"
)

// harness is den's MCP server on a real runtime (a fresh data dir,
// busybox computers under the real sandbox, a fake model), reached by
// the official SDK's client over an in-memory transport.
type harness struct {
	env  *sessiontest.Env
	srv  *Server
	fake *llmtest.Server
	told chan *permission.ApprovalRequest // approvals the server told of
}

// newHarness starts a server on cfg (nil: an empty config) whose model
// answers with turns.
func newHarness(t *testing.T, cfg *config.Config, o Options, turns ...llmtest.Turn) *harness {
	t.Helper()
	fake := llmtest.NewAnthropic(t, turns...)
	t.Setenv("ANTHROPIC_API_KEY", "sk-test")
	t.Setenv("ANTHROPIC_BASE_URL", fake.URL)
	h := &harness{env: sessiontest.New(t, cfg), fake: fake, told: make(chan *permission.ApprovalRequest, 10)}
	o.Runtime = h.env.RT
	o.Told = func(r *permission.ApprovalRequest) { h.told <- r }
	h.srv = New(o)
	return h
}

// client is one client of the harness's server.
type client struct {
	*mcp.ClientSession
	mu       sync.Mutex
	progress []string // the messages of every progress notification
}

// connect connects a client called name.
func (h *harness) connect(t *testing.T, name string) *client {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.srv.Run(ctx, st) }()
	c := &client{}
	cl := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.progress = append(c.progress, r.Params.Message)
		},
	})
	cs, err := cl.Connect(ctx, ct, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	c.ClientSession = cs
	t.Cleanup(func() {
		cs.Close()
		cancel()
		select {
		case <-served:
		case <-time.After(30 * time.Second):
			t.Error("the server still serves 30s after its client left: a call of it still runs")
		}
	})
	return c
}

// call calls a tool with args and a progress token, and returns its
// result (a protocol error fails the test).
func (c *client) call(t *testing.T, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return c.callCtx(ctx, t, tool, args)
}

func (c *client) callCtx(ctx context.Context, t *testing.T, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	p := &mcp.CallToolParams{Name: tool, Arguments: args}
	p.SetProgressToken("tok-" + tool)
	res, err := c.CallTool(ctx, p)
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	return res
}

// async calls a tool in a goroutine of its own (which must not fail the
// test) and sends its result, or a protocol error as an error result.
func (c *client) async(tool string, args map[string]any) <-chan *mcp.CallToolResult {
	out := make(chan *mcp.CallToolResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
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

// decode decodes a result that must not be an error into out.
func decode(t *testing.T, res *mcp.CallToolResult, out any) {
	t.Helper()
	if res.IsError {
		t.Fatalf("error result: %s", text(res))
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("structured output %s: %v", b, err)
	}
}

// ok calls a tool that must succeed and decodes its structured output
// into out.
func (c *client) ok(t *testing.T, tool string, args map[string]any, out any) {
	t.Helper()
	res := c.call(t, tool, args)
	if res.IsError {
		t.Fatalf("%s %v: error result: %s", tool, args, text(res))
	}
	decode(t, res, out)
}

// fails calls a tool that must fail, and returns its error's text.
func (c *client) fails(t *testing.T, tool string, args map[string]any) string {
	t.Helper()
	res := c.call(t, tool, args)
	if !res.IsError {
		t.Fatalf("%s %v: want an error result, got %s", tool, args, text(res))
	}
	return text(res)
}

// text is a result's text content.
func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// progressed is every progress message the client got so far.
func (c *client) progressed() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.progress...)
}

// allowExec is a config letting every client exec without asking.
func allowExec() *config.Config {
	return &config.Config{MCPClients: map[string]config.MCPClient{"*": {Allow: []string{"exec"}}}}
}
