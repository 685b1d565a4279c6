package loopguard

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/llm"
	"github.com/google/go-cmp/cmp"
)

// step is one call of a scripted run and the result it gets if it runs.
type step struct {
	name    string
	input   string
	known   bool
	result  string
	isError bool
}

func shell(cmd, out string) step {
	in, _ := json.Marshal(map[string]string{"command": cmd})
	return step{name: "shell_execute", input: string(in), known: true, result: out}
}

func missing(name string) step {
	return step{name: name, input: `{}`, result: "Unknown tool"}
}

// play runs steps through g the way the loop does and describes what
// happened at each step that was not a plain run: "warn", "final",
// "window", "unknown-warn" or "block", keyed by 1-based step number.
func play(g *Guard, steps []step) map[int]string {
	got := map[int]string{}
	for i, s := range steps {
		call := &llm.ToolCall{ID: "c" + strconv.Itoa(i), Name: s.name, Input: json.RawMessage(s.input)}
		block, warning := g.Before(call, s.known)
		if block {
			r := Blocked(call, warning)
			if r.CallID != call.ID || r.Name != call.Name || !r.IsError || !strings.HasPrefix(r.Content[0].(*llm.Text).Text, BlockedPrefix) {
				panic(fmt.Sprintf("bad blocked result %+v", r))
			}
			got[i+1] = "block"
			continue
		}
		if warning != "" {
			got[i+1] = "unknown-warn"
		}
		res := llm.ToolResult{CallID: call.ID, Name: call.Name, IsError: s.isError, Content: []llm.Part{&llm.Text{Text: s.result}}}
		switch w := g.After(call, res); {
		case strings.HasPrefix(w, "[LOOP WARNING — FINAL]"):
			got[i+1] = "final"
		case strings.Contains(w, "in your last"):
			got[i+1] = "window"
		case w != "":
			got[i+1] = "warn"
		}
	}
	return got
}

func repeat(n int, f func(i int) step) []step {
	var out []step
	for i := range n {
		out = append(out, f(i))
	}
	return out
}

