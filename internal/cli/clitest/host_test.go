package clitest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/sandbox/sandboxtest"
	"den.dev/den/internal/store"
)

func shellTurn(id, command string) llmtest.Turn {
	return llmtest.Turn{Calls: []llmtest.Call{{ID: id, Name: "shell_execute", Input: `{"command":` + quoteJSON(command) + `}`}}}
}

func quoteJSON(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// TestHostCommandsThroughTheSandbox: a command inside the computer calls
// den-notify and the event reaches den run --json; a call the agent's
// policy denies gets the envelope and exit code 3; an ask with nobody to
// answer is denied at once; everything is in the audit log.
func TestHostCommandsThroughTheSandbox(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	fake := llmtest.NewAnthropic(t,
		shellTurn("t1", `echo payload | den-notify --title Build "all tests pass"; echo rc=$?`),
		shellTurn("t2", `den-config set agents.default.model x/y; echo rc=$?`),
		shellTurn("t3", `den-sessions send nosuch hello; echo rc=$?; xdg-open https://example.org -q; echo rc=$?`),
		llmtest.Turn{Text: "done"},
	)
	d := newDen(t)
	cfg := d.WriteConfig("config.toml", "[agents.default.permissions]\n\"den-config set\" = \"deny\"\n")
	events, r := runJSON(t, d, []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + fake.URL}, "--config", cfg, "--rootfs", "busybox", "go")
	if r.Code != 0 {
		t.Fatalf("run: %s", r)
	}
	n := ofType(events, "notify")
	if len(n) != 1 || n[0]["title"] != "Build" || n[0]["message"] != "all tests pass" {
		t.Errorf("notify events: %v", n)
	}
	res := ofType(events, "tool_result")
	if out := res[0]["output"].(string); !strings.Contains(out, `"ok": true`) || !strings.Contains(out, "rc=0") || !strings.Contains(out, `"tool": "den-notify"`) {
		t.Errorf("den-notify result: %q", out)
	}
	if out := res[1]["output"].(string); !strings.Contains(out, "authorization_denied") || !strings.Contains(out, "rc=3") {
		t.Errorf("denied den-config set: %q", out)
	}
	// den-sessions send asks; den run without a terminal denies asks.
	out := res[2]["output"].(string)
	if !strings.Contains(out, "rc=3") {
		t.Errorf("unanswerable ask: %q", out)
	}
	if o := ofType(events, "open"); len(o) != 1 || o[0]["target"] != "https://example.org" || !strings.Contains(out, "rc=0") {
		t.Errorf("xdg-open: %v %q", o, out)
	}
	audit := d.MustRun("audit", "--json")
	for _, want := range []string{"den-notify", "den-config", "den-sessions", "den-open", "deny"} {
		if !strings.Contains(audit.Stdout, want) {
			t.Errorf("audit lacks %q: %s", want, audit.Stdout)
		}
	}
}

// TestApprovalFromAnotherProcess: den chat waits on an ask; a second
// process answers it with den approve, and the call goes through.
func TestApprovalFromAnotherProcess(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	fake := llmtest.NewAnthropic(t,
		shellTurn("t1", `den-config set agents.default.model anthropic/claude-sonnet-4-5; echo rc=$?`),
		llmtest.Turn{Text: "set it"},
	)
	d := newDen(t)
	cfg := d.WriteConfig("config.toml", "# mine\n[agents.default]\nnetwork = \"on\"\n")
	cmd := exec.Command(d.Bin, "--config", cfg, "chat", "--rootfs", "busybox")
	cmd.Env = append(d.Env(), "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL="+fake.URL)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	io.WriteString(stdin, "raise the limit\n")
	idRE := regexp.MustCompile(`den approve (\S+) elsewhere`)
	found := make(chan string, 1)
	var seen strings.Builder
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Split(bufio.ScanRunes)
		for sc.Scan() {
			seen.WriteString(sc.Text())
			if m := idRE.FindStringSubmatch(seen.String()); m != nil {
				found <- m[1]
				seen.Reset()
			}
		}
		close(found)
	}()
	var id string
	select {
	case id = <-found:
	case <-time.After(90 * time.Second):
		t.Fatal("no approval request")
	}
	if out := d.MustRun("approve", id); !strings.Contains(out.Stdout+out.Stderr, id) {
		t.Logf("approve: %s", out)
	}
	// The answered call runs; then the chat goes on.
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(cfg)
		if strings.Contains(string(b), `model = "anthropic/claude-sonnet-4-5"`) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, _ := os.ReadFile(cfg)
	if !strings.Contains(string(b), `model = "anthropic/claude-sonnet-4-5"`) || !strings.Contains(string(b), "# mine") {
		t.Errorf("config after the approved set:\n%s", b)
	}
	io.WriteString(stdin, "/exit\n")
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Error("chat did not exit")
	}
	if out := d.MustRun("audit", "--json"); !strings.Contains(out.Stdout, id) {
		t.Errorf("audit does not name the approval: %s", out.Stdout)
	}
}

