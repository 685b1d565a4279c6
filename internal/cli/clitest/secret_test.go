package clitest

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/egress/egresstest"
	"den.dev/den/internal/sandbox/bwrap"
	"den.dev/den/internal/sandbox/rootfs"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// debianComputer is a Debian computer of agent in a data dir of its
// own, provisioned as den does with the test cache (so that the base is
// made once per machine).
func debianComputer(t testing.TB, agent string) *computer.Computer {
	t.Helper()
	b, err := bwrap.New("")
	if err != nil {
		t.Fatal(err)
	}
	m, err := computer.New(t.TempDir(), b)
	if err != nil {
		t.Fatal(err)
	}
	m.RootfsOptions.CacheDir = testCache(t)
	c, err := m.Computer(agent)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ensure(context.Background(), rootfs.Source{Kind: rootfs.Debian}, true); err != nil {
		t.Fatal(err)
	}
	return c
}

// debianBase is the cached pristine Debian base (debootstrap, made once
// per machine in the test cache), as a tar for rootfs = "tar:…".
func debianBase(t testing.TB) string {
	t.Helper()
	sandboxtest.Need(t, "debootstrap", "debootstrap")
	sandboxtest.NeedRoot(t, "the Debian base needs debootstrap, which needs root")
	arch := map[string]string{"amd64": "amd64", "arm64": "arm64"}[runtime.GOARCH]
	out := filepath.Join(testCache(t), "debian-bookworm-"+arch+".tar")
	defer cacheLock(t, "debian-base")()
	if _, err := os.Stat(out); err == nil {
		return out
	}
	debianComputer(t, "base")
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("no cached Debian base after provisioning: %v", err)
	}
	return out
}

// gitAPI is an HTTPS server on the host's loopback, with a certificate
// of the test's own CA: an API that echoes what it got at /user, and a
// Git server (git http-backend over a bare repository) at /repo.git
// that wants basic auth with the real token.
type gitAPI struct {
	addr, caFile, bare string
	token, pass        string
	mu                 sync.Mutex
	auth               []string // the Authorization of each request to /user
}

func newGitAPI(t *testing.T, token, pass string) *gitAPI {
	t.Helper()
	git := sandboxtest.Need(t, "git", "git")
	dir := t.TempDir()
	a := &gitAPI{caFile: filepath.Join(dir, "ca.pem"), bare: filepath.Join(dir, "repo.git"), token: token, pass: pass}
	if out, err := exec.Command(git, "init", "--bare", "-b", "main", a.bare).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v: %s", err, out)
	}
	if out, err := exec.Command(git, "-C", a.bare, "config", "http.receivepack", "true").CombinedOutput(); err != nil {
		t.Fatalf("git config: %v: %s", err, out)
	}
	backend := &cgi.Handler{Path: git, Args: []string{"http-backend"}, Dir: dir,
		Env: []string{"GIT_PROJECT_ROOT=" + dir, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=x-access-token"}}
	mux := http.NewServeMux()
	mux.HandleFunc("/user", func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.auth = append(a.auth, r.Header.Get("Authorization"))
		a.mu.Unlock()
		fmt.Fprintf(w, `{"login":"tester","echo":%q}`+"\n", r.Header.Get("Authorization"))
	})
	mux.HandleFunc("/repo.git/", func(w http.ResponseWriter, r *http.Request) {
		if user, p, ok := r.BasicAuth(); !ok || user != "x-access-token" || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	})
	ca := egresstest.NewCA(t)
	caPEM, cert := ca.PEM, *ca.Leaf(t, "api.example", "git.example")
	if err := os.WriteFile(a.caFile, caPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a.addr = l.Addr().String()
	srv := &http.Server{Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })
	return a
}

