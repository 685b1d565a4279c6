package daemon

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"den.dev/den/internal/config"
)

// recorder is an HTTP client's transport that adds the token (unless
// told not to) and records each answer's method, status and type.
type recorder struct {
	token string
	mu    sync.Mutex
	seen  []string // "METHOD STATUS CONTENT-TYPE"
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		r.mu.Lock()
		r.seen = append(r.seen, req.Method+" "+resp.Status[:3]+" "+resp.Header.Get("Content-Type"))
		r.mu.Unlock()
	}
	return resp, err
}

func (r *recorder) saw(want string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.seen {
		if s == want {
			return true
		}
	}
	return false
}

// TestMCPBehindTheGuard: the SDK's streamable client reaches den's MCP
// server at /mcp through the auth guard with the token (its POSTs, its
// GET stream and its closing DELETE), and gets 401 without it.
func TestMCPBehindTheGuard(t *testing.T) {
	d := startDaemon(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec := &recorder{token: testToken}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "guard-test"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: d.url + "/mcp", HTTPClient: &http.Client{Transport: rec}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 7 {
		t.Fatalf("tools: %v %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sessions_list", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("sessions_list: %+v %v", res, err)
	}
	// A write_file of more than the guard's 1 MiB for JSON reaches the
	// tool (which fails here, without a model or computers).
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": "big.txt", "content": strings.Repeat("x", 3<<20)}})
	if err != nil {
		t.Errorf("a 3 MiB write_file did not reach the tool: %v", err)
	}
	// The client opens its stream for the server's own messages.
	for i := 0; !rec.saw("GET 200 text/event-stream"); i++ {
		if i == 400 {
			t.Fatalf("no GET stream: %v", rec.seen)
		}
		time.Sleep(25 * time.Millisecond)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if !rec.saw("DELETE 204 ") {
		t.Errorf("the session's DELETE did not get 204: %v", rec.seen)
	}

	anon := &recorder{}
	_, err = mcp.NewClient(&mcp.Implementation{Name: "no-token"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: d.url + "/mcp", HTTPClient: &http.Client{Transport: anon}, MaxRetries: -1}, nil)
	if err == nil || !anon.saw("POST 401 application/json") {
		t.Errorf("without the token: %v, %v", err, anon.seen)
	}
	for _, method := range []string{"GET", "DELETE"} {
		if resp, body := d.do(t, method, "/mcp", "", nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s /mcp without the token: %d %s", method, resp.StatusCode, body)
		}
	}
}

// TestMCPThroughAProxy: a request for one of server.allowed_hosts that
// arrives on loopback (tailscale serve, a reverse proxy on this
// machine) reaches the MCP server: den's guard checks the Host, and
// the SDK's own loopback check, which would refuse it, is off.
func TestMCPThroughAProxy(t *testing.T) {
	cfg := &config.Config{Server: config.Server{AllowedHosts: []string{"den.example.org"}}}
	d := startDaemonConfig(t, cfg, func(k string) string {
		if k == "DEN_TOKEN" {
			return testToken
		}
		return ""
	})
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"proxied","version":"1"}}}`
	resp, body := d.do(t, "POST", "/mcp", init, func(r *http.Request) {
		r.Host = "den.example.org"
		r.Header.Set("Authorization", "Bearer "+testToken)
		r.Header.Set("Accept", "application/json, text/event-stream")
	})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"serverInfo"`) {
		t.Errorf("initialize through a proxy: %d %s", resp.StatusCode, body)
	}
	resp, _ = d.do(t, "POST", "/mcp", init, func(r *http.Request) {
		r.Host = "elsewhere.example.org"
		r.Header.Set("Authorization", "Bearer "+testToken)
		r.Header.Set("Accept", "application/json, text/event-stream")
	})
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("a host den does not answer for: %d, want 421", resp.StatusCode)
	}
}