// TestShellCommandsAreScanned: tool calls carry the command's class; a
// destructive command on a read-write user mount asks first under
// restricted trust (and den run without a terminal denies the ask); a
// bash-only command on BusyBox ash gets an error naming the construct.
func TestShellCommandsAreScanned(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	notes := t.TempDir()
	os.WriteFile(notes+"/keep.md", []byte("precious\n"), 0o644)
	fake := llmtest.NewAnthropic(t,
		shellTurn("t1", "rm -rf /mnt/notes/*"),
		shellTurn("t2", "a=(1 2 3); echo ${a[1]}"),
		shellTurn("t3", "cat /mnt/notes/keep.md"),
		llmtest.Turn{Text: "ok"},
	)
	d := newDen(t)
	cfg := d.WriteConfig("config.toml", "[agents.default]\ntrust = \"restricted\"\n")
	events, r := runJSON(t, d, []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + fake.URL},
		"--config", cfg, "--rootfs", "busybox", "--mount", notes+":/mnt/notes", "tidy")
	if r.Code != 0 {
		t.Fatalf("run: %s", r)
	}
	calls := ofType(events, "tool_call")
	labels := fmt.Sprint(calls[0]["labels"])
	if !strings.Contains(labels, "destructive") || !strings.Contains(labels, "touches_mount") {
		t.Errorf("labels of rm -rf: %v", labels)
	}
	if l := fmt.Sprint(calls[2]["labels"]); !strings.Contains(l, "read_only") {
		t.Errorf("labels of cat: %v", l)
	}
	res := ofType(events, "tool_result")
	if res[0]["is_error"] != true || !strings.Contains(res[0]["output"].(string), "not run") {
		t.Errorf("destructive command ran: %v", res[0])
	}
	if b, err := os.ReadFile(notes + "/keep.md"); err != nil || string(b) != "precious\n" {
		t.Errorf("the user's file: %q %v", b, err)
	}
	if out := res[1]["output"].(string); res[1]["is_error"] != true || !strings.Contains(out, "bash") || !strings.Contains(out, "line 1") {
		t.Errorf("bashism: %q", out)
	}
	if out := res[2]["output"].(string); !strings.Contains(out, "precious") {
		t.Errorf("read: %q", out)
	}
}

// TestHostCommandsUnderProot: the same shim and socket work under the
// proot backend.
func TestHostCommandsUnderProot(t *testing.T) {
	sandboxtest.Need(t, "proot", "proot")
	sandboxtest.Need(t, "busybox", "busybox-static")
	fake := llmtest.NewAnthropic(t, shellTurn("t1", `den-notify "from proot"; echo rc=$?`), llmtest.Turn{Text: "ok"})
	d := newDen(t)
	events, r := runJSON(t, d, []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + fake.URL}, "--backend", "proot", "--rootfs", "busybox", "go")
	if r.Code != 0 {
		t.Fatalf("run: %s", r)
	}
	if n := ofType(events, "notify"); len(n) != 1 || n[0]["message"] != "from proot" {
		t.Errorf("notify: %v", n)
	}
	if out := ofType(events, "tool_result")[0]["output"].(string); !strings.Contains(out, "rc=0") {
		t.Errorf("result: %q", out)
	}
}

// TestSpeak: den-speak makes an audio file in the session's attachments
// with the host's espeak-ng and announces it to the faces.
func TestSpeak(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	sandboxtest.Need(t, "espeak-ng", "espeak-ng")
	fake := llmtest.NewAnthropic(t, shellTurn("t1", `den-speak "good morning" -q; echo rc=$?`), llmtest.Turn{Text: "ok"})
	d := newDen(t)
	events, r := runJSON(t, d, []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + fake.URL}, "--rootfs", "busybox", "speak")
	if r.Code != 0 {
		t.Fatalf("run: %s", r)
	}
	sp := ofType(events, "speech")
	if len(sp) != 1 || !strings.HasPrefix(sp[0]["path"].(string), "/den/attachments/speech-") {
		t.Fatalf("speech events: %v", sp)
	}
	ws := ofType(events, "session")[0]["workspace"].(string)
	host := strings.TrimSuffix(ws, "/workspace") + "/attachments/" + strings.TrimPrefix(sp[0]["path"].(string), "/den/attachments/")
	b, err := os.ReadFile(host)
	if err != nil || len(b) < 1000 || string(b[:4]) != "RIFF" {
		t.Errorf("audio file %s: %d bytes, %v", host, len(b), err)
	}
	if out := ofType(events, "tool_result")[0]["output"].(string); !strings.Contains(out, "rc=0") || !strings.Contains(out, sp[0]["path"].(string)) {
		t.Errorf("result: %q", out)
	}
}

