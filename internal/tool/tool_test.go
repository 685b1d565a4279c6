package tool_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/bwrap"
	"den.dev/den/internal/sandbox/sandboxtest"
	"den.dev/den/internal/tool"
)

// computer is one test's session and the registry of built-in tools.
type computer struct {
	*sandboxtest.Env
	reg *tool.Registry
	env *tool.Env
}

func start(t testing.TB) *computer {
	t.Helper()
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	b, err := bwrap.New("")
	if err != nil {
		t.Fatal(err)
	}
	e := sandboxtest.Start(t, b)
	reg, err := tool.NewRegistry(tool.Builtin()...)
	if err != nil {
		t.Fatal(err)
	}
	return &computer{Env: e, reg: reg, env: &tool.Env{Computer: e.Session, Images: true}}
}

// call runs a tool call in sequence and returns its result.
func (c *computer) call(t testing.TB, name, input string) llm.ToolResult {
	t.Helper()
	return c.callWith(t, c.env, name, input, false)
}

func (c *computer) callWith(t testing.TB, env *tool.Env, name, input string, concurrent bool) llm.ToolResult {
	t.Helper()
	r, err := c.reg.Call(context.Background(), env, llm.ToolCall{ID: "c1", Name: name, Input: json.RawMessage(input)}, concurrent)
	if err != nil {
		t.Fatalf("%s %s: %v", name, input, err)
	}
	if r.CallID != "c1" || r.Name != name {
		t.Fatalf("result answers %q/%q, want c1/%s", r.CallID, r.Name, name)
	}
	return r
}

// text is the result's text parts, joined.
func text(r llm.ToolResult) string {
	var b strings.Builder
	for _, p := range r.Content {
		if t, ok := p.(*llm.Text); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func mustOK(t testing.TB, r llm.ToolResult, want ...string) string {
	t.Helper()
	s := text(r)
	if r.IsError {
		t.Fatalf("error result: %s", s)
	}
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("result does not contain %q:\n%s", w, s)
		}
	}
	return s
}

