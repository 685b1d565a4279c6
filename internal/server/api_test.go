package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/session"
	"den.dev/den/internal/store"
)

// testAPI is a Server on a fresh store and config file, without the
// auth guard (internal/daemon's tests cover the guard in front of it).
type testAPI struct {
	t          *testing.T
	h          http.Handler
	st         *store.Store
	rt         *session.Runtime
	configPath string
}

// newAPI serves a config file holding configText; opt may change the
// Options.
func newAPI(t *testing.T, configText string, opt func(*Options)) *testAPI {
	t.Helper()
	dir := t.TempDir()
	a := &testAPI{t: t, configPath: filepath.Join(dir, "config.toml")}
	if configText != "" {
		if err := os.WriteFile(a.configPath, []byte(configText), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(a.configPath, false)
	if err != nil {
		t.Fatal(err)
	}
	if a.st, err = store.Open(filepath.Join(dir, "den.db")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.st.Close() })
	a.rt, err = session.New(session.Options{Store: a.st, DataDir: dir, Config: cfg, Holder: "test",
		Computer: func(context.Context, string) (*computer.Computer, computer.SessionOptions, error) {
			return nil, computer.SessionOptions{}, errors.New("no computers in this test")
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.rt.Close)
	o := Options{Runtime: a.rt, Store: a.st, ConfigPath: a.configPath, Reload: func() error {
		cfg, err := config.Load(a.configPath, false)
		if err != nil {
			return err
		}
		a.rt.SetConfig(cfg)
		return nil
	}}
	if opt != nil {
		opt(&o)
	}
	a.h = New(o).Handler()
	return a
}

// do sends a request (a JSON body when body is not "") and returns the
// response's status and body.
func (a *testAPI) do(method, target, body string) (int, string) {
	a.t.Helper()
	w := a.serve(method, target, body)
	return w.Code, w.Body.String()
}

func (a *testAPI) serve(method, target, body string) *httptest.ResponseRecorder {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, target, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	w := httptest.NewRecorder()
	a.h.ServeHTTP(w, req)
	return w
}

// call sends a request that must be answered with status, and decodes
// the answer into out (when not nil).
func (a *testAPI) call(method, target, body string, status int, out any) {
	a.t.Helper()
	code, got := a.do(method, target, body)
	if code != status {
		a.t.Fatalf("%s %s %s: %d %s, want %d", method, target, body, code, got, status)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(got), out); err != nil {
			a.t.Fatalf("%s %s: %v in %s", method, target, err, got)
		}
	}
}

// fails sends a request that must fail with status and the error code.
func (a *testAPI) fails(method, target, body string, status int, code string) string {
	a.t.Helper()
	got, resp := a.do(method, target, body)
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if err := json.Unmarshal([]byte(resp), &e); err != nil || got != status || e.Error.Code != code {
		a.t.Errorf("%s %s %.80s: %d %s, want %d %s", method, target, body, got, resp, status, code)
	}
	return e.Error.Message
}

func (a *testAPI) file() string {
	a.t.Helper()
	b, err := os.ReadFile(a.configPath)
	if err != nil {
		a.t.Fatal(err)
	}
	return string(b)
}

// TestMCPRoute: GET /api/v1/mcp lists a session's MCP servers (mcp.json
// beside the config file) without starting them; it needs a session
// that exists.
func TestMCPRoute(t *testing.T) {
	a := newAPI(t, "# mcp.json is beside me\n", nil)
	os.WriteFile(filepath.Join(filepath.Dir(a.configPath), "mcp.json"),
		[]byte(`{"mcpServers": {"files": {"command": "mcp-server-filesystem", "host": true}, "web": {"type": "http", "url": "http://127.0.0.1:1/mcp"}, "off": {"command": "x", "enabled": false}}}`), 0o600)
	ctx := context.Background()
	a.st.EnsureAgent(ctx, "default")
	sess, err := a.st.CreateSession(ctx, "default", "anthropic/claude-sonnet-5-5")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Session string
		Servers []struct {
			Name, Where, State string
			Host               bool
			Tools, Prompts     []any
		}
	}
	a.call("GET", "/api/v1/mcp?session="+sess.ID, "", http.StatusOK, &got)
	if got.Session != sess.ID || len(got.Servers) != 2 {
		t.Fatalf("%+v", got)
	}
	if s := got.Servers[0]; s.Name != "files" || s.Where != "host" || !s.Host || s.State != "idle" || s.Tools == nil || s.Prompts == nil {
		t.Errorf("files: %+v", s)
	}
	if s := got.Servers[1]; s.Name != "web" || s.Where != "http 127.0.0.1:1" || s.Host {
		t.Errorf("web: %+v", s)
	}
	// An agent's, for the settings: the same servers, no session.
	var agentGot struct {
		Agent   string
		Servers []struct{ Name, Where string }
	}
	a.call("GET", "/api/v1/mcp?agent=default", "", http.StatusOK, &agentGot)
	if agentGot.Agent != "default" || len(agentGot.Servers) != 2 || agentGot.Servers[0].Where != "host" {
		t.Errorf("the agent's servers: %+v", agentGot)
	}
	a.fails("GET", "/api/v1/mcp", "", http.StatusBadRequest, "bad_request")
	a.fails("GET", "/api/v1/mcp?agent=../x", "", http.StatusBadRequest, "bad_request")
	a.fails("GET", "/api/v1/mcp?session=nosuch", "", http.StatusNotFound, "not_found")
}
