package sandboxtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"den.dev/den/internal/sandbox"
)

// Caps are what a backend promises beyond the common contract.
type Caps struct {
	// Isolates: host files, processes and the kernel are out of reach
	// (the escape tests run).
	Isolates bool
}

// RunSuite runs the conformance suite against the backend newBackend
// returns.
func RunSuite(t *testing.T, newBackend func(t testing.TB) sandbox.Backend, caps Caps) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b sandbox.Backend)
	}{
		{"ExitCodes", testExitCodes},
		{"StdoutStderr", testStdoutStderr},
		{"EnvAndCwdPersist", testPersist},
		{"ShellRestartRestoresEnv", testRestart},
		{"ScriptQuotingHeredoc", testScript},
		{"Stdin", testStdin},
		{"OutputCleaned", testCleaned},
		{"OutputCappedAndOffloaded", testCap},
		{"TimeoutKillsTree", testTimeoutTree},
		{"TimeoutBuiltinLoop", testTimeoutBuiltin},
		{"Cancel", testCancel},
		{"ConcurrentExec", testConcurrent},
		{"BackgroundSurvivesCalls", testBackground},
		{"CloseKillsEverything", testCloseKills},
		{"Mounts", testMounts},
		{"BadTimeout", testBadTimeout},
		{"Layout", testLayout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newBackend(t))
		})
	}
	if caps.Isolates {
		for _, tc := range []struct {
			name string
			fn   func(t *testing.T, b sandbox.Backend)
		}{
			{"EscapeReadHostFile", escapeReadHost},
			{"EscapeWriteReadOnlyMount", escapeReadOnly},
			{"EscapeSeeHostProcesses", escapeProcesses},
			{"EscapeMount", escapeMount},
			{"EscapeNetworkOff", escapeNetwork},
			{"EscapeCapabilities", escapeCaps},
			{"EscapeHostRoot", escapeHostRoot},
			{"EscapeKernelSettings", escapeKernelSettings},
			{"EscapeSetuidPlant", escapeSetuidPlant},
		} {
			t.Run(tc.name, func(t *testing.T) {
				tc.fn(t, newBackend(t))
			})
		}
	}
}

func testExitCodes(t *testing.T, b sandbox.Backend) {
	e := Start(t, b)
	for _, c := range []struct {
		script string
		want   int
	}{{"true", 0}, {"false", 1}, {"(exit 42)", 42}, {"nosuchcommand-xyz", 127}} {
		if r := e.Run(t, c.script); r.ExitCode != c.want {
			t.Errorf("run %q: exit %d, want %d (output %q)", c.script, r.ExitCode, c.want, r.Output)
		}
		if r := e.Exec(t, c.script); r.ExitCode != c.want {
			t.Errorf("exec %q: exit %d, want %d (output %q)", c.script, r.ExitCode, c.want, r.Output)
		}
	}
	// exit ends the persistent shell; its status is the command's.
	if r := e.Run(t, "exit 3"); r.ExitCode != 3 {
		t.Errorf("exit 3: got %d", r.ExitCode)
	}
	if r := e.Run(t, "echo alive"); r.Output != "alive\n" || r.ExitCode != 0 {
		t.Errorf("after exit: %q %d", r.Output, r.ExitCode)
	}
}

func testStdoutStderr(t *testing.T, b sandbox.Backend) {
	e := Start(t, b)
	for _, run := range []func(testing.TB, string, ...time.Duration) *sandbox.Result{e.Run, e.Exec} {
		r := run(t, "echo one; echo two >&2; echo three")
		if r.Stdout != "one\nthree\n" || r.Stderr != "two\n" {
			t.Errorf("separate: stdout %q stderr %q", r.Stdout, r.Stderr)
		}
		for _, w := range []string{"one\n", "two\n", "three\n"} {
			if !strings.Contains(r.Output, w) {
				t.Errorf("combined %q lacks %q", r.Output, w)
			}
		}
		if len(r.Output) != len("one\ntwo\nthree\n") {
			t.Errorf("combined %q", r.Output)
		}
	}
	// Lines written in order with pauses arrive in order.
	r := e.Run(t, "echo a; sleep 0.3; echo b >&2; sleep 0.3; echo c")
	if r.Output != "a\nb\nc\n" {
		t.Errorf("interleaving: %q", r.Output)
	}
}

