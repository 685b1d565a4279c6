package browser

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/egress"
	"den.dev/den/internal/egress/egresstest"
	"den.dev/den/internal/sandbox/bwrap"
	"den.dev/den/internal/sandbox/rootfs"
	"den.dev/den/internal/secret"
)

// TestBoundHost: a page of a host a secret is bound to loads in the
// agent's browser, whose TLS den ends with the computer's own CA
// (Options.TrustSPKI), and the page's requests carry the secret.
func TestBoundHost(t *testing.T) {
	needBrowser(t)
	// A server on the host's loopback with a certificate of the test's
	// own CA, which den is told to trust for the hosts it speaks TLS to.
	upstream := egresstest.NewCA(t)
	cert := upstream.Leaf(t, "bound.example")
	var mu sync.Mutex
	var auth []string
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		fmt.Fprint(w, "<!doctype html><title>Bound page</title><p>bound page body</p>")
	}), TLSConfig: &tls.Config{Certificates: []tls.Certificate{*cert}}}
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })
	pool := upstream.Pool

	b, err := bwrap.New("")
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	m, err := computer.New(data, b)
	if err != nil {
		t.Fatal(err)
	}
	m.Egress = egress.New(egress.Options{Hosts: map[string]string{"bound.example:443": l.Addr().String()}, RootCAs: pool})
	m.Secrets = secret.Open(data)
	const value = "browser-secret-value-4e1d"
	if err := m.Secrets.Set(secret.Secret{Name: "API", Value: value, Hosts: []string{"bound.example"}}); err != nil {
		t.Fatal(err)
	}
	c, err := m.Computer("alice")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ensure(context.Background(), rootfs.Source{Kind: rootfs.Busybox}, true); err != nil {
		t.Fatal(err)
	}
	cs, err := c.Start(context.Background(), "s1", computer.SessionOptions{Network: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	ca, err := computer.EgressCA(data, "alice")
	if err != nil {
		t.Fatal(err)
	}
	br, err := New(Options{Dir: c.AgentDir("browser"), TrustSPKI: []string{ca.SPKIHash()}, Log: func(s string) { t.Log(s) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { br.Close() })
	dir := c.SessionDir("s1")
	s, err := br.Session("s1", Env{Computer: cs.Process(), Workspace: filepath.Join(dir, "workspace"), Files: filepath.Join(dir, "browser")})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Do(context.Background(), Action{Name: "navigate", URL: "https://bound.example/"})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || !strings.Contains(r.Text(), "bound page body") {
		t.Fatalf("the bound host's page: %s: %s", r.Code, r.Text())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auth) == 0 || auth[0] != "Bearer "+value {
		t.Errorf("the server got Authorization %q", auth)
	}
	if strings.Contains(r.Text(), value) {
		t.Errorf("the value reached the page")
	}
}
