package mcpclient

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/bwrap"
	"den.dev/den/internal/sandbox/rootfs"
	"den.dev/den/internal/sandbox/sandboxtest"
	"den.dev/den/internal/store"
	"den.dev/den/internal/tool"
)

var (
	serverOnce sync.Once
	serverBin  string
	serverErr  error
	serverOut  []byte
)

// testServer is testdata/mcpserver, built once per test binary, static
// (it runs in a busybox computer too).
func testServer(t testing.TB) string {
	t.Helper()
	serverOnce.Do(func() {
		dir, err := os.MkdirTemp("", "den-mcpclient-test-")
		if err != nil {
			serverErr = err
			return
		}
		serverBin = filepath.Join(dir, "mcpserver")
		cmd := exec.Command("go", "build", "-o", serverBin, "./testdata/mcpserver")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		serverOut, serverErr = cmd.CombinedOutput()
	})
	if serverErr != nil {
		t.Fatalf("build testdata/mcpserver: %v\n%s", serverErr, serverOut)
	}
	return serverBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if serverBin != "" {
		os.RemoveAll(filepath.Dir(serverBin))
	}
	os.Exit(code)
}

// box is a busybox computer with the test server installed at
// /usr/local/bin/den-test-mcp, and one session of it running.
type box struct {
	comp  *computer.Computer
	sess  *computer.Session
	start StartFunc
	env   *tool.Env
	data  string
}

func newBox(t testing.TB) *box {
	t.Helper()
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	data := t.TempDir()
	b, err := bwrap.New("")
	if err != nil {
		t.Fatal(err)
	}
	m, err := computer.New(data, b)
	if err != nil {
		t.Fatal(err)
	}
	comp, err := m.Computer("a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := comp.Ensure(context.Background(), rootfs.Source{Kind: rootfs.Busybox}, true); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(testServer(t))
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(comp.Rootfs(), "usr", "local", "bin", "den-test-mcp")
	os.MkdirAll(filepath.Dir(dst), 0o755)
	if err := os.WriteFile(dst, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	o := computer.SessionOptions{}
	sess, err := comp.Start(context.Background(), "s1", o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	start := func(ctx context.Context, _ *Server, cmd *sandbox.Cmd) (sandbox.Process, func(), error) {
		c := *cmd
		c.Env = append(computer.BaseEnv("s1"), cmd.Env...)
		return comp.StartRaw(ctx, "s1", o, &c)
	}
	return &box{comp: comp, sess: sess, start: start, env: &tool.Env{Computer: sess, Images: true, Session: "s1"}, data: data}
}

// attachments is the host side of the session's /den/attachments.
func (b *box) attachments() string { return filepath.Join(b.comp.SessionDir("s1"), "attachments") }

// gate is a permission gate on a store of the test's own.
type gate struct {
	*permission.Gate
	st *store.Store
	mu sync.Mutex
	// answer answers approvals; nil denies them (nobody to ask).
	answer func(*permission.ApprovalRequest) permission.Answer
	asked  []string // subjects asked about
}

func newGate(t testing.TB, p permission.Policy) *gate {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "den.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	g := &gate{st: st}
	g.Gate = permission.New(st, "a", p, permission.Options{Timeout: 30 * time.Second, Prompt: func(ctx context.Context, r *permission.ApprovalRequest) (permission.Answer, error) {
		g.mu.Lock()
		g.asked = append(g.asked, r.Subject)
		answer := g.answer
		g.mu.Unlock()
		if answer == nil {
			return permission.Answer{Approve: false}, nil
		}
		return answer(r), nil
	}})
	return g
}

func (g *gate) askedAbout() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.asked...)
}

// audit is the audit log, oldest first, as "decision by subject-args".
func (g *gate) audit(t testing.TB) []store.AuditEntry {
	t.Helper()
	rows, err := g.st.ListAudit(context.Background(), store.AuditFilter{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
		rows[i], rows[j] = rows[j], rows[i]
	}
	return rows
}

// server is a stdio server running the test server in mode.
func server(name string, host bool, bin string, mode ...string) *Server {
	return &Server{Name: name, Type: Stdio, Command: bin, Args: mode, Host: host, Enabled: true}
}

// registry is the offer's tools as the session's registry has them.
func registry(t testing.TB, o Offer) *tool.Registry {
	t.Helper()
	reg, err := tool.NewRegistry(o.Tools...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// call calls a tool through reg, as the loop does.
func call(t testing.TB, reg *tool.Registry, env *tool.Env, name, input string) llm.ToolResult {
	t.Helper()
	res, err := reg.Call(context.Background(), env, llm.ToolCall{ID: "c1", Name: name, Input: json.RawMessage(input)}, false)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

func text(r llm.ToolResult) string {
	var b strings.Builder
	for _, p := range r.Content {
		if t, ok := p.(*llm.Text); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// listen starts the test server on loopback in mode (http or sse) and
// returns its URL.
func listen(t testing.TB, mode string) string {
	t.Helper()
	cmd := exec.Command(testServer(t), mode, "127.0.0.1:0")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the %s server did not say where it listens: %v", mode, err)
	}
	return strings.TrimSpace(line)
}