// TestRunAsksOnItsTerminal: den run with a terminal asks den-ask's
// question there, and the answer reaches the command.
func TestRunAsksOnItsTerminal(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	fake := llmtest.NewAnthropic(t, shellTurn("t1", `den-ask --confirm "continue?" -q`), llmtest.Turn{Text: "ok"})
	d := newDen(t)
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	cmd := exec.Command(d.Bin, "run", "--json", "--rootfs", "busybox", "go")
	cmd.Env = append(d.Env(), "ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL="+fake.URL)
	cmd.Stdin = tty
	stderr, _ := cmd.StderrPipe()
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	asked := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Split(bufio.ScanRunes)
		var seen strings.Builder
		for sc.Scan() {
			seen.WriteString(sc.Text())
			if strings.Contains(seen.String(), "? continue? [yes/no]") {
				asked <- true
				seen.Reset()
			}
		}
	}()
	select {
	case <-asked:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("never asked")
	}
	io.WriteString(ptmx, "yes\n")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("den run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), `\"answer\": \"yes\"`) {
		t.Errorf("answer did not reach the command:\n%s", out.String())
	}
}

func TestRulesListAndForget(t *testing.T) {
	d := newDen(t)
	st, err := store.Open(filepath.Join(d.Home, "den.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.AddRule(context.Background(), store.Rule{Agent: "default", Command: "den-config", Action: "set", Decision: "allow"}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if out := d.MustRun("rules", "list"); !strings.Contains(out.Stdout, "den-config") || !strings.Contains(out.Stdout, "allow") {
		t.Errorf("rules list: %s", out)
	}
	d.MustRun("rules", "forget", "den-config", "set")
	if out := d.MustRun("rules", "list"); strings.Contains(out.Stdout, "den-config") {
		t.Errorf("rule not forgotten: %s", out)
	}
	if out := d.Run("rules", "forget", "den-config", "set"); out.Code != 2 {
		t.Errorf("forgetting twice: %s", out)
	}
}

// TestHostCommandsInExecAndSh: den exec and den sh computers have the
// host commands too.
func TestHostCommandsInExecAndSh(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	d := newDen(t)
	r := d.Run("exec", "--rootfs", "busybox", "--", "den-notify", "--title", "T", "from exec")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"ok": true`) || !strings.Contains(r.Stderr, "notification: T: from exec") {
		t.Errorf("den exec: %s", r)
	}
	r = d.RunInput(strings.NewReader("den-notify from-sh -q; echo rc=$?\nexit\n"), "sh")
	if !strings.Contains(r.Stdout, "rc=0") || !strings.Contains(r.Stderr, "from-sh") {
		t.Errorf("den sh: %s", r)
	}
}

// TestConfigSetCannotEscalate: with every ask approved (--yes), an
// agent still cannot change what makes it more powerful, nor write
// anything but the one value it names: keys off the allow-list and
// values spanning lines are refused, the file stays as it was, and an
// allowed change lands re-encoded, exactly.
func TestConfigSetCannotEscalate(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	attacks := []string{
		`den-config set agents.default.trust full`,
		`den-config set agents.default.mounts '["/:/host"]'`,
		`den-config set sandbox.bwrap /workspace/evil`,
		`den-config set providers.evil.base_url http://x`,
		`den-config set agents.default.permissions.den-open allow`,
		`den-config set agents.other.model x/y`,
		`den-config set agents.default.model "$(printf 'x/y\n[providers.evil]\ntype = "openai"\napi_key = "k"')"`,
		`den-config set 'agents.default.model]
[sandbox]
bwrap = "/x"
[agents.default' x/y`,
	}
	var turns []llmtest.Turn
	for i, a := range attacks {
		turns = append(turns, shellTurn(fmt.Sprintf("a%d", i), a+"; echo rc=$?"))
	}
	turns = append(turns, shellTurn("ok", `den-config set agents.default.instructions "$(printf 'Be brief.\nSign as "den".')"; echo rc=$?`),
		llmtest.Turn{Text: "done"})
	fake := llmtest.NewAnthropic(t, turns...)
	d := newDen(t)
	const orig = "# my settings\n[agents.default]\nnetwork = \"on\"\n"
	cfg := d.WriteConfig("config.toml", orig)
	events, r := runJSON(t, d, []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + fake.URL}, "--config", cfg, "--rootfs", "busybox", "--yes", "go")
	if r.Code != 0 {
		t.Fatalf("run: %s", r)
	}
	res := ofType(events, "tool_result")
	for i := range attacks {
		if out := res[i]["output"].(string); !strings.Contains(out, "rc=2") || !strings.Contains(out, "invalid_args") {
			t.Errorf("attack %d was not refused: %q", i, out)
		}
	}
	if out := res[len(attacks)]["output"].(string); !strings.Contains(out, "rc=0") {
		t.Errorf("allowed change: %q", out)
	}
	b, _ := os.ReadFile(cfg)
	want := orig[:len(orig)-1] + "\ninstructions = \"Be brief.\\nSign as \\\"den\\\".\"\n"
	if string(b) != want {
		t.Errorf("config after the run:\n%s\nwant:\n%s", b, want)
	}
}