func testPersist(t *testing.T, b sandbox.Backend) {
	e := Start(t, b)
	e.Run(t, "export GREETING='hello world'; LOCALVAR=kept; mkdir -p /tmp/p/q; cd /tmp/p/q")
	r := e.Run(t, `echo "$GREETING|$LOCALVAR|$(pwd)"`)
	if r.Output != "hello world|kept|/tmp/p/q\n" {
		t.Errorf("persisted: %q", r.Output)
	}
	// A fresh process starts in the shell's directory with its exports.
	r = e.Exec(t, `echo "$GREETING|$(pwd)"`)
	if r.Output != "hello world|/tmp/p/q\n" {
		t.Errorf("exec sees shell state: %q", r.Output)
	}
	r = e.Run(t, "unset GREETING; echo ${GREETING:-gone}")
	if r.Output != "gone\n" {
		t.Errorf("unset: %q", r.Output)
	}
}

func testRestart(t *testing.T, b sandbox.Backend) {
	e := Start(t, b)
	e.Run(t, "export KEEP=\"a b'c\"; cd /tmp")
	r := e.Run(t, "kill -9 $$")
	if !strings.Contains(r.Note, "shell") {
		t.Errorf("no note about the dead shell: %+v", r)
	}
	r = e.Run(t, `echo "$KEEP"; pwd`)
	if r.Output != "a b'c\n/tmp\n" {
		t.Errorf("after restart: %q", r.Output)
	}
}

func testScript(t *testing.T, b sandbox.Backend) {
	e := Start(t, b)
	script := "cat <<'EOF'\n$HOME \"quoted\" 'single'\nEOF\nx='a;b'; echo \"$x\"; printf '%s\\n' \"a  b\""
	want := "$HOME \"quoted\" 'single'\na;b\na  b\n"
	if r := e.Run(t, script); r.Output != want {
		t.Errorf("run: %q, want %q", r.Output, want)
	}
	if r := e.Exec(t, script); r.Output != want {
		t.Errorf("exec: %q, want %q", r.Output, want)
	}
	// No trailing newline after a heredoc terminator.
	if r := e.Run(t, "cat <<X\nlast\nX"); r.Output != "last\n" {
		t.Errorf("heredoc at end: %q", r.Output)
	}
}

func testStdin(t *testing.T, b sandbox.Backend) {
	e := Start(t, b)
	// Without input, stdin is /dev/null: cat ends at once.
	if r := e.Run(t, "cat; echo end", 5*time.Second); r.Output != "end\n" || r.TimedOut {
		t.Errorf("run, no input: %+v", r)
	}
	if r := e.Exec(t, "cat; echo end", 5*time.Second); r.Output != "end\n" || r.TimedOut {
		t.Errorf("exec, no input: %+v", r)
	}
	for name, f := range map[string]func(context.Context, sandbox.Command) (*sandbox.Result, error){"run": e.Session.Run, "exec": e.Session.Exec} {
		r, err := f(context.Background(), sandbox.Command{Script: "tr a-z A-Z", Stdin: []byte("piped in\n")})
		if err != nil || r.Output != "PIPED IN\n" {
			t.Errorf("%s with input: %v %+v", name, err, r)
		}
	}
	// Input the command never reads does not block it.
	r, err := e.Session.Run(context.Background(), sandbox.Command{Script: "echo ignored", Stdin: make([]byte, 1<<20)})
	if err != nil || r.Output != "ignored\n" {
		t.Errorf("unread input: %v %+v", err, r)
	}
}

func testCleaned(t *testing.T, b sandbox.Backend) {
	e := Start(t, b)
	r := e.Run(t, `printf '\033[1;31mred\033[0m plain\n'; printf '10%%\r50%%\r100%%\n'; printf '\303\251t\303\251\n'`)
	if r.Output != "red plain\n100%\nété\n" {
		t.Errorf("cleaned: %q", r.Output)
	}
}

