package egress_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"den.dev/den/internal/egress"
	"den.dev/den/internal/egress/egresstest"
	"den.dev/den/internal/sandbox/sandboxtest"
	"den.dev/den/internal/secret"
)

// api is a fake HTTPS API on the host's loopback, with a certificate of
// the test's own CA (den is told to trust it for the hosts it speaks
// TLS to): it answers each request with what it received, the
// credentials included, as a server that echoes requests would.
type api struct {
	addr string
	mu   sync.Mutex
	seen []string // "host|authorization|query|x-echo" per request
}

func newAPI(t *testing.T, ca *egresstest.CA, names ...string) *api {
	t.Helper()
	a := &api{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a.addr = l.Addr().String()
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			line := strings.Join([]string{r.Host, r.Header.Get("Authorization"), r.URL.RawQuery, r.Header.Get("X-Echo")}, "|")
			a.mu.Lock()
			a.seen = append(a.seen, line)
			a.mu.Unlock()
			w.Header().Set("X-Seen-Authorization", r.Header.Get("Authorization"))
			fmt.Fprintf(w, "seen %s\n", line)
		}),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{*ca.Leaf(t, names...)}},
	}
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })
	return a
}

func (a *api) last() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.seen) == 0 {
		return ""
	}
	return a.seen[len(a.seen)-1]
}

