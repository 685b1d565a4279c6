package clitest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// shopSite is a small web shop the computer serves itself with busybox
// httpd: a login form whose CGI checks the password, sets a session
// cookie and shows the orders.
const shopSite = `set -e
mkdir -p /root/shop/cgi-bin
cat > /root/shop/index.html <<'EOF'
<!doctype html><title>Shop login</title>
<h1>Sign in</h1>
<form method="post" action="/cgi-bin/login">
<label>Username <input name="user"></label>
<label>Password <input type="password" name="pass"></label>
<button>Sign in</button>
</form>
EOF
cat > /root/shop/cgi-bin/login <<'EOF'
#!/bin/sh
body=$(head -c "${CONTENT_LENGTH:-0}")
case "$body" in
"user=ada&pass=s3cret-horse")
  echo "ada" >> /root/shop/logins
  printf 'Content-Type: text/html\r\nSet-Cookie: session=tok-QWERTY42; Path=/\r\n\r\n'
  printf '<!doctype html><title>Your orders</title><h1>Welcome, Ada</h1><ul><li>Order 1001: shipped</li><li>Order 1002: preparing</li></ul>'
  ;;
*)
  echo "refused" >> /root/shop/logins
  printf 'Content-Type: text/html\r\n\r\n<!doctype html><title>Sign in</title><p>Wrong password</p>'
  ;;
esac
EOF
chmod 755 /root/shop/cgi-bin/login
`

// TestBrowserTaskThroughDenRun: a scripted model signs in to a web shop
// its computer serves and reads the orders, through den run with the
// real Chromium: the snapshot names the form's fields by index, the
// password never shows in a snapshot, the server checks the login, the
// session cookie reaches the shell through an env file and never the
// model, and the screenshot is saved in /den/browser.
func TestBrowserTaskThroughDenRun(t *testing.T) {
	sandboxtest.Need(t, "chromium-headless-shell", "chromium-headless-shell")
	d := newDen(t)
	provision(t, d, "default")
	d.MustRun("exec", "--", "sh", "-c", shopSite)
	call := func(id, name, input string) llmtest.Turn {
		return llmtest.Turn{Calls: []llmtest.Call{{ID: id, Name: name, Input: input}}}
	}
	fake := llmtest.NewAnthropic(t,
		call("toolu_1", "shell_execute", `{"command":"busybox httpd -p 127.0.0.1:8080 -h /root/shop && echo serving"}`),
		call("toolu_2", "browser_use", `{"action":"navigate","url":"localhost:8080"}`),
		call("toolu_3", "browser_use", `{"action":"type","index":1,"text":"ada"}`),
		call("toolu_4", "browser_use", `{"action":"type","index":2,"text":"s3cret-horse"}`),
		call("toolu_5", "browser_use", `{"action":"snapshot"}`),
		call("toolu_6", "browser_use", `{"action":"click","index":3}`),
		call("toolu_7", "browser_use", `{"action":"get_cookies"}`),
		call("toolu_8", "shell_execute", `{"command":"set -a; . /den/offloads/cookies-*.env; set +a; case \"$COOKIE_SESSION\" in tok-Q*42) echo cookie-reached-the-shell;; esac"}`),
		call("toolu_9", "browser_use", `{"action":"screenshot"}`),
		call("toolu_10", "browser_use", `{"action":"click","selector":"#nothing-here","timeout":5}`),
		llmtest.Turn{Text: "Signed in: order 1001 shipped, 1002 preparing."})
	events, r := runJSON(t, d, mcpEnv(fake), "--yes", "check my orders at the shop")
	if r.Code != 0 {
		t.Fatalf("den run: %s", r)
	}
	noWarnings(t, events)
	reqs := fake.Requests()
	if len(reqs) != 11 {
		t.Fatalf("%d requests, want 11", len(reqs))
	}
	if names := strings.Join(toolNames(t, reqs[0].Body), " "); !strings.Contains(names, "browser_use") {
		t.Fatalf("the model was not offered browser_use: %s", names)
	}
	// result returns the text of the tool result the model got for
	// request i (the result of the call before it).
	result := func(i int) string {
		var body struct {
			Messages []struct {
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(reqs[i].Body, &body); err != nil {
			t.Fatal(err)
		}
		var parts []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		json.Unmarshal(body.Messages[len(body.Messages)-1].Content, &parts)
		var out strings.Builder
		for _, p := range parts {
			out.Write(p.Content)
		}
		return out.String()
	}
	checks := []struct {
		req  int
		want []string
	}{
		{2, []string{`Shop login`, `[1] textbox \"Username\"`, `[2] textbox \"Password\"`, `[3] button \"Sign in\"`}},
		{5, []string{`[1] textbox \"Username\"`, `value=\"ada\"`, `(hidden: 12 characters)`}},
		{6, []string{`Welcome, Ada`, `Order 1001: shipped`}},
		{7, []string{`session`, `/den/offloads/cookies-`}},
		{8, []string{`cookie-reached-the-shell`}},
		{9, []string{`/den/browser/screenshot-`, `(den://browser/screenshot-`, `"type":"image"`}},
		{10, []string{`[not_found]`, `#nothing-here`}},
	}
	for _, c := range checks {
		got := result(c.req)
		if c.req == 9 {
			got = string(reqs[9].Body)
		}
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("the result before request %d lacks %s:\n%s", c.req, w, clipped(got))
			}
		}
	}
	for i, req := range reqs {
		body := string(req.Body)
		if strings.Contains(body, "tok-QWERTY42") {
			t.Errorf("request %d holds the cookie's value", i)
		}
		// The password is in the model's own call, and nowhere else.
		if i >= 5 && strings.Count(body, "s3cret-horse") != 1 {
			t.Errorf("request %d holds the password %d times, want once (the call)", i, strings.Count(body, "s3cret-horse"))
		}
	}
	logins := d.MustRun("exec", "--", "cat", "/root/shop/logins")
	if strings.TrimSpace(logins.Stdout) != "ada" {
		t.Errorf("the shop's logins: %q", logins.Stdout)
	}
	shots, _ := filepath.Glob(filepath.Join(d.AgentDir("default"), "sessions", "*", "browser", "screenshot-*.png"))
	if len(shots) != 1 {
		t.Errorf("screenshots: %v", shots)
	} else if b, err := os.ReadFile(shots[0]); err != nil || !strings.HasPrefix(string(b), "\x89PNG") {
		t.Errorf("screenshot: %v", err)
	}
	// The audit log has each action, the password and cookies not.
	audit := d.MustRun("audit", "--json")
	if !strings.Contains(audit.Stdout, "den-browser") || strings.Contains(audit.Stdout, "s3cret-horse") || strings.Contains(audit.Stdout, "tok-QWERTY42") {
		t.Errorf("audit:\n%s", audit.Stdout)
	}
}