func testCap(t *testing.T, b sandbox.Backend) {
	e := Start(t, b, func(o *sandbox.SessionOptions) { o.OutputLimit = 64 << 10 })
	// 20000 numbered lines: about 108 KB.
	r := e.Run(t, "i=0; while [ $i -lt 20000 ]; do echo line$i; i=$((i+1)); done")
	if !r.Truncated || r.OffloadPath == "" {
		t.Fatalf("not capped: truncated=%v path=%q total=%d", r.Truncated, r.OffloadPath, r.TotalBytes)
	}
	if len(r.Output) > 70<<10 {
		t.Errorf("kept %d bytes, cap 64 KiB", len(r.Output))
	}
	if !strings.HasPrefix(r.Output, "line0\n") || !strings.HasSuffix(r.Output, "line19999\n") {
		t.Errorf("head/tail lost: %q ... %q", r.Output[:20], r.Output[len(r.Output)-20:])
	}
	if !strings.Contains(r.Note, r.OffloadPath) {
		t.Errorf("note does not name the file: %q", r.Note)
	}
	host := filepath.Join(e.Offloads, strings.TrimPrefix(r.OffloadPath, sandbox.GuestOffloads+"/"))
	full, err := os.ReadFile(host)
	if err != nil {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&want, "line%d\n", i)
	}
	if string(full) != want.String() || int64(len(full)) != r.TotalBytes {
		t.Errorf("offload file: %d bytes, want %d", len(full), want.Len())
	}
	// The file is readable inside the computer at the path stated.
	if r2 := e.Run(t, "wc -l < "+r.OffloadPath); strings.TrimSpace(r2.Output) != "20000" {
		t.Errorf("offload inside: %q", r2.Output)
	}
}

func testTimeoutTree(t *testing.T, b sandbox.Backend) {
	e := Start(t, b)
	mark := "31" + strconv.Itoa(os.Getpid()%1000) + ".25"
	// Children, a grandchild in its own session and process group, and
	// a foreground sleep.
	script := fmt.Sprintf("sleep %s & setsid sh -c 'sleep %s' & (sleep %s) & sleep %s; echo never", mark, mark, mark, mark)
	r := e.Run(t, script, 500*time.Millisecond)
	if !r.TimedOut || r.ExitCode != 124 || !strings.Contains(r.Note, "timed out") {
		t.Errorf("timeout not reported: %+v", r)
	}
	if strings.Contains(r.Output, "never") {
		t.Errorf("command went on: %q", r.Output)
	}
	if left := WaitGone(mark, 40); len(left) > 0 {
		t.Errorf("processes left after timeout: %v", left)
	}
	// The same through a fresh process.
	r = e.Exec(t, script, 500*time.Millisecond)
	if !r.TimedOut || r.ExitCode != 124 {
		t.Errorf("exec timeout: %+v", r)
	}
	if left := WaitGone(mark, 40); len(left) > 0 {
		t.Errorf("processes left after exec timeout: %v", left)
	}
	// The partial output comes back.
	r = e.Run(t, "echo before; sleep 30", 2*time.Second)
	if r.Output != "before\n" && !strings.HasPrefix(r.Output, "before\n") {
		t.Errorf("partial output: %q", r.Output)
	}
	// A process that ignores SIGTERM is killed all the same.
	r = e.Run(t, "trap '' TERM; sleep "+mark, 300*time.Millisecond)
	if !r.TimedOut {
		t.Errorf("TERM-ignoring: %+v", r)
	}
	if left := WaitGone(mark, 40); len(left) > 0 {
		t.Errorf("TERM-ignoring process left: %v", left)
	}
	if r := e.Run(t, "echo ok"); r.Output != "ok\n" {
		t.Errorf("shell after timeouts: %+v", r)
	}
}

func testTimeoutBuiltin(t *testing.T, b sandbox.Backend) {
	e := Start(t, b)
	e.Run(t, "export STAYS=yes")
	// The shell itself spins: only ending the shell stops it.
	r := e.Run(t, "while :; do :; done", 300*time.Millisecond)
	if !r.TimedOut || r.ExitCode != 124 {
		t.Errorf("builtin loop: %+v", r)
	}
	if r := e.Run(t, "echo $STAYS"); r.Output != "yes\n" {
		t.Errorf("after restart: %+v", r)
	}
}