// TestSecrets: the computer holds placeholders only; den puts each
// secret's value into requests to the hosts it is bound to, where the
// binding says (a header, basic auth, a query parameter), over TLS it
// ends with the computer's CA and verifies upstream. The value goes
// nowhere else: not to another host, not into a header the binding
// does not name, not back to the computer in an echo, not into den's
// records.
func TestSecrets(t *testing.T) {
	upstreamCA := egresstest.NewCA(t)
	srv := newAPI(t, upstreamCA, "api.example", "git.example", "q.example", "other.example")
	const (
		token = "ghp_TheRealTokenValue1234567890"
		pass  = "git-password-value-0987654321"
		key   = "query-key-value-5555"
	)
	secrets := []secret.Secret{
		{Name: "API_TOKEN", Value: token, Hosts: []string{"api.example"}, Header: "Authorization: Bearer {{value}}"},
		{Name: "GIT_TOKEN", Value: pass, Hosts: []string{"git.example"}, Basic: "x-access-token"},
		{Name: "Q_KEY", Value: key, Hosts: []string{"q.example"}, Query: "key"},
	}
	for i := range secrets {
		if err := secrets[i].Validate(); err != nil {
			t.Fatal(err)
		}
	}
	ca, err := egress.LoadCA(filepath.Join(t.TempDir(), "ca"), "den test computer")
	if err != nil {
		t.Fatal(err)
	}
	hosts := map[string]string{}
	for _, h := range []string{"api.example", "git.example", "q.example", "other.example"} {
		hosts[h+":443"] = srv.addr
	}
	p := egress.New(egress.Options{Hosts: hosts, RootCAs: upstreamCA.Pool})
	recs := &records{}
	pol, _ := egress.ParsePolicy("allowlist", []string{"api.example", "git.example", "q.example", "other.example"})
	b := startBox(t, p.Net(egress.Scope{Agent: "tester", Policy: pol, Record: recs.add, CA: ca,
		Secrets: func() []secret.Secret { return secrets }}))
	for name, pem := range map[string][]byte{"den-ca.pem": ca.PEM(), "upstream-ca.pem": upstreamCA.PEM} {
		f := filepath.Join(b.env.Workspace, name)
		if err := os.WriteFile(f, pem, 0o644); err != nil {
			t.Fatal(err)
		}
		sandboxtest.Own(t, f)
	}
	https := func(url string, headers ...string) string {
		return b.probe(t, append([]string{"https", quote(url), "/workspace/den-ca.pem"}, quoted(headers)...)...)
	}

	t.Run("header, placeholder", func(t *testing.T) {
		out := https("https://api.example/user", "Authorization: Bearer den-secret:API_TOKEN")
		if got := srv.last(); got != "api.example|Bearer "+token+"||" {
			t.Errorf("the API got %q", got)
		}
		if strings.Contains(out, token) || !strings.Contains(out, "Bearer "+strings.Repeat("*", len(token))) {
			t.Errorf("the echo reached the computer unmasked, or not at all: %s", out)
		}
		if rec := recs.wait(t, "api.example", 443); !rec.Secrets || !rec.Allowed || rec.In == 0 {
			t.Errorf("record: %+v", rec)
		}
	})
	t.Run("header, empty slot", func(t *testing.T) {
		https("https://api.example/none")
		if got := srv.last(); got != "api.example|Bearer "+token+"||" {
			t.Errorf("the API got %q", got)
		}
	})
	t.Run("header, own credentials kept", func(t *testing.T) {
		https("https://api.example/own", "Authorization: Bearer mine")
		if got := srv.last(); got != "api.example|Bearer mine||" {
			t.Errorf("the API got %q", got)
		}
	})
	t.Run("placeholder outside the slot", func(t *testing.T) {
		https("https://api.example/echo", "Authorization: Bearer den-secret:API_TOKEN", "X-Echo: den-secret:API_TOKEN")
		if got := srv.last(); !strings.HasSuffix(got, "|den-secret:API_TOKEN") {
			t.Errorf("the API got %q", got)
		}
	})
	t.Run("basic auth", func(t *testing.T) {
		// git with no credentials: den supplies them.
		https("https://git.example/repo.git/info/refs?service=git-receive-pack")
		want := "git.example|" + basic("x-access-token", pass) + "|service=git-receive-pack|"
		if got := srv.last(); got != want {
			t.Errorf("the API got %q, want %q", got, want)
		}
		// git with the placeholder as its password (a URL, a helper).
		https("https://git.example/repo.git/info/refs", "Authorization: "+basic("x-access-token", "den-secret:GIT_TOKEN"))
		if got := srv.last(); got != "git.example|"+basic("x-access-token", pass)+"||" {
			t.Errorf("the API got %q", got)
		}
	})
	t.Run("query", func(t *testing.T) {
		https("https://q.example/v1?key=den-secret:Q_KEY&x=1")
		if got := srv.last(); got != "q.example||key="+key+"&x=1|" {
			t.Errorf("the API got %q", got)
		}
	})
	t.Run("other host", func(t *testing.T) {
		// Not bound: relayed untouched, encrypted end to end (the
		// client sees the real certificate).
		out := b.probe(t, "https", "https://other.example/", "/workspace/upstream-ca.pem", quote("Authorization: Bearer den-secret:API_TOKEN"))
		if got := srv.last(); got != "other.example|Bearer den-secret:API_TOKEN||" || strings.Contains(out, token) {
			t.Errorf("the API got %q; the computer %s", got, out)
		}
	})
	t.Run("refusal over TLS", func(t *testing.T) {
		out := https("https://denied.example/")
		if !strings.Contains(out, "ok: 403") || !strings.Contains(out, "den network allow --agent tester denied.example") {
			t.Errorf("a refused HTTPS request: %s", out)
		}
	})
	t.Run("nowhere in the computer", func(t *testing.T) {
		// Every file (but busybox's hundreds of links in /bin, the kernel's
		// /dev and /sys, and den's FIFOs in /run/den), and
		// every process's environment and command line.
		pat := "-e " + token + " -e " + pass + " -e " + key
		out := b.env.Run(t, "env; cat /proc/*/environ /proc/*/cmdline 2>/dev/null; grep -l "+pat+" /* 2>/dev/null; "+
			"for d in /etc /root /tmp /workspace /den /usr /var /home /lib /opt; do grep -rl "+pat+" $d 2>/dev/null; done; echo end").Output
		for _, v := range []string{token, pass, key} {
			if strings.Contains(out, v) {
				t.Errorf("a value is visible in the computer:\n%s", out)
			}
		}
	})
	all, _ := json.Marshal(recs.snapshot())
	for _, v := range []string{token, pass, key} {
		if strings.Contains(string(all), v) {
			t.Errorf("a value is in den's records: %s", all)
		}
	}
}

func basic(user, pass string) string {
	r, _ := http.NewRequest("GET", "/", nil)
	r.SetBasicAuth(user, pass)
	return r.Header.Get("Authorization")
}

// quoted quotes each argument for the computer's shell.
func quoted(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = quote(a)
	}
	return out
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