func clipped(s string) string {
	if len(s) > 3000 {
		return s[:3000] + fmt.Sprintf("… (%d more)", len(s)-3000)
	}
	return s
}

// TestDenBrowserInComputer: den-browser drives the same browser from the
// computer's shell, prints den's JSON envelope, and goes through the
// gate: execute_js asks (denied with nobody to ask, run with --yes);
// with agents.X.browser = false neither the tool nor den-browser is
// there.
func TestDenBrowserInComputer(t *testing.T) {
	sandboxtest.Need(t, "chromium-headless-shell", "chromium-headless-shell")
	d := newDen(t)
	provision(t, d, "default")
	d.MustRun("exec", "--", "sh", "-c", shopSite)
	script := `busybox httpd -p 127.0.0.1:8080 -h /root/shop
den-browser navigate localhost:8080 > /tmp/nav.json; echo "navigate=$?"
den-browser type --index 1 --text ada > /dev/null; echo "type=$?"
echo s3cret-horse | den-browser type --selector 'input[type=password]' --text - > /dev/null; echo "password=$?"
den-browser click --json '{"index": 3}' > /tmp/click.json; echo "click=$?"
den-browser click --selector '#missing' --timeout 3 > /tmp/missing.json; echo "missing=$?"
den-browser bogus > /dev/null; echo "bogus=$?"
den-browser execute_js 'return document.title' > /tmp/js.json; echo "js=$?"
cat /tmp/nav.json /tmp/click.json /tmp/missing.json /tmp/js.json`
	call := llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute", Input: fmt.Sprintf(`{"command":%q}`, script)}}}
	fake := llmtest.NewAnthropic(t, call, llmtest.Turn{Text: "done"}, call, llmtest.Turn{Text: "done"})
	_, r := runJSON(t, d, mcpEnv(fake), "use den-browser")
	if r.Code != 0 {
		t.Fatalf("den run: %s", r)
	}
	out := string(fake.Requests()[1].Body)
	for _, want := range []string{"navigate=0", "type=0", "password=0", "click=0", "missing=1", "bogus=2", "js=3",
		`\"action\": \"navigate\"`, `\"tool\": \"den-browser\"`, `Shop login`, `Welcome, Ada`,
		`\"code\": \"not_found\"`, `\"code\": \"authorization_denied\"`} {
		if !strings.Contains(out, want) {
			t.Errorf("den-browser's output lacks %s:\n%s", want, clipped(out))
		}
	}
	// With --yes, the script runs.
	_, r = runJSON(t, d, mcpEnv(fake), "--yes", "use den-browser again")
	if r.Code != 0 {
		t.Fatalf("den run --yes: %s", r)
	}
	if out := string(fake.Requests()[3].Body); !strings.Contains(out, "js=0") || !strings.Contains(out, `\"value\": \"\\\"Your orders\\\"\"`) {
		t.Errorf("execute_js with --yes:\n%s", clipped(out))
	}

	// Off for the agent: no tool, no command.
	cfg := d.WriteConfig("config.toml", "[agents.default]\nbrowser = false\n")
	off := llmtest.NewAnthropic(t, llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute", Input: `{"command":"den-browser snapshot; echo exit=$?"}`}}},
		llmtest.Turn{Text: "done"})
	if _, r := runJSON(t, d, mcpEnv(off), "--config", cfg, "try"); r.Code != 0 {
		t.Fatalf("den run: %s", r)
	}
	if names := strings.Join(toolNames(t, off.Requests()[0].Body), " "); strings.Contains(names, "browser_use") {
		t.Errorf("browser_use offered with browser = false: %s", names)
	}
	if out := string(off.Requests()[1].Body); !strings.Contains(out, "exit=4") || !strings.Contains(out, "not_available") {
		t.Errorf("den-browser with browser = false:\n%s", clipped(out))
	}
}