// TestSecretsCurlGit: with secrets set by den secret set, curl reaches
// an API with $API_TOKEN (a placeholder inside) and git pushes over
// HTTPS with no credentials configured at all, in a Debian computer
// whose curl, git and ca-certificates came from the Debian mirror
// through den's egress. The real values reach the servers and nothing
// else: not the computer's output, files or environment, not den's
// network log.
func TestSecretsCurlGit(t *testing.T) {
	t.Parallel()
	base := debianBase(t)
	const token, pass = "tok_DenTestApiValue_8c1f2a", "pass_DenTestGitValue_77e3b0"
	srv := newGitAPI(t, token, pass)
	d := newDen(t)
	cfg := d.WriteConfig("config.toml", fmt.Sprintf(`[agents.default]
rootfs = "tar:%s"

[network]
hosts = { "api.example:443" = %q, "git.example:443" = %q }
ca_files = [%q]
`, base, srv.addr, srv.addr, srv.caFile))
	run := func(script string) Result {
		return d.RunInput(nil, "--config", cfg, "exec", "--timeout", "10m", "--", "bash", "-c", script)
	}
	if r := d.RunInput(strings.NewReader(token+"\n"), "--config", cfg, "secret", "set", "API_TOKEN", "--host", "api.example"); r.Code != 0 {
		t.Fatalf("den secret set: %v", r)
	}
	if r := d.RunInput(strings.NewReader(pass), "--config", cfg, "secret", "set", "GIT_TOKEN", "--host", "git.example", "--basic", "x-access-token"); r.Code != 0 {
		t.Fatalf("den secret set: %v", r)
	}
	if list := d.MustRun("--config", cfg, "secret", "list").Stdout; !strings.Contains(list, "API_TOKEN") || strings.Contains(list, token) {
		t.Errorf("den secret list:\n%s", list)
	}
	r := run("export DEBIAN_FRONTEND=noninteractive; apt-get update -q && apt-get install -y -q curl git ca-certificates >/dev/null && echo installed")
	if r.Code != 0 || !strings.Contains(r.Stdout, "installed") {
		t.Fatalf("apt-get install curl git ca-certificates through den: %v", r)
	}

	r = run(`echo "inside: $API_TOKEN"; curl -sS --fail -H "Authorization: Bearer $API_TOKEN" https://api.example/user`)
	if r.Code != 0 || !strings.Contains(r.Stdout, "inside: den-secret:API_TOKEN") || !strings.Contains(r.Stdout, `"login":"tester"`) {
		t.Fatalf("curl with the placeholder: %v", r)
	}
	srv.mu.Lock()
	got := append([]string(nil), srv.auth...)
	srv.mu.Unlock()
	if len(got) != 1 || got[0] != "Bearer "+token {
		t.Errorf("the API got Authorization %q, want the real token", got)
	}
	r = run(`set -e; cd /tmp; rm -rf w; git init -q -b main w; cd w; git -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m "from the computer";` +
		` git push -q https://git.example/repo.git main 2>&1; echo pushed`)
	if r.Code != 0 || !strings.Contains(r.Stdout, "pushed") {
		t.Fatalf("git push with no credentials configured: %v", r)
	}
	if out, err := exec.Command("git", "-C", srv.bare, "log", "--format=%s", "main").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "from the computer" {
		t.Errorf("the server's repository after the push: %v: %s", err, out)
	}

	all := r.Stdout + r.Stderr + d.MustRun("--config", cfg, "network", "log", "--json", "--limit", "1000").Stdout
	all += run(`env; cat /proc/*/environ 2>/dev/null; cat ~/.gitconfig ~/.git-credentials 2>/dev/null`).Stdout
	for _, v := range []string{token, pass} {
		if strings.Contains(all, v) {
			t.Errorf("a secret's value is visible in the computer's output, environment or den's log")
		}
	}
	// Every file of the computer, read from the host.
	filepath.WalkDir(filepath.Join(d.AgentDir("default"), "rootfs"), func(p string, e fs.DirEntry, err error) error {
		if err != nil || !e.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err == nil && (bytes.Contains(b, []byte(token)) || bytes.Contains(b, []byte(pass))) {
			t.Errorf("a secret's value is in the computer's file %s", p)
		}
		return nil
	})
}