func TestGuard(t *testing.T) {
	tests := []struct {
		name  string
		steps []step
		want  map[int]string
	}{
		{
			name:  "same missing tool",
			steps: repeat(12, func(int) step { return missing("bash") }),
			want:  map[int]string{5: "unknown-warn", 10: "block", 11: "block", 12: "block"},
		},
		{
			name: "missing tool between other calls",
			steps: repeat(20, func(i int) step {
				if i%2 == 0 {
					return missing("bash")
				}
				return shell("echo "+strconv.Itoa(i), strconv.Itoa(i))
			}),
			want: map[int]string{9: "unknown-warn", 19: "block"},
		},
		{
			name:  "different missing tools",
			steps: repeat(12, func(i int) step { return missing("tool" + strconv.Itoa(i)) }),
			want:  map[int]string{},
		},
		{
			name:  "breaker: same call, same result",
			steps: repeat(32, func(int) step { return shell("make test", "FAIL: TestX\n[exit code: 2]") }),
			want:  map[int]string{10: "warn", 20: "warn", 30: "final", 31: "block", 32: "block"},
		},
		{
			name: "breaker: same failing edit",
			steps: repeat(31, func(int) step {
				return step{name: "file_edit", input: `{"path":"a.go","old_string":"x","new_string":"y"}`, known: true,
					result: "old_string was not found in /workspace/a.go", isError: true}
			}),
			want: map[int]string{10: "warn", 20: "warn", 30: "final", 31: "block"},
		},
		{
			name: "polling a log whose timestamps change",
			steps: repeat(22, func(i int) step {
				ts := time.Date(2026, 3, 1, 10, 0, i*5, 0, time.UTC)
				return shell("sleep 5; tail -n 2 server.log",
					fmt.Sprintf("%s waiting for db (took %dms)\nreq=%s\n[exit code: 0]", ts.Format(time.RFC3339Nano), 10+i, fmt.Sprintf("%016x", 0xabc0000+i)))
			}),
			want: map[int]string{10: "warn", 20: "final", 21: "block", 22: "block"},
		},
		{
			name: "polling ps: the grep's own pid changes",
			steps: repeat(21, func(i int) step {
				return shell("ps aux | grep server", fmt.Sprintf(
					"root %d 0.0 0.1 %d 720 pts/0 S+ 10:%02d 0:00 grep server\n[exit code: 1]", 4000+i, 6400+i, i%60))
			}),
			want: map[int]string{10: "warn", 20: "final", 21: "block"},
		},
		{
			name: "reading the same file again and again",
			steps: repeat(21, func(int) step {
				return step{name: "file_read", input: `{"path":"out.txt"}`, known: true, result: "done: no"}
			}),
			want: map[int]string{10: "warn", 20: "final", 21: "block"},
		},
		{
			name: "two polls alternating",
			steps: repeat(42, func(i int) step {
				if i%2 == 0 {
					return shell("cat status", "pending")
				}
				return shell("ls out", "ls: out: No such file or directory")
			}),
			want: map[int]string{19: "warn", 20: "warn", 39: "final", 40: "final", 41: "block", 42: "block"},
		},
		{
			name: "a counter is progress",
			steps: repeat(50, func(i int) step {
				return shell("cat counter", strconv.Itoa(i)+"\n[exit code: 0]")
			}),
			want: map[int]string{},
		},
		{
			name: "a growing download is progress",
			steps: repeat(40, func(i int) step {
				return shell("sleep 5; ls -l file.iso", fmt.Sprintf("-rw-r--r-- 1 root root %d Mar  1 10:%02d file.iso", 1000*i, i))
			}),
			want: map[int]string{},
		},
		{
			name: "edit then test: the edits are progress",
			steps: repeat(60, func(i int) step {
				if i%2 == 0 {
					return step{name: "file_edit", input: fmt.Sprintf(`{"path":"a.go","old_string":"v%d","new_string":"v%d"}`, i, i+1),
						known: true, result: "Edited a.go"}
				}
				return shell("go test ./...", fmt.Sprintf("FAIL: TestX (0.01s): got v%d\n[exit code: 1]", i))
			}),
			want: map[int]string{},
		},
		{
			name: "edits that never change the failure",
			steps: repeat(60, func(i int) step {
				if i%2 == 0 {
					return step{name: "file_edit", input: fmt.Sprintf(`{"path":"a.go","old_string":"v%d","new_string":"v%d"}`, i, i+1),
						known: true, result: "Edited a.go"}
				}
				return shell("go test ./...", "FAIL: TestX (0.01s)\n[exit code: 1]")
			}),
			// Each edit restarts the streak; only the window notices.
			want: map[int]string{20: "window"},
		},
		{
			name: "flapping result in the window",
			steps: repeat(21, func(i int) step {
				return shell("make", []string{"error: lock held", "error: timeout"}[i%2])
			}),
			want: map[int]string{10: "window", 20: "window"},
		},
		{
			name: "window: counted regardless of result, unless mostly new",
			steps: repeat(12, func(i int) step {
				return shell("curl -s localhost:8080/health", []string{"starting", "starting", "ok", "starting", "down"}[i%5])
			}),
			want: map[int]string{10: "window"},
		},
		{
			name: "a new action resets a repeat",
			steps: append(append(
				repeat(15, func(int) step { return shell("make test", "FAIL") }),
				shell("git stash", "Saved working directory")),
				repeat(15, func(int) step { return shell("make test", "FAIL") })...),
			// The window still sees 20 identical calls among the last 30.
			want: map[int]string{10: "warn", 21: "window", 26: "warn"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := play(New(Config{}), tt.steps)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConfigThresholds(t *testing.T) {
	g := New(Config{Warning: 2, Breaker: 4, Critical: 3, Unknown: 2})
	got := play(g, repeat(5, func(int) step { return shell("make", "same") }))
	want := map[int]string{2: "warn", 4: "final", 5: "block"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("non-poll (-want +got):\n%s", diff)
	}
	got = play(g, repeat(4, func(int) step { return shell("cat x", "same") }))
	want = map[int]string{2: "warn", 3: "final", 4: "block"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("poll (-want +got):\n%s", diff)
	}
	poll := New(Config{Poll: func(*llm.ToolCall) bool { return true }, Critical: 2, Warning: 5})
	got = play(poll, repeat(3, func(int) step { return shell("make", "same") }))
	want = map[int]string{2: "final", 3: "block"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("custom Poll (-want +got):\n%s", diff)
	}
}

func TestBlockedStaysUntilProgress(t *testing.T) {
	g := New(Config{Breaker: 3, Warning: 2})
	same := shell("make", "FAIL")
	got := play(g, []step{same, same, same, same, shell("vi fix", "fixed"), same, same})
	want := map[int]string{2: "warn", 3: "final", 4: "block", 6: "window", 7: "warn"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestKey(t *testing.T) {
	ignore := map[string]bool{"tool_title": true}
	key := func(name, input string) string {
		return callKey(&llm.ToolCall{Name: name, Input: json.RawMessage(input)}, ignore)
	}
	same := []struct{ a, b string }{
		{`{"command":"ls","timeout":5}`, `{"timeout":5,"command":"ls"}`},
		{`{"command":"ls","tool_title":"List files"}`, `{"tool_title":"Show the folder","command":"ls"}`},
		{`{"command":"ls"}`, `{"command":"ls","tool_title":"x"}`},
		{`{"a":{"x":1,"y":[{"q":1,"p":2}]}}`, ` {"a":{"y":[{"p":2,"q":1}],"x":1}} `},
		{`{"command":"a && b > c"}`, `{"command":"a \u0026\u0026 b \u003e c"}`},
	}
	for _, tt := range same {
		if key("t", tt.a) != key("t", tt.b) {
			t.Errorf("keys differ for %s and %s", tt.a, tt.b)
		}
	}
	differ := []struct{ na, a, nb, b string }{
		{"t", `{"command":"ls"}`, "t", `{"command":"ls -a"}`},
		{"t", `{"command":"ls"}`, "u", `{"command":"ls"}`},
		{"t", `{"a":{"tool_title":"x"}}`, "t", `{"a":{"tool_title":"y"}}`}, // only top-level fields are UI-only
		{"t", `{"n":1}`, "t", `{"n":"1"}`},
		{"t", `{"x":[1,2]}`, "t", `{"x":[2,1]}`},
		{"t", `{"x": broken`, "t", `{"x": broken!`},
	}
	for _, tt := range differ {
		if key(tt.na, tt.a) == key(tt.nb, tt.b) {
			t.Errorf("keys equal for %s %s and %s %s", tt.na, tt.a, tt.nb, tt.b)
		}
	}
}

func TestNormalize(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"iso", "at 2026-03-01T10:00:05.123Z ready", "at <time> ready"},
		{"iso offset", "2026-03-01 10:00:05+01:00 started", "<time> started"},
		{"iso minutes", "2026-03-01T10:00 x", "<time> x"},
		{"clock", "[10:00:05] ok, elapsed 0:01", "[<time>] ok, elapsed <time>"},
		{"clock millis", "15:04:05.999 tick", "<time> tick"},
		{"file positions stay", "main.go:12:34: undefined: x", "main.go:12:34: undefined: x"},
		{"host port stays", "listening on localhost:8080", "listening on localhost:8080"},
		{"compact", "/tmp/backup-20260301-100005.tar", "/tmp/backup-<time>.tar"},
		{"uuid", "request 123e4567-e89b-12d3-a456-426614174000 failed", "request <id> failed"},
		{"trace id", "trace_id=4bf92f3577b34da6a3ce929d0e0e4736 span 00f067aa0ba902b7", "trace_id=<id> span <id>"},
		{"short hex stays", "commit abc1234 and deadbeefcafe", "commit abc1234 and deadbeefcafe"},
		{"hex words stay", "feedfacedeadbeefcafe", "feedfacedeadbeefcafe"},
		{"epoch s", "ts=1772366400 n=5", "ts=<time> n=5"},
		{"epoch ms", "1772366400123", "<time>"},
		{"epoch ns", "1772366400123456789", "<time>"},
		{"epoch frac", "1772366400.25", "<time>"},
		{"far numbers stay", "size 1000000000 and 9999999999", "size 1000000000 and 9999999999"},
		{"durations", "ok 12ms, 3.2s, 1m30s, 850µs", "ok <dur>, <dur>, <dur>, <dur>"},
		{"duration words", "took 3.2 seconds (12 ms)", "took <dur> (<dur>)"},
		{"go test", "ok  \tden.dev/x\t0.015s", "ok  \tden.dev/x\t<dur>"},
		{"counts stay", "3 files, 45% done, 12.5MB", "3 files, 45% done, 12.5MB"},
		{"pid words", "server started (pid 4242), PID: 77", "server started (pid <pid>), PID: <pid>"},
		{"offload", "saved in /den/offloads/shell-20260301-100005-ab12cd34.txt]", "saved in /den/offloads/<file>]"},
		{
			"ps with header",
			"  PID TTY          TIME CMD\n 4242 pts/0    00:00:01 node server.js\n 4250 pts/0    00:00:00 ps",
			"  PID TTY          TIME CMD\n<n> pts/0 <n> node server.js\n<n> pts/0 <n> ps",
		},
		{
			"ps aux with header",
			"USER PID %CPU %MEM VSZ RSS TTY STAT START TIME COMMAND\nroot 1 0.0 0.1 1024 512 ? Ss 10:00 0:00 /sbin/init splash",
			"USER PID %CPU %MEM VSZ RSS TTY STAT START TIME COMMAND\nroot <n> <n> <n> <n> <n> ? Ss <time> <n> /sbin/init splash",
		},
		{
			"ps aux line without header",
			"root      4242  0.0  0.0   6432   720 pts/0    S+   10:32   0:00 grep server",
			"root <n> <n> <n> <n> <n> pts/0 S+ <time> <time> grep server",
		},
		{
			"ps -ef line without header",
			"root      4242     1  0 10:32 ?        00:00:03 node server.js",
			"root <n> <n> <n> <time> ? <n> node server.js",
		},
		{"table of numbers stays", "a 1 2 3\nb 4 5 6", "a 1 2 3\nb 4 5 6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := normalize(tt.in, now, false); got != tt.want {
				t.Errorf("normalize(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
	if got := normalize("4242\n4250\n", now, true); got != "<pid>\n<pid>\n" {
		t.Errorf("pgrep output: got %q", got)
	}
}

func TestResultHash(t *testing.T) {
	g := New(Config{})
	call := &llm.ToolCall{Name: "shell_execute", Input: json.RawMessage(`{"command":"pgrep node"}`)}
	h := func(text string, isErr bool, parts ...llm.Part) string {
		return g.resultHash(call, llm.ToolResult{IsError: isErr, Content: append([]llm.Part{&llm.Text{Text: text}}, parts...)})
	}
	if h("4242\n", false) != h("4250\n", false) {
		t.Error("pgrep pids should not count as a change")
	}
	if h("x", false) == h("x", true) {
		t.Error("an error result should differ from a success with the same text")
	}
	img := func(b byte) llm.Part { return &llm.Image{MediaType: "image/png", Data: []byte{b}} }
	if h("x", false, img(1)) == h("x", false, img(2)) {
		t.Error("different images should differ")
	}
	if h("x", false, img(1)) != h("x", false, img(1)) {
		t.Error("equal images should be equal")
	}
}

func TestIsPoll(t *testing.T) {
	tests := []struct {
		name, input string
		want        bool
	}{
		{"file_read", `{"path":"x"}`, true},
		{"read_image", `{"path":"x.png"}`, true},
		{"file_write", `{"path":"x","content":""}`, false},
		{"file_edit", `{"path":"x","old_string":"a","new_string":"b"}`, false},
		{"mcp_thing", `{}`, false},
	}
	cmds := []struct {
		cmd  string
		want bool
	}{
		{"cat log", true},
		{"ps aux | grep server", true},
		{"sleep 5; tail -n 20 /var/log/app.log", true},
		{"sleep 10 && curl -s localhost:8080/health 2>&1", true},
		{"ls -la /tmp >/dev/null 2>&1 && echo yes", true},
		{"docker ps", true},
		{"git status --short", true},
		{"FOO=1 timeout 5 cat x", true},
		{"/usr/bin/tail -f x", true},
		{"echo hi > file", false},
		{"cat a | tee b", false},
		{"make test", false},
		{"rm -rf build", false},
		{"curl -X POST localhost/api", false},
		{"curl -d x=1 localhost/api", false},
		{"curl -o out.zip https://x", false},
		{"find . -name '*.tmp' -delete", false},
		{"docker run alpine", false},
		{"git commit -m x", false},
		{"cat $(ls)", false},
		{"sleep 5 & kill %1", false},
		{"", false},
	}
	for _, c := range cmds {
		in, _ := json.Marshal(map[string]string{"command": c.cmd})
		tests = append(tests, struct {
			name, input string
			want        bool
		}{"shell_execute", string(in), c.want})
	}
	for _, tt := range tests {
		if got := IsPoll(&llm.ToolCall{Name: tt.name, Input: json.RawMessage(tt.input)}); got != tt.want {
			t.Errorf("IsPoll(%s %s) = %v, want %v", tt.name, tt.input, got, tt.want)
		}
	}
}

func TestAnnotate(t *testing.T) {
	orig := llm.ToolResult{CallID: "1", Content: []llm.Part{&llm.Text{Text: "out"}}}
	got := Annotate(orig, "[LOOP WARNING] x")
	if len(orig.Content) != 1 {
		t.Fatal("Annotate changed its argument")
	}
	if len(got.Content) != 2 || got.Content[1].(*llm.Text).Text != "\n\n[LOOP WARNING] x" || got.CallID != "1" {
		t.Errorf("Annotate = %+v", got)
	}
	if r := Annotate(orig, ""); len(r.Content) != 1 {
		t.Error("an empty warning should add nothing")
	}
	b := Blocked(&llm.ToolCall{ID: "7", Name: "shell_execute"}, "[LOOP BLOCKED] already")
	if txt := b.Content[0].(*llm.Text).Text; txt != "[LOOP BLOCKED] already" {
		t.Errorf("Blocked doubled its prefix: %q", txt)
	}
}

// TestConcurrentUse runs Before and After from several goroutines;
// the race detector checks the locking.
func TestConcurrentUse(t *testing.T) {
	g := New(Config{})
	done := make(chan struct{})
	for w := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 50 {
				call := &llm.ToolCall{ID: fmt.Sprint(w, i), Name: "shell_execute", Input: json.RawMessage(`{"command":"cat x"}`)}
				if block, _ := g.Before(call, true); !block {
					g.After(call, llm.ToolResult{Content: []llm.Part{&llm.Text{Text: "same"}}})
				}
			}
		}()
	}
	for range 4 {
		<-done
	}
}
