package session

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/egress"
	"den.dev/den/internal/egress/egresstest"
	"den.dev/den/internal/event"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/sandbox/sandboxtest"
	"den.dev/den/internal/secret"
)

// TestSecretNowhere: a command that uses a secret's placeholder reaches
// the bound host with the value, and the value is in none of what den
// keeps of the session: the transcript, the events (den's database
// files, read whole), the command's result.
func TestSecretNowhere(t *testing.T) {
	const value = "tok_SessionSecretValue_6a0f93"
	// An HTTPS API on the host's loopback, with the test's own CA, that
	// echoes the Authorization it got.
	upstream := egresstest.NewCA(t)
	cert := upstream.Leaf(t, "api.example")
	var mu sync.Mutex
	var got []string
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		fmt.Fprintf(w, "echo %s\n", r.Header.Get("Authorization"))
	}), TLSConfig: &tls.Config{Certificates: []tls.Certificate{*cert}}}
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })
	pool := upstream.Pool

	probe := filepath.Join(t.TempDir(), "probe")
	build := exec.Command("go", "build", "-o", probe, "../egress/testdata/probe")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the probe: %v: %s", err, out)
	}
	cmd := `/workspace/probe https https://api.example/user /usr/local/share/ca-certificates/den-egress.crt "Authorization: Bearer $API_TOKEN"; echo "var=$API_TOKEN"`
	var once sync.Once
	tr := newTestRuntimeWith(t, &config.Config{}, func(o *Options) {
		withNetwork(o)
		open, dir := o.Computer, o.DataDir
		o.Computer = func(ctx context.Context, agent string) (*computer.Computer, computer.SessionOptions, error) {
			c, so, err := open(ctx, agent)
			if err == nil {
				once.Do(func() {
					m := c.Manager()
					m.Egress = egress.New(egress.Options{Hosts: map[string]string{"api.example:443": l.Addr().String()}, RootCAs: pool})
					m.Secrets = secret.Open(dir)
					if err := m.Secrets.Set(secret.Secret{Name: "API_TOKEN", Value: value, Hosts: []string{"api.example"}}); err != nil {
						t.Error(err)
					}
				})
			}
			return c, so, err
		}
	},
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute", Input: fmt.Sprintf(`{"command":%q}`, cmd)}}},
		llmtest.Turn{Text: "Called the API."})
	s := tr.session(t)
	ws := filepath.Join(tr.dir, "agents", "default", "sessions", s.ID, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(probe)
	if err := os.WriteFile(filepath.Join(ws, "probe"), data, 0o755); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Own(t, ws, filepath.Join(ws, "probe"))
	sub := tr.Subscribe(s.ID, 0, nil)
	defer sub.Close()
	sent, err := tr.Send(context.Background(), s.ID, Message{Text: "call the API"}, TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, sub, "status", event.Idle)
	<-sent.Done
	var out string
	for _, e := range evs {
		if e.Type == "tool_result" {
			out = field(e, "output")
		}
	}
	mu.Lock()
	auth := append([]string(nil), got...)
	mu.Unlock()
	if len(auth) != 1 || auth[0] != "Bearer "+value {
		t.Fatalf("the API got %q; the command said:\n%s", auth, out)
	}
	if !strings.Contains(out, "var=den-secret:API_TOKEN") || !strings.Contains(out, "echo Bearer "+strings.Repeat("*", len(value))) {
		t.Errorf("the command's result:\n%s", out)
	}
	tr.Sync()
	for _, e := range evs {
		if strings.Contains(string(e.Data), value) {
			t.Errorf("the value is in a %s event", e.Type)
		}
	}
	files, _ := filepath.Glob(filepath.Join(tr.dir, "den.db*"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil && bytes.Contains(b, []byte(value)) {
			t.Errorf("the value is in den's database file %s (the transcript, the events)", filepath.Base(f))
		}
	}
}