func mustFail(t testing.TB, r llm.ToolResult, want ...string) string {
	t.Helper()
	s := text(r)
	if !r.IsError {
		t.Fatalf("not an error result: %s", s)
	}
	for _, w := range want {
		if !strings.Contains(s, w) {
			t.Errorf("error does not contain %q:\n%s", w, s)
		}
	}
	return s
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func (c *computer) put(t testing.TB, name string, data []byte) {
	t.Helper()
	p := filepath.Join(c.Workspace, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Own(t, p) // as den gives the computer what it puts there
}

func (c *computer) get(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(c.Workspace, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRegistryErrors(t *testing.T) {
	c := start(t)
	mustFail(t, c.call(t, "shell_exec", `{"command": "ls"}`),
		`Unknown tool "shell_exec"`, "shell_execute, file_read, file_write, file_edit, read_image")
	mustFail(t, c.call(t, "shell_execute", `{}`), `missing required field "command"`)
	mustFail(t, c.call(t, "shell_execute", `{"command": 5}`), "command: want a string, got the number 5")
	mustFail(t, c.call(t, "shell_execute", `{"command": "ls", "timeout": "10"}`), `timeout: want an integer, got the string "10"`)
	mustFail(t, c.call(t, "shell_execute", `{"command": "ls", "timeout": 0}`), "timeout: 0 is below the minimum 1")
	mustFail(t, c.call(t, "shell_execute", `{"command": "ls", "cwd": "/"}`), `unknown field "cwd" (allowed: command, timeout)`)
	mustFail(t, c.call(t, "shell_execute", `["ls"]`), "must be a JSON object, got an array")
	mustFail(t, c.call(t, "shell_execute", `{"command": "ls"`), "not valid JSON")
	mustFail(t, c.call(t, "file_read", `{"path": "a", "max_chars": 100000}`), "max_chars: 100000 is above the maximum 80000")
	mustFail(t, c.call(t, "file_write", `{"path": "a"}`), `missing required field "content"`)

	// tool_title is accepted (any type) and never reaches the tool.
	mustOK(t, c.call(t, "shell_execute", `{"command": "echo hi", "tool_title": "Say hi"}`), "hi\n[exit code: 0]")
	mustOK(t, c.call(t, "shell_execute", `{"command": "echo hi", "tool_title": 7}`), "hi")
	// null for an optional field means "not given".
	mustOK(t, c.call(t, "shell_execute", `{"command": "echo hi", "timeout": null}`), "hi")

	if got := tool.Title(llm.ToolCall{Name: "file_read", Input: json.RawMessage(`{"tool_title": " Read the notes "}`)}); got != "Read the notes" {
		t.Errorf("Title = %q", got)
	}
	if got := tool.Title(llm.ToolCall{Name: "file_read", Input: json.RawMessage(`{}`)}); got != "file_read" {
		t.Errorf("Title without tool_title = %q", got)
	}
}

// panicky is a tool that panics.
type panicky struct{}

func (panicky) Spec() llm.Tool {
	return llm.Tool{Name: "panicky", Schema: json.RawMessage(`{"type": "object", "properties": {}}`)}
}
func (panicky) ReadOnly(json.RawMessage) bool { return true }
func (panicky) Run(context.Context, *tool.Env, json.RawMessage) (tool.Result, error) {
	var m map[string]int
	m["x"] = 1
	return tool.Result{}, nil
}

func TestPanicBecomesErrorResult(t *testing.T) {
	reg, err := tool.NewRegistry(panicky{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := reg.Call(context.Background(), &tool.Env{}, llm.ToolCall{ID: "1", Name: "panicky", Input: json.RawMessage(`{}`)}, false)
	if err != nil {
		t.Fatal(err)
	}
	mustFail(t, r, "panicky failed with an internal error", "nil map")
}

func TestReadOnly(t *testing.T) {
	reg, err := tool.NewRegistry(tool.Builtin()...)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{
		"file_read": true, "read_image": true, "shell_execute": false, "file_write": false, "file_edit": false,
	} {
		input := `{"path": "x", "command": "x", "content": "", "old_string": "a", "new_string": "b"}`
		// Give each tool exactly the fields it takes.
		switch name {
		case "file_read", "read_image":
			input = `{"path": "x"}`
		case "shell_execute":
			input = `{"command": "x"}`
		case "file_write":
			input = `{"path": "x", "content": ""}`
		case "file_edit":
			input = `{"path": "x", "old_string": "a", "new_string": "b"}`
		}
		if got := reg.ReadOnly(llm.ToolCall{Name: name, Input: json.RawMessage(input)}); got != want {
			t.Errorf("ReadOnly(%s) = %v, want %v", name, got, want)
		}
	}
	if tool.ShellMaxTimeout*time.Second > sandbox.MaxTimeout {
		t.Errorf("ShellMaxTimeout %d s is above the sandbox's %v", tool.ShellMaxTimeout, sandbox.MaxTimeout)
	}
}

func TestShellExecute(t *testing.T) {
	c := start(t)
	mustOK(t, c.call(t, "shell_execute", `{"command": "echo out; echo err >&2"}`), "out\n", "err\n", "[exit code: 0]")
	r := mustOK(t, c.call(t, "shell_execute", `{"command": "exit 3"}`), "(no output)\n[exit code: 3]")
	_ = r

	// Sequential calls share the persistent shell.
	mustOK(t, c.call(t, "shell_execute", `{"command": "cd /tmp && X=1 && export Y=2"}`))
	mustOK(t, c.call(t, "shell_execute", `{"command": "echo \"$PWD x=$X y=$Y\""}`), "/tmp x=1 y=2")

	// Concurrent calls run as fresh processes: the exported state is
	// there, plain shell variables are not, and a cd does not persist.
	var wg sync.WaitGroup
	results := make([]llm.ToolResult, 3)
	for i := range results {
		wg.Go(func() {
			results[i] = c.callWith(t, c.env, "shell_execute", `{"command": "echo \"$PWD x=$X y=$Y\"; cd /; sleep 0.2"}`, true)
		})
	}
	wg.Wait()
	for _, r := range results {
		mustOK(t, r, "/tmp x= y=2")
	}
	mustOK(t, c.call(t, "shell_execute", `{"command": "pwd"}`), "/tmp\n")
}

func TestShellTimeout(t *testing.T) {
	c := start(t)
	s := mustFail(t, c.call(t, "shell_execute", `{"command": "echo started; sleep 30", "timeout": 1}`),
		"started", "[exit code: 124]", "timed out after 1s")
	t.Log(s)
	// The shell is usable afterwards.
	mustOK(t, c.call(t, "shell_execute", `{"command": "echo again"}`), "again")
}

func TestShellLongOutput(t *testing.T) {
	c := start(t)
	// About 100,000 characters: below the sandbox's cap, above the
	// model's.
	s := mustOK(t, c.call(t, "shell_execute", `{"command": "seq 1 20000 | sed 's/^/line /'"}`),
		"line 1\n", "line 20000\n", "characters omitted", "[exit code: 0]", "/den/offloads/")
	if n := len([]rune(s)); n > tool.ShellMaxChars+1000 {
		t.Errorf("result has %d characters", n)
	}
	full := offloadFile(t, c, s)
	if !strings.HasPrefix(string(full), "line 1\nline 2\n") || !strings.HasSuffix(string(full), "line 20000\n") || bytes.Count(full, []byte("\n")) != 20000 {
		t.Errorf("offload file holds %d bytes, %d lines", len(full), bytes.Count(full, []byte("\n")))
	}

	// Above the sandbox's own cap: its offload file is named.
	s = mustOK(t, c.call(t, "shell_execute", `{"command": "seq 1 100000 | sed 's/^/line /'"}`), "line 1\n", "line 100000\n", "/den/offloads/")
	if n := len([]rune(s)); n > tool.ShellMaxChars+2000 {
		t.Errorf("result has %d characters", n)
	}
	if n := strings.Count(s, sandbox.GuestOffloads+"/"); n != 1 {
		t.Errorf("the offload path is named %d times", n)
	}
	full = offloadFile(t, c, s)
	if bytes.Count(full, []byte("\n")) != 100000 {
		t.Errorf("offload file holds %d lines", bytes.Count(full, []byte("\n")))
	}
}

// offloadFile finds the offload path a result names and reads that file
// on the host.
func offloadFile(t *testing.T, c *computer, s string) []byte {
	t.Helper()
	i := strings.LastIndex(s, sandbox.GuestOffloads+"/")
	if i < 0 {
		t.Fatalf("no offload path in %q", s[max(0, len(s)-500):])
	}
	name := s[i+len(sandbox.GuestOffloads)+1:]
	name = name[:strings.IndexAny(name, " \n]")]
	b, err := os.ReadFile(filepath.Join(c.Offloads, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFileRead(t *testing.T) {
	c := start(t)
	var lines []string
	for i := 1; i <= 100; i++ {
		lines = append(lines, "line "+itoa(i))
	}
	c.put(t, "a.txt", []byte(strings.Join(lines, "\n")+"\n"))
	c.put(t, "sub/nonl.txt", []byte("one\ntwo"))
	c.put(t, "empty.txt", nil)

	s := mustOK(t, c.call(t, "file_read", `{"path": "a.txt"}`), "[/workspace/a.txt | 792 bytes | lines 1-100 of 100]\nline 1\n")
	if !strings.HasSuffix(s, "line 100\n\nden://workspace/a.txt") {
		t.Errorf("end: %q", s[len(s)-20:])
	}
	mustOK(t, c.call(t, "file_read", `{"path": "/workspace/a.txt", "offset": 10, "lines": 3}`),
		"[/workspace/a.txt | 792 bytes | lines 10-12 of 100 | next offset 13]\nline 10\nline 11\nline 12\n")
	s = mustOK(t, c.call(t, "file_read", `{"path": "a.txt", "offset": 98}`), "lines 98-100 of 100]\nline 98\n")
	if strings.Contains(s, "next offset") {
		t.Error(s)
	}
	// max_chars cuts at a line boundary.
	s = mustOK(t, c.call(t, "file_read", `{"path": "a.txt", "max_chars": 21}`),
		"lines 1-3 of 100 | truncated at 21 chars; next offset 4]\nline 1\nline 2\nline 3\n")
	if strings.Contains(s, "line 4") {
		t.Error(s)
	}
	mustOK(t, c.call(t, "file_read", `{"path": "sub/nonl.txt"}`), "lines 1-2 of 2]\none\ntwo")
	mustOK(t, c.call(t, "file_read", `{"path": "sub/nonl.txt", "offset": 2}`), "lines 2-2 of 2]\ntwo")
	mustOK(t, c.call(t, "file_read", `{"path": "empty.txt"}`), "0 bytes | empty file")

	mustFail(t, c.call(t, "file_read", `{"path": "a.txt", "offset": 101}`), "offset 101 is past the end", "100 lines")
	mustFail(t, c.call(t, "file_read", `{"path": "missing.txt"}`), "/workspace/missing.txt does not exist")
	mustFail(t, c.call(t, "file_read", `{"path": "sub"}`), "/workspace/sub is a directory")
	mustFail(t, c.call(t, "file_read", `{"path": "/dev/null"}`), "not a regular file")
	mustFail(t, c.call(t, "file_read", `{"path": ""}`), "path is empty")

	// The same file seen by the shell, with a path with spaces and quotes.
	c.put(t, "it's a file.txt", []byte("quoted\n"))
	mustOK(t, c.call(t, "file_read", `{"path": "it's a file.txt"}`), "quoted")
}

func TestFileReadUTF8(t *testing.T) {
	c := start(t)
	// Lines of 3-byte characters: no cut may split one.
	line := strings.Repeat("日本語", 10) + "\n" // 31 characters
	c.put(t, "jp.txt", []byte(strings.Repeat(line, 50)))
	s := mustOK(t, c.call(t, "file_read", `{"path": "jp.txt", "max_chars": 100}`), "lines 1-3 of 50 | truncated at 100 chars; next offset 4]")
	if !strings.HasSuffix(s, "]\n"+strings.Repeat(line, 3)+"\nden://workspace/jp.txt") {
		t.Errorf("got %q", s)
	}
	// One line longer than max_chars: its start, whole characters only.
	c.put(t, "long.txt", []byte(strings.Repeat("é", 1000)+"\nnext\n"))
	s = mustOK(t, c.call(t, "file_read", `{"path": "long.txt", "max_chars": 7}`), "lines 1-1 of 2 | truncated at 7 chars; next offset 2]", "line 1 is longer than 7 characters")
	if !strings.HasSuffix(s, "\n"+strings.Repeat("é", 7)+"\nden://workspace/long.txt") {
		t.Errorf("got %q", s)
	}
	// A character cut by the 8 KB sample is not mistaken for binary.
	c.put(t, "edge.txt", []byte("a"+strings.Repeat("€", 5000)+"\n"))
	mustOK(t, c.call(t, "file_read", `{"path": "edge.txt", "max_chars": 10}`), "lines 1-1 of 1")
}

func TestFileReadBinary(t *testing.T) {
	c := start(t)
	c.put(t, "nul.bin", []byte("abc\x00def\n"))
	mustOK(t, c.call(t, "file_read", `{"path": "nul.bin"}`), "[/workspace/nul.bin | 8 bytes | binary file: it contains NUL bytes]", "61626300646566")
	c.put(t, "latin1.txt", []byte("caf\xe9\n"))
	mustOK(t, c.call(t, "file_read", `{"path": "latin1.txt"}`), "binary file: it is not valid UTF-8")
	c.put(t, "img.png", pngBytes(t, 10, 10))
	mustOK(t, c.call(t, "file_read", `{"path": "img.png"}`), "binary file", "It is a PNG image; look at it with read_image")
	// Text at the start, a stray byte later: shown, marked.
	c.put(t, "late.txt", append([]byte(strings.Repeat("x\n", 5000)), "bad \xff\n"...))
	mustOK(t, c.call(t, "file_read", `{"path": "late.txt", "offset": 5001}`), "lines 5001-5001 of 5001]", "bad \uFFFD", "not UTF-8")
}

func TestFileWrite(t *testing.T) {
	c := start(t)
	content := "line 1\nline 2 with 'single' and \"double\" quotes, $HOME, `backticks`, \\backslash\\n, $(echo no)\n" +
		"\ttab\r\n\x01\x02\x1b[31m\x7f ünïcödé 🙂\nno final newline"
	mustOK(t, c.call(t, "file_write", js(map[string]any{"path": "new/dir/f.txt", "content": content, "tool_title": "Write"})),
		"Wrote "+itoa(len(content))+" bytes to /workspace/new/dir/f.txt")
	if got := string(c.get(t, "new/dir/f.txt")); got != content {
		t.Errorf("content:\n got %q\nwant %q", got, content)
	}
	mustOK(t, c.call(t, "file_write", js(map[string]any{"path": "/workspace/new/dir/f.txt", "content": "+more", "append": true})), "Appended 5 bytes")
	if got := string(c.get(t, "new/dir/f.txt")); got != content+"+more" {
		t.Errorf("after append: %q", got[len(got)-20:])
	}
	mustOK(t, c.call(t, "file_write", `{"path": "empty", "content": ""}`), "Wrote 0 bytes")
	if got := c.get(t, "empty"); len(got) != 0 {
		t.Errorf("empty file holds %q", got)
	}

	// 1 MB.
	big := bytes.Repeat([]byte("0123456789abcdef\n"), 1<<20/17+1)[:1<<20]
	mustOK(t, c.call(t, "file_write", js(map[string]any{"path": "big.txt", "content": string(big)})), "Wrote 1048576 bytes")
	if got := c.get(t, "big.txt"); !bytes.Equal(got, big) {
		t.Errorf("1 MB file: got %d bytes", len(got))
	}

	mustFail(t, c.call(t, "file_write", `{"path": "new", "content": "x"}`), "/workspace/new is a directory")
	mustFail(t, c.call(t, "file_write", `{"path": "/proc/nope/x", "content": "x"}`), "cannot write /proc/nope/x")
}

func TestFileEdit(t *testing.T) {
	c := start(t)
	orig := "alpha\nbeta\ngamma\nbeta\n"
	c.put(t, "e.txt", []byte(orig))
	if err := os.Chmod(filepath.Join(c.Workspace, "e.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustOK(t, c.call(t, "file_edit", `{"path": "e.txt", "old_string": "gamma", "new_string": "GAMMA\n'quoted'"}`), "replaced 1 occurrence at line 3")
	if got := string(c.get(t, "e.txt")); got != "alpha\nbeta\nGAMMA\n'quoted'\nbeta\n" {
		t.Errorf("got %q", got)
	}
	if fi, err := os.Stat(filepath.Join(c.Workspace, "e.txt")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("mode after edit: %v %v", fi.Mode(), err)
	}
	mustFail(t, c.call(t, "file_edit", `{"path": "e.txt", "old_string": "beta", "new_string": "B"}`), "occurs 2 times", "lines 2, 5", "replace_all")
	mustFail(t, c.call(t, "file_edit", `{"path": "e.txt", "old_string": "delta", "new_string": "D"}`), "old_string was not found in /workspace/e.txt")
	mustFail(t, c.call(t, "file_edit", `{"path": "e.txt", "old_string": "", "new_string": "D"}`), "old_string is empty")
	mustFail(t, c.call(t, "file_edit", `{"path": "nope.txt", "old_string": "a", "new_string": "b"}`), "does not exist")
	mustFail(t, c.call(t, "file_edit", `{"path": "e.txt", "old_string": "beta"}`), `missing required field "new_string"`)
	mustOK(t, c.call(t, "file_edit", `{"path": "e.txt", "old_string": "beta\n", "new_string": "", "replace_all": true}`), "replaced 2 occurrences (the first at line 2)")
	if got := string(c.get(t, "e.txt")); got != "alpha\nGAMMA\n'quoted'\n" {
		t.Errorf("got %q", got)
	}

	c.put(t, "crlf.txt", []byte("a\r\nb\r\n"))
	mustFail(t, c.call(t, "file_edit", `{"path": "crlf.txt", "old_string": "a\nb", "new_string": "x"}`), "CRLF")
}

func TestReadImage(t *testing.T) {
	c := start(t)
	c.put(t, "wide.png", pngBytes(t, 3000, 1000))
	r := c.call(t, "read_image", `{"path": "wide.png"}`)
	mustOK(t, r, "PNG 3000x1000", "scaled to 2000x667")
	img := imagePart(t, r)
	cfg, format, err := image.DecodeConfig(bytes.NewReader(img.Data))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Width != 2000 || cfg.Height != 667 || "image/"+format != img.MediaType {
		t.Errorf("got %s %dx%d as %s", format, cfg.Width, cfg.Height, img.MediaType)
	}

	small := pngBytes(t, 40, 30)
	c.put(t, "small.png", small)
	r = c.call(t, "read_image", `{"path": "small.png"}`)
	mustOK(t, r, "PNG 40x30")
	if got := imagePart(t, r); !bytes.Equal(got.Data, small) || got.MediaType != "image/png" {
		t.Error("a small image is not passed through unchanged")
	}

	c.put(t, "notes.txt", []byte("hello\n"))
	mustFail(t, c.call(t, "read_image", `{"path": "notes.txt"}`), "not a PNG, JPEG, GIF or WebP image")
	mustFail(t, c.call(t, "read_image", `{"path": "none.png"}`), "does not exist")

	noImages := *c.env
	noImages.Images = false
	mustFail(t, c.callWith(t, &noImages, "read_image", `{"path": "small.png"}`, false), "cannot see images")
}

// TestFileToolsGiveURLs: a file tool's result about a file in a folder
// den:// URLs name ends with the file's URL, as a part of its own;
// other files, and failures, have none.
func TestFileToolsGiveURLs(t *testing.T) {
	c := start(t)
	c.put(t, "chart.png", pngBytes(t, 4, 4))
	c.put(t, "bin", []byte("a\x00b"))
	c.put(t, "empty", nil)
	for _, tt := range []struct {
		name, input string
		want        string // the URL, "" for none
	}{
		{"file_write", `{"path": "report.md", "content": "# Report\n"}`, "den://workspace/report.md"},
		{"file_write", `{"path": "/workspace/out/my report.md", "content": "x"}`, "den://workspace/out/my%20report.md"},
		{"file_write", `{"path": "report.md", "content": "more\n", "append": true}`, "den://workspace/report.md"},
		{"file_write", `{"path": "/den/offloads/kept.txt", "content": "x"}`, "den://offloads/kept.txt"},
		{"file_write", `{"path": "/tmp/t.txt", "content": "x"}`, ""},
		{"file_write", `{"path": "~/home.txt", "content": "x"}`, ""},
		{"file_read", `{"path": "report.md"}`, "den://workspace/report.md"},
		{"file_read", `{"path": "/workspace/./out/../report.md", "lines": 1}`, "den://workspace/report.md"},
		{"file_read", `{"path": "bin"}`, "den://workspace/bin"},
		{"file_read", `{"path": "empty"}`, "den://workspace/empty"},
		{"file_read", `{"path": "/tmp/t.txt"}`, ""},
		{"file_read", `{"path": "/den/offloads/kept.txt"}`, "den://offloads/kept.txt"},
		{"file_edit", `{"path": "report.md", "old_string": "Report", "new_string": "Summary"}`, "den://workspace/report.md"},
		{"file_edit", `{"path": "/tmp/t.txt", "old_string": "x", "new_string": "y"}`, ""},
		{"read_image", `{"path": "chart.png"}`, "den://workspace/chart.png"},
	} {
		r := c.call(t, tt.name, tt.input)
		if r.IsError {
			t.Errorf("%s %s: %s", tt.name, tt.input, text(r))
			continue
		}
		last, _ := r.Content[len(r.Content)-1].(*llm.Text)
		has := strings.Contains(text(r), "den://")
		switch {
		case tt.want == "" && has:
			t.Errorf("%s %s: a URL in %q", tt.name, tt.input, text(r))
		case tt.want != "" && (len(r.Content) < 2 || last == nil || last.Text != "\n"+tt.want):
			t.Errorf("%s %s: the result ends %q, want a part %q", tt.name, tt.input, text(r), "\n"+tt.want)
		}
	}
	for _, tt := range []struct{ name, input string }{
		{"file_read", `{"path": "missing.md"}`},
		{"file_write", `{"path": "out", "content": "x"}`},
		{"file_edit", `{"path": "report.md", "old_string": "absent", "new_string": "y"}`},
		{"read_image", `{"path": "report.md"}`},
	} {
		if r := c.call(t, tt.name, tt.input); !r.IsError || strings.Contains(text(r), "den://") {
			t.Errorf("%s %s: %v %q, want an error without a URL", tt.name, tt.input, r.IsError, text(r))
		}
	}
}

func TestDownscaleColours(t *testing.T) {
	c := start(t)
	// Left half red, right half blue: the scaled image keeps both.
	img := image.NewRGBA(image.Rect(0, 0, 4000, 100))
	draw.Draw(img, image.Rect(0, 0, 2000, 100), image.NewUniform(color.RGBA{255, 0, 0, 255}), image.Point{}, draw.Src)
	draw.Draw(img, image.Rect(2000, 0, 4000, 100), image.NewUniform(color.RGBA{0, 0, 255, 255}), image.Point{}, draw.Src)
	var b bytes.Buffer
	png.Encode(&b, img)
	c.put(t, "rb.png", b.Bytes())
	part := imagePart(t, c.call(t, "read_image", `{"path": "rb.png"}`))
	out, _, err := image.Decode(bytes.NewReader(part.Data))
	if err != nil {
		t.Fatal(err)
	}
	if out.Bounds().Dx() != 2000 || out.Bounds().Dy() != 50 {
		t.Fatalf("size %v", out.Bounds())
	}
	if r, _, bl, _ := out.At(10, 10).RGBA(); r>>8 != 255 || bl != 0 {
		t.Errorf("left pixel %v", out.At(10, 10))
	}
	if r, _, bl, _ := out.At(1990, 10).RGBA(); r != 0 || bl>>8 != 255 {
		t.Errorf("right pixel %v", out.At(1990, 10))
	}
}

func imagePart(t testing.TB, r llm.ToolResult) *llm.Image {
	t.Helper()
	for _, p := range r.Content {
		if img, ok := p.(*llm.Image); ok {
			return img
		}
	}
	t.Fatalf("no image in %s", text(r))
	return nil
}

// pngBytes encodes a w×h gradient.
func pngBytes(t testing.TB, w, h int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			o := img.PixOffset(x, y)
			copy(img.Pix[o:o+4], []byte{uint8(x), uint8(y), uint8(x + y), 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestClosedComputerIsAGoError(t *testing.T) {
	c := start(t)
	c.Session.Close()
	_, err := c.reg.Call(context.Background(), c.env, llm.ToolCall{ID: "c1", Name: "file_read", Input: json.RawMessage(`{"path": "a"}`)}, false)
	if !errors.Is(err, sandbox.ErrClosed) {
		t.Errorf("err = %v, want ErrClosed", err)
	}
}

func TestCanceled(t *testing.T) {
	c := start(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	r, err := c.reg.Call(ctx, c.env, llm.ToolCall{ID: "c1", Name: "shell_execute", Input: json.RawMessage(`{"command": "sleep 20"}`)}, false)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	mustFail(t, r, "canceled")
}

func BenchmarkFileRead1MB(b *testing.B) {
	c := start(b)
	c.put(b, "big.txt", bytes.Repeat([]byte("0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklmnopqrs\n"), 1<<20/64))
	for _, bc := range []struct{ name, input string }{
		{"start", `{"path": "big.txt"}`},
		{"middle", `{"path": "big.txt", "offset": 8000, "lines": 200}`},
		{"max_chars", `{"path": "big.txt", "max_chars": 80000}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				r := c.call(b, "file_read", bc.input)
				if r.IsError {
					b.Fatal(text(r))
				}
			}
		})
	}
}

func itoa(i int) string { return json.Number(js(i)).String() }

// TestCapped: a short text passes whole; a long one keeps its beginning
// and end, and the whole of it is saved in /den/offloads, named in the
// note; SaveFile writes exact bytes.
func TestCapped(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	if got, err := tool.Capped(ctx, c.env, "mcp-x", "short"); err != nil || got != "short" {
		t.Errorf("short text: %q %v", got, err)
	}
	var b strings.Builder
	for i := range 20000 {
		b.WriteString("row " + itoa(i) + "\n")
	}
	long := b.String()
	got, err := tool.Capped(ctx, c.env, "mcp-x", long)
	if err != nil {
		t.Fatal(err)
	}
	if n := len([]rune(got)); n > tool.ShellMaxChars+1000 || !strings.HasPrefix(got, "row 0\n") || !strings.Contains(got, "row 19999\n") || !strings.Contains(got, "/den/offloads/mcp-x-") {
		t.Errorf("capped to %d characters: %q … %q", n, got[:40], got[len(got)-300:])
	}
	if full := offloadFile(t, c, got); string(full) != long {
		t.Errorf("the offload holds %d bytes, want %d", len(full), len(long))
	}
	if problem, err := tool.SaveFile(ctx, c.env, "/workspace/a/b.bin", []byte{0, 1, 2}); problem != "" || err != nil {
		t.Fatalf("SaveFile: %q %v", problem, err)
	}
	if got, _ := os.ReadFile(filepath.Join(c.Workspace, "a", "b.bin")); !bytes.Equal(got, []byte{0, 1, 2}) {
		t.Errorf("saved %v", got)
	}
}