func testCancel(t *testing.T, b sandbox.Backend) {
	e := Start(t, b)
	mark := "32" + strconv.Itoa(os.Getpid()%1000) + ".5"
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	r, err := e.Session.Run(ctx, sandbox.Command{Script: "sleep " + mark})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Canceled || r.ExitCode != 130 {
		t.Errorf("cancel: %+v", r)
	}
	if left := WaitGone(mark, 40); len(left) > 0 {
		t.Errorf("left after cancel: %v", left)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	r, err = e.Session.Exec(ctx, sandbox.Command{Script: "sleep " + mark})
	if err != nil || !r.Canceled {
		t.Errorf("exec cancel: %v %+v", err, r)
	}
	if left := WaitGone(mark, 40); len(left) > 0 {
		t.Errorf("left after exec cancel: %v", left)
	}
}

func testConcurrent(t *testing.T, b sandbox.Backend) {
	e := Start(t, b)
	const n = 12
	var wg sync.WaitGroup
	errs := make(chan error, n+1)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := e.Session.Exec(context.Background(), sandbox.Command{Script: fmt.Sprintf("sleep 0.2; echo job%d; exit %d", i, i)})
			switch {
			case err != nil:
				errs <- err
			case r.Output != fmt.Sprintf("job%d\n", i) || r.ExitCode != i:
				errs <- fmt.Errorf("job %d: %q exit %d", i, r.Output, r.ExitCode)
			}
		}()
	}
	// The persistent shell keeps working meanwhile.
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 5 {
			r, err := e.Session.Run(context.Background(), sandbox.Command{Script: fmt.Sprintf("echo run%d", i)})
			if err != nil || r.Output != fmt.Sprintf("run%d\n", i) {
				errs <- fmt.Errorf("run %d: %v %+v", i, err, r)
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func testBackground(t *testing.T, b sandbox.Backend) {
	e := Start(t, b)
	// The tick is renamed into place: a reader never sees it truncated.
	e.Run(t, "(i=0; while :; do i=$((i+1)); echo $i > /tmp/tick.new; mv /tmp/tick.new /tmp/tick; sleep 0.05; done) >/dev/null 2>&1 &")
	first := e.Run(t, "sleep 0.5; cat /tmp/tick").Output
	second := e.Run(t, "sleep 0.5; cat /tmp/tick").Output
	if first == "" || first == second {
		t.Errorf("background loop not running between calls: %q %q", first, second)
	}
}

func testCloseKills(t *testing.T, b sandbox.Backend) {
	e := Start(t, b)
	mark := "33" + strconv.Itoa(os.Getpid()%1000) + ".75"
	e.Run(t, "sleep "+mark+" & setsid sleep "+mark+" & (trap '' HUP; exec sleep "+mark+") >/dev/null 2>&1 &")
	e.Exec(t, "sleep "+mark+" >/dev/null 2>&1 &")
	got := 0
	for range 100 {
		if got = len(running(HostProcsWith(mark))); got >= 4 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got < 4 {
		t.Fatalf("expected 4 background sleeps, found %d", got)
	}
	if err := e.Session.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if left := WaitGone(mark, 40); len(left) > 0 {
		t.Errorf("processes outlived the session: %v", left)
	}
	if _, err := e.Session.Run(context.Background(), sandbox.Command{Script: "true"}); !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("run after close: %v", err)
	}
}

func testMounts(t *testing.T, b sandbox.Backend) {
	rw := UserFolder(t)
	os.WriteFile(filepath.Join(rw, "in.txt"), []byte("from host\n"), 0o600)
	GiveToUser(t, filepath.Join(rw, "in.txt"))
	e := Start(t, b, func(o *sandbox.SessionOptions) {
		o.Spec.Binds = append(o.Spec.Binds, sandbox.Bind{Host: rw, Guest: "/mnt/rw"})
	})
	r := e.Run(t, "cat /mnt/rw/in.txt; echo written > /mnt/rw/out.txt")
	if r.Output != "from host\n" || r.ExitCode != 0 {
		t.Errorf("rw mount: %+v", r)
	}
	if b, _ := os.ReadFile(filepath.Join(rw, "out.txt")); string(b) != "written\n" {
		t.Errorf("write did not reach the host: %q", b)
	}
	// What the computer writes in a user's folder is the user's.
	if fi, err := os.Lstat(filepath.Join(rw, "out.txt")); err == nil {
		uid := fi.Sys().(*syscall.Stat_t).Uid
		if want := FolderOwner(); uid != want && b.Tier() != sandbox.TierNone {
			t.Errorf("a file the computer wrote into a user's folder belongs to host uid %d, not to the folder's owner %d", uid, want)
		}
	}
	if _, err := sandbox.ParseMount("/definitely/not/here:/mnt/x"); !errors.Is(err, sandbox.ErrBadMount) {
		t.Errorf("missing host path: %v", err)
	}
	for _, bad := range []string{"relative:/x", "/tmp:relative", "/tmp:/x:rx", "/tmp:/workspace", "/tmp:/", "/tmp:/den"} {
		if _, err := sandbox.ParseMount(bad); !errors.Is(err, sandbox.ErrBadMount) {
			t.Errorf("ParseMount(%q): %v", bad, err)
		}
	}
}

func testBadTimeout(t *testing.T, b sandbox.Backend) {
	e := Start(t, b)
	for _, d := range []time.Duration{-time.Second, 1000 * time.Hour} {
		if _, err := e.Session.Run(context.Background(), sandbox.Command{Script: "true", Timeout: d}); !errors.Is(err, sandbox.ErrBadTimeout) {
			t.Errorf("run timeout %v: %v", d, err)
		}
		if _, err := e.Session.Exec(context.Background(), sandbox.Command{Script: "true", Timeout: d}); !errors.Is(err, sandbox.ErrBadTimeout) {
			t.Errorf("exec timeout %v: %v", d, err)
		}
	}
}

func testLayout(t *testing.T, b sandbox.Backend) {
	e := Start(t, b)
	r := e.Run(t, "pwd; id -u; stat -c %a /tmp; touch /run/den/x 2>/dev/null && echo writable-control || echo ro-control")
	lines := strings.Split(strings.TrimSpace(r.Output), "\n")
	want := []string{"/workspace", "0", "1777"}
	for i, w := range want {
		if i >= len(lines) || lines[i] != w {
			t.Errorf("layout line %d: got %q want %q (all: %q)", i, lines, w, r.Output)
		}
	}
}

// Escapes: these must fail inside an isolating sandbox.

func escapeReadHost(t *testing.T, b sandbox.Backend) {
	secret := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(secret, []byte("host-secret-7731\n"), 0o600)
	e := Start(t, b)
	r := e.Run(t, "cat "+secret+"; cat /etc/shadow 2>/dev/null | head -1; ls /home 2>&1")
	if strings.Contains(r.Output, "host-secret-7731") {
		t.Errorf("read a host file: %q", r.Output)
	}
	host, _ := os.ReadFile("/etc/hostname")
	if r := e.Run(t, "cat /etc/hostname; hostname"); strings.Contains(r.Output, strings.TrimSpace(string(host))) && strings.TrimSpace(string(host)) != "den" {
		t.Errorf("host's hostname visible: %q", r.Output)
	}
}

func escapeReadOnly(t *testing.T, b sandbox.Backend) {
	ro := UserFolder(t)
	os.WriteFile(filepath.Join(ro, "keep.txt"), []byte("original\n"), 0o644)
	GiveToUser(t, filepath.Join(ro, "keep.txt"))
	e := Start(t, b, func(o *sandbox.SessionOptions) {
		o.Spec.Binds = append(o.Spec.Binds, sandbox.Bind{Host: ro, Guest: "/mnt/ro", ReadOnly: true})
	})
	r := e.Run(t, "echo x > /mnt/ro/keep.txt; echo y > /mnt/ro/new.txt; rm -f /mnt/ro/keep.txt; chmod 777 /mnt/ro; mount -o remount,rw /mnt/ro; echo z > /mnt/ro/new2.txt; cat /mnt/ro/keep.txt")
	if !strings.Contains(r.Output, "Read-only file system") {
		t.Errorf("no read-only error: %q", r.Output)
	}
	got, _ := os.ReadFile(filepath.Join(ro, "keep.txt"))
	if string(got) != "original\n" {
		t.Errorf("read-only file changed: %q", got)
	}
	ents, _ := os.ReadDir(ro)
	if len(ents) != 1 {
		t.Errorf("files appeared in a read-only mount: %v", ents)
	}
	// The control folder is read-only too.
	if r := e.Run(t, "echo x > /run/den/planted && echo WROTE; rm -rf /run/den/jobs && echo REMOVED"); strings.Contains(r.Output, "WROTE") || strings.Contains(r.Output, "REMOVED") {
		t.Errorf("control folder writable")
	}
}

func escapeProcesses(t *testing.T, b sandbox.Backend) {
	e := Start(t, b)
	r := e.Run(t, "ls /proc | grep -c '^[0-9]'; cat /proc/1/cmdline | tr '\\0' ' '")
	lines := strings.SplitN(r.Output, "\n", 2)
	n, _ := strconv.Atoi(strings.TrimSpace(lines[0]))
	if n == 0 || n > 20 {
		t.Errorf("sees %d processes (host has %d): %q", n, len(sandbox.AllPids()), r.Output)
	}
	if r := e.Run(t, "kill -0 "+strconv.Itoa(os.Getpid())+" && echo SIGNALLED"); strings.Contains(r.Output, "SIGNALLED") && os.Getpid() > 20 {
		t.Errorf("could signal the test process's pid")
	}
}

func escapeMount(t *testing.T, b sandbox.Backend) {
	e := Start(t, b)
	r := e.Run(t, "mkdir -p /tmp/m; mount -t tmpfs none /tmp/m && echo MOUNTED; mount --bind / /tmp/m && echo BOUND; unshare -U true && echo UNSHARED; unshare -m true && echo UNSHARED2")
	for _, bad := range []string{"MOUNTED", "BOUND", "UNSHARED"} {
		if strings.Contains(r.Output, bad) {
			t.Errorf("%s inside the sandbox: %q", bad, r.Output)
		}
	}
	r = e.Run(t, "grep Seccomp: /proc/self/status")
	if !strings.Contains(r.Output, "2") {
		t.Errorf("no seccomp filter: %q", r.Output)
	}
}

func escapeNetwork(t *testing.T, b sandbox.Backend) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("host-listener\n"))
			c.Close()
		}
	}()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	e := Start(t, b, func(o *sandbox.SessionOptions) { o.Spec.Network = false })
	r := e.Run(t, "cat /proc/net/dev | tail -n +3 | cut -d: -f1; nc -w 2 127.0.0.1 "+port+" </dev/null 2>&1", 20*time.Second)
	if strings.Contains(r.Output, "host-listener") {
		t.Errorf("reached the host network: %q", r.Output)
	}
	for _, line := range strings.Split(r.Output, "\n") {
		if strings.TrimSpace(line) != "" && !strings.Contains(line, "lo") && !strings.Contains(line, "refused") && !strings.Contains(line, "wget") && !strings.Contains(line, "nc") {
			t.Errorf("unexpected line (an interface other than lo?): %q", line)
		}
	}
	// With the network on, the computer has a network of its own: the
	// internet, not the host's loopback nor its abstract sockets.
	abstract := "@den-test-" + strconv.Itoa(os.Getpid())
	ul, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer ul.Close()
	reached := make(chan struct{}, 16)
	go func() {
		for {
			c, err := ul.Accept()
			if err != nil {
				return
			}
			reached <- struct{}{}
			c.Write([]byte("host-abstract\n"))
			c.Close()
		}
	}()
	on := Start(t, b)
	r = on.Run(t, "cat /proc/net/dev | tail -n +3 | cut -d: -f1; ip route 2>/dev/null; "+
		"nc -w 2 127.0.0.1 "+port+" </dev/null 2>&1; nc -w 2 10.0.2.2 "+port+" </dev/null 2>&1; "+
		"cat /proc/net/unix | grep -c den-test; echo end", 20*time.Second)
	if strings.Contains(r.Output, "host-listener") || strings.Contains(r.Output, "host-abstract") {
		t.Errorf("network on reached the host's loopback: %q", r.Output)
	}
	if !strings.Contains(r.Output, "den0") || !strings.Contains(r.Output, "default via") {
		t.Errorf("network on has no interface or route of its own: %q", r.Output)
	}
	if lines := strings.Split(strings.TrimSpace(r.Output), "\n"); len(lines) < 2 || lines[len(lines)-2] != "0" {
		t.Errorf("the host's abstract socket is visible inside: %q", r.Output)
	}
	select {
	case <-reached:
		t.Error("something inside connected to the host's abstract socket")
	default:
	}
}

