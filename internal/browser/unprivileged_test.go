package browser

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// TestUnprivileged runs the browser as an ordinary user: the computer's
// user namespace then belongs to that user, who joins it. As root, the
// test makes a throwaway account and runs TestUnprivilegedInside as it,
// once with the user's own uid alone, once with subordinate ids mapped
// too (newuidmap).
func TestUnprivileged(t *testing.T) {
	t.Run("own uid", func(t *testing.T) { runUnprivileged(t, sandboxtest.NewUser(t)) })
	t.Run("subordinate ids", func(t *testing.T) {
		u := sandboxtest.NewUser(t)
		sandboxtest.Need(t, "newuidmap", "uidmap")
		u.AddSubIDs(t)
		runUnprivileged(t, u)
	})
}

func runUnprivileged(t *testing.T, u *sandboxtest.User) {
	needBrowser(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := u.Install(t, self, "browser.test")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := u.Command(ctx, bin, "-test.run", "^TestUnprivilegedInside$", "-test.v", "-test.count=1")
	cmd.Env = append(cmd.Env, "DEN_TEST_BROWSER_UID="+strconv.Itoa(u.UID))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	switch {
	case ctx.Err() != nil:
		t.Fatalf("still running after 3 min, killed:\n%s", out.String())
	case err != nil:
		t.Fatalf("as %s (uid %d): %v\n%s", u.Name, u.UID, err, out.String())
	case !strings.Contains(out.String(), "--- PASS: TestUnprivilegedInside") || strings.Contains(out.String(), "--- SKIP"):
		t.Fatalf("did not pass:\n%s", out.String())
	}
	t.Logf("as %s (uid %d):\n%s", u.Name, u.UID, out.String())
}

// TestUnprivilegedInside, run by TestUnprivileged as a throwaway user,
// serves a page with busybox httpd inside a computer and opens it on
// the computer's localhost.
func TestUnprivilegedInside(t *testing.T) {
	want := os.Getenv("DEN_TEST_BROWSER_UID")
	if want == "" {
		t.Skip("run by TestUnprivileged as a throwaway user")
	}
	c, cs := startComputer(t)
	site := filepath.Join(c.SessionDir("s1"), "workspace", "site")
	if err := os.MkdirAll(site, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(site, "index.html"), []byte("<title>Inside</title><h1>Served by the computer</h1><button>Go</button>"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := cs.Run(context.Background(), sandbox.Command{Script: "busybox httpd -p 127.0.0.1:8000 -h /workspace/site", Timeout: 10 * time.Second})
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("httpd: %v %+v", err, r)
	}
	b, err := New(Options{Dir: c.AgentDir("browser")})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s, err := b.Session("s1", Env{Computer: cs.Process(), Workspace: filepath.Join(c.SessionDir("s1"), "workspace"), Files: filepath.Join(c.SessionDir("s1"), "browser")})
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Do(context.Background(), Action{Name: "navigate", URL: "localhost:8000"})
	if err != nil || !res.OK() || res.Title != "Inside" || !strings.Contains(res.Snapshot.Text, `[1] button "Go"`) {
		t.Fatalf("navigate: %v %s", err, res.Text())
	}
	res, err = s.Do(context.Background(), Action{Name: "screenshot"})
	if err != nil || !res.OK() {
		t.Fatalf("screenshot: %v %s", err, res.Text())
	}
	for _, pid := range chromiumProcs(t, b) {
		if uid := procUID(t, pid); uid >= 0 && strconv.Itoa(uid) != want {
			t.Errorf("process %d runs as uid %d, not the user's %s", pid, uid, want)
		}
	}
	t.Logf("Chromium ran as uid %s: %s", want, res.Message)
}