// TestBrowserInDaemon: in den serve, the browser outlives the turn (it
// stops when idle), den doctor reports the memory its Chromium uses
// and its limit, and stopping the daemon ends Chromium.
func TestBrowserInDaemon(t *testing.T) {
	sandboxtest.Need(t, "chromium-headless-shell", "chromium-headless-shell")
	p, _ := serveWith(t, "",
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "browser_use", Input: `{"action":"navigate","url":"data:text/html,<title>Hi</title><button>Go</button>"}`}}},
		llmtest.Turn{Text: "opened"})
	id := p.api(t, "POST", "/api/v1/sessions", map[string]any{"agent": "default"}, http.StatusCreated)["id"].(string)
	sent := p.api(t, "POST", "/api/v1/sessions/"+id+"/messages", map[string]any{"text": "open it"}, http.StatusAccepted)
	waitIdle(t, p, id, sent["message_id"].(string))
	doc := p.den.Run("doctor")
	line := regexp.MustCompile(`browser memory: ([0-9.]+ [KMG]iB) in (\d+) processes`).FindStringSubmatch(doc.Stdout)
	if line == nil {
		t.Fatalf("den doctor does not report the browser's memory:\n%s", doc.Stdout)
	}
	t.Logf("idle browser with one tab: %s in %s processes", line[1], line[2])
	if !strings.Contains(doc.Stdout, "; limit 2.0 GiB ([browser] memory)") {
		t.Errorf("den doctor does not give the browser's memory limit:\n%s", doc.Stdout)
	}
	// The browser's record names its sandbox's first process.
	rec, err := os.ReadFile(filepath.Join(p.den.AgentDir("default"), "browser", "running"))
	var pid int
	if _, serr := fmt.Sscan(string(rec), &pid); err != nil || serr != nil || syscall.Kill(pid, 0) != nil {
		t.Fatalf("no running Chromium recorded: %q %v", rec, err)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.cmd.Wait()
	waitFor(t, "Chromium to end with den serve", func() bool { return syscall.Kill(pid, 0) != nil || zombie(pid) })
	if doc := p.den.Run("doctor"); !strings.Contains(doc.Stdout, "browser memory: not running") {
		t.Errorf("den doctor after den serve stopped:\n%s", doc.Stdout)
	}
}