func escapeCaps(t *testing.T, b sandbox.Backend) {
	e := Start(t, b)
	r := e.Run(t, "grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status")
	for _, line := range strings.Split(strings.TrimSpace(r.Output), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 || strings.Trim(f[1], "0") != "" {
			t.Errorf("capabilities left: %q", line)
		}
	}
}

// escapeHostRoot: root inside is never host root. Every process of the
// sandbox runs as a host uid and gid other than 0, and what root inside
// writes is owned by one.
func escapeHostRoot(t *testing.T, b sandbox.Backend) {
	e := Start(t, b)
	r := e.Run(t, "id -u; echo x > /workspace/mine; sleep 30 & echo started")
	if !strings.HasPrefix(r.Output, "0\n") {
		t.Fatalf("not root inside: %q", r.Output)
	}
	members, err := e.Session.Process().Members()
	if err != nil || len(members) == 0 {
		t.Fatalf("members: %v %v", members, err)
	}
	for _, pid := range members {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) >= 5 && (f[0] == "Uid:" || f[0] == "Gid:") {
				for _, id := range f[1:] {
					if id == "0" {
						t.Errorf("process %d of the sandbox has host %s %s", pid, f[0], strings.Join(f[1:], " "))
					}
				}
			}
		}
	}
	var st syscall.Stat_t
	if err := syscall.Lstat(filepath.Join(e.Workspace, "mine"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Uid == 0 || st.Gid == 0 {
		t.Errorf("a file root inside wrote belongs to host %d:%d", st.Uid, st.Gid)
	}
}

// escapeKernelSettings: sysctls and the other global kernel interfaces
// of /proc cannot be changed or read from inside, whatever the uid.
func escapeKernelSettings(t *testing.T, b sandbox.Backend) {
	const knob = "/proc/sys/vm/stat_interval" // harmless, global
	before, err := os.ReadFile(knob)
	if err != nil {
		t.Skipf("%s: %v", knob, err)
	}
	want := "7\n"
	if string(before) == want {
		want = "9\n"
	}
	t.Cleanup(func() { os.WriteFile(knob, before, 0) })
	// core_pattern is written back with its own value: a write that
	// gets through proves the escape and changes nothing.
	e := Start(t, b)
	r := e.Run(t, "echo "+strings.TrimSpace(want)+" > "+knob+" && echo CHANGED; cat /proc/sys/kernel/core_pattern > /tmp/cp && cat /tmp/cp > /proc/sys/kernel/core_pattern && echo CORE; "+
		"echo h > /proc/sysrq-trigger 2>/dev/null && echo SYSRQ; head -c 16 /proc/kcore 2>/dev/null | wc -c; cat /proc/keys 2>/dev/null | wc -l; "+
		"mount -o remount,rw /proc/sys 2>/dev/null && echo REMOUNTED; grep ' /proc/sys ' /proc/self/mounts")
	after, _ := os.ReadFile(knob)
	if string(after) != string(before) || strings.Contains(r.Output, "CHANGED") {
		t.Errorf("a host sysctl changed from inside: %s -> %s (%q)", before, after, r.Output)
	}
	for _, bad := range []string{"CORE", "SYSRQ", "REMOUNTED"} {
		if strings.Contains(r.Output, bad) {
			t.Errorf("%s from inside: %q", bad, r.Output)
		}
	}
	if !strings.Contains(r.Output, " ro,") && !strings.Contains(r.Output, " ro ") {
		t.Errorf("/proc/sys is not mounted read-only inside: %q", r.Output)
	}
	for _, n := range strings.Fields(r.Output) {
		if n != "0" && !strings.HasPrefix(n, "proc") && strings.Trim(n, "0123456789") == "" {
			t.Errorf("read %s bytes or lines of /proc/kcore or /proc/keys: %q", n, r.Output)
		}
	}
}

// escapeSetuidPlant: a program the computer makes setuid, in its
// workspace or in a user's read-write folder, gives whoever runs it on
// the host no one's rights but the folder owner's or the computer's
// own unprivileged uid, never root's.
func escapeSetuidPlant(t *testing.T, b sandbox.Backend) {
	helper := euidHelper(t)
	shared := filepath.Join(os.TempDir(), "den-setuid-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(shared, 0o711); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	folder := filepath.Join(shared, "notes")
	os.Mkdir(folder, 0o755)
	GiveToUser(t, folder)
	e := Start(t, b, func(o *sandbox.SessionOptions) {
		o.Spec.Binds = append(o.Spec.Binds, sandbox.Bind{Host: folder, Guest: "/mnt/notes"},
			sandbox.Bind{Host: filepath.Dir(helper), Guest: "/mnt/helper", ReadOnly: true})
	})
	r := e.Run(t, "cp /mnt/helper/euid /mnt/notes/plant && chmod 6755 /mnt/notes/plant; cp /mnt/helper/euid /workspace/plant && chmod 6755 /workspace/plant; ls -ln /mnt/notes/plant /workspace/plant")
	t.Logf("inside: %s", r.Output)
	for _, plant := range []string{filepath.Join(folder, "plant"), filepath.Join(e.Workspace, "plant")} {
		fi, err := os.Lstat(plant)
		if err != nil {
			t.Fatalf("no plant on the host: %v (%q)", err, r.Output)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if st.Uid == 0 || st.Gid == 0 {
			t.Errorf("%s, planted from inside, belongs to host %d:%d", plant, st.Uid, st.Gid)
		}
		if plant == filepath.Join(folder, "plant") && st.Uid != FolderOwner() {
			t.Errorf("the plant belongs to host uid %d, not the folder's owner %d", st.Uid, FolderOwner())
		}
		if os.Geteuid() != 0 {
			continue // the computer's root is this user: nothing more to give
		}
		// Run it as another account, as a plant is meant to be used.
		run := exec.Command(plant)
		run.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
		out, err := run.CombinedOutput()
		if plant != filepath.Join(folder, "plant") {
			// The workspace is under den's private data dir: others
			// cannot even reach it. Here it is a test folder.
			if err != nil {
				continue
			}
		} else if err != nil {
			t.Fatalf("running the plant as nobody: %v: %s", err, out)
		}
		if f := strings.Fields(string(out)); len(f) != 2 || f[0] == "0" || f[1] == "0" {
			t.Errorf("a setuid program planted from inside ran on the host as %q (file %v %d:%d)", out, fi.Mode(), st.Uid, st.Gid)
		}
	}
}

var (
	helperOnce sync.Once
	helperPath string
	helperErr  error
)

// euidHelper builds, once per test binary, a static program that prints
// its effective uid and gid, in a folder anyone may read.
func euidHelper(t testing.TB) string {
	t.Helper()
	helperOnce.Do(func() {
		gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
		if _, err := os.Stat(gobin); err != nil {
			if gobin, helperErr = exec.LookPath("go"); helperErr != nil {
				return
			}
		}
		dir, err := os.MkdirTemp("", "den-euid-")
		if err != nil {
			helperErr = err
			return
		}
		os.Chmod(dir, 0o755)
		src := filepath.Join(dir, "main.go")
		os.WriteFile(src, []byte("package main\n\nimport (\"fmt\"\n\t\"os\"\n)\n\nfunc main() { fmt.Println(os.Geteuid(), os.Getegid()) }\n"), 0o644)
		cmd := exec.Command(gobin, "build", "-o", filepath.Join(dir, "euid"), src)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=", "GO111MODULE=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			helperErr = fmt.Errorf("build: %v: %s", err, out)
			return
		}
		os.Remove(src)
		helperPath = filepath.Join(dir, "euid")
	})
	if helperErr != nil {
		t.Fatalf("euid helper: %v", helperErr)
	}
	return helperPath
}
