package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"den.dev/den/internal/config"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/store"
)

// TestTools: the server offers den's tools, each with a schema that
// names its required fields and refuses others; --allow-tools offers
// fewer, and the others cannot be called.
func TestTools(t *testing.T) {
	h := newHarness(t, nil, Options{})
	c := h.connect(t, "claude-code")
	res, err := c.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	required := map[string][]string{}
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
		var schema struct {
			Required             []string `json:"required"`
			AdditionalProperties any      `json:"additionalProperties"`
		}
		remarshal(t, tool.InputSchema, &schema)
		required[tool.Name] = schema.Required
		if schema.AdditionalProperties != false {
			t.Errorf("%s: additionalProperties %v: a misspelt argument would pass unseen", tool.Name, schema.AdditionalProperties)
		}
		if tool.OutputSchema == nil {
			t.Errorf("%s has no output schema", tool.Name)
		}
	}
	if !cmp.Equal(sorted(names), sorted(config.MCPTools())) {
		t.Errorf("tools %v, want %v", names, config.MCPTools())
	}
	want := map[string][]string{"run": {"prompt"}, "exec": {"command"}, "read_file": {"path"}, "write_file": {"content", "path"},
		"list_files": nil, "sessions_list": nil, "session_read": {"session"}}
	for tool, w := range want {
		if got := sorted(required[tool]); !cmp.Equal(got, sorted(w)) {
			t.Errorf("%s requires %v, want %v", tool, got, w)
		}
	}

	few := newHarness(t, nil, Options{Tools: []string{"read_file", "list_files"}, ApprovalTimeout: time.Second}).connect(t, "claude-code")
	res, err = few.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	names = nil
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if !cmp.Equal(sorted(names), []string{"list_files", "read_file"}) {
		t.Errorf("with Tools: offered %v", names)
	}
	if _, err := few.CallTool(context.Background(), &mcp.CallToolParams{Name: "exec", Arguments: map[string]any{"command": "true"}}); err == nil {
		t.Error("a tool not offered could be called")
	}
	if err := CheckTools([]string{"exec", "rm"}); err == nil || !strings.Contains(err.Error(), `"rm"`) {
		t.Errorf("CheckTools with a tool den lacks: %v", err)
	}
}

// TestFiles: write_file, read_file and list_files reach the session's
// /workspace and nothing else: folders made on the way, text and bytes,
// reads in parts, links the computer planted refused, paths outside
// den's folders refused.
func TestFiles(t *testing.T) {
	h := newHarness(t, nil, Options{})
	c := h.connect(t, "claude-code")
	var w WriteOut
	c.ok(t, "write_file", map[string]any{"path": "src/hello.txt", "content": "héllo\n"}, &w)
	if w.Path != "/workspace/src/hello.txt" || w.URL != "den://workspace/src/hello.txt" || w.Size != 7 || !w.Created || w.Session == "" {
		t.Errorf("write_file: %+v", w)
	}
	c.ok(t, "write_file", map[string]any{"path": "/workspace/src/hello.txt", "content": "hello again\n"}, &w)
	if w.Created {
		t.Error("a file replaced is reported created")
	}
	// The session is the one named after the client, with the file on
	// the host where den keeps its workspace.
	sess, err := h.env.Store.GetSession(context.Background(), w.Session)
	if err != nil || sess.Title != "claude-code" || sess.Agent != "default" {
		t.Fatalf("the client's session: %+v, %v", sess, err)
	}
	folders, err := h.env.RT.Folders(context.Background(), w.Session)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(folders.Workspace, "src", "hello.txt")); err != nil || string(b) != "hello again\n" {
		t.Errorf("on the host: %q, %v", b, err)
	}

	var r ReadOut
	c.ok(t, "read_file", map[string]any{"path": "den://workspace/src/hello.txt"}, &r)
	if r.Content != "hello again\n" || r.Encoding != "utf-8" || r.Size != 12 || r.NextOffset != 0 {
		t.Errorf("read_file: %+v", r)
	}
	c.ok(t, "read_file", map[string]any{"path": "src/hello.txt", "offset": 6, "limit": 3}, &r)
	if r.Content != "aga" || r.NextOffset != 9 {
		t.Errorf("read_file in part: %+v", r)
	}
	bin := []byte{0, 1, 2, 0xff, 0xfe}
	c.ok(t, "write_file", map[string]any{"path": "bin/blob", "content": base64.StdEncoding.EncodeToString(bin), "encoding": "base64"}, &w)
	c.ok(t, "read_file", map[string]any{"path": "bin/blob"}, &r)
	if r.Encoding != "base64" || r.Content != base64.StdEncoding.EncodeToString(bin) {
		t.Errorf("bytes read back: %+v", r)
	}
	// A rune cut by the limit is read next time, whole.
	c.ok(t, "write_file", map[string]any{"path": "u.txt", "content": "aé"}, &w)
	c.ok(t, "read_file", map[string]any{"path": "u.txt", "limit": 2}, &r)
	if r.Content != "a" || r.Encoding != "utf-8" || r.NextOffset != 1 {
		t.Errorf("a rune cut in two: %+v", r)
	}

	var l ListOut
	c.ok(t, "list_files", map[string]any{}, &l)
	var listed []string
	for _, e := range l.Entries {
		listed = append(listed, e.Name+":"+e.Type)
	}
	if want := []string{"bin:dir", "src:dir", "u.txt:file"}; l.Path != "/workspace" || !cmp.Equal(listed, want) {
		t.Errorf("list_files: %s %v, want /workspace %v", l.Path, listed, want)
	}

	// The computer plants links: to a host file, and to a file beside
	// it. Neither is read, listed through or written through.
	if err := os.Symlink("/etc/passwd", filepath.Join(folders.Workspace, "passwd")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src", filepath.Join(folders.Workspace, "srclink")); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read_file", map[string]any{"path": "passwd"}, "/workspace/passwd is a symbolic link"},
		{"read_file", map[string]any{"path": "srclink/hello.txt"}, "/workspace/srclink is a symbolic link"},
		{"list_files", map[string]any{"path": "srclink"}, "/workspace/srclink is a symbolic link"},
		{"write_file", map[string]any{"path": "passwd", "content": "x"}, "/workspace/passwd is a symbolic link"},
		{"write_file", map[string]any{"path": "srclink/new.txt", "content": "x"}, "/workspace/srclink is a symbolic link"},
		{"read_file", map[string]any{"path": "../../etc/passwd"}, `has a ".."`},
		{"read_file", map[string]any{"path": "/etc/passwd"}, "/etc/passwd is not in den's folders"},
		{"read_file", map[string]any{"path": "den://workspace/%2e%2e/x"}, "den://"},
		{"write_file", map[string]any{"path": "/den/memory/x.md", "content": "x"}, "write_file writes files in /workspace"},
		{"read_file", map[string]any{"path": "src"}, "/workspace/src is a folder"},
		{"read_file", map[string]any{"path": "nosuch"}, "/workspace/nosuch"},
	} {
		if got := c.fails(t, tc.tool, tc.args); !strings.Contains(got, tc.want) {
			t.Errorf("%s %v: %q, want it to say %q", tc.tool, tc.args, got, tc.want)
		}
	}
	if b, _ := os.ReadFile("/etc/passwd"); strings.HasPrefix(string(b), "x") {
		t.Fatal("/etc/passwd was written through the link")
	}
	if e, err := os.Lstat(filepath.Join(folders.Workspace, "passwd")); err != nil || e.Mode().Type() != os.ModeSymlink {
		t.Errorf("the planted link was replaced: %v %v", e, err)
	}
	c.ok(t, "list_files", map[string]any{}, &l)
	for _, e := range l.Entries {
		if e.Name == "passwd" && (e.Type != "symlink" || e.Target != "/etc/passwd") {
			t.Errorf("a link is listed as %+v", e)
		}
	}

	// Another session of its own name has a /workspace of its own,
	// empty until something is made there.
	c.ok(t, "list_files", map[string]any{"session": "other"}, &l)
	if len(l.Entries) != 0 {
		t.Errorf("a new session's workspace lists %v", l.Entries)
	}
	if got := c.fails(t, "read_file", map[string]any{"session": "other", "path": "src/hello.txt"}); !strings.Contains(got, "does not exist") {
		t.Errorf("a file of another session: %q", got)
	}
}

// TestExec: a command runs in the session's /workspace, beside the
// files the file tools see; its output and exit code come back, cut
// when long, with the whole readable in the file it names.
func TestExec(t *testing.T) {
	h := newHarness(t, allowExec(), Options{})
	c := h.connect(t, "claude-code")
	var w WriteOut
	c.ok(t, "write_file", map[string]any{"path": "in.txt", "content": "from the client\n"}, &w)
	var e ExecOut
	c.ok(t, "exec", map[string]any{"command": "pwd; cat in.txt; echo made > out.txt; echo warn >&2; exit 7"}, &e)
	if e.ExitCode != 7 || !strings.Contains(e.Output, "/workspace\nfrom the client\n") || !strings.Contains(e.Output, "warn") || e.Session != w.Session {
		t.Errorf("exec: %+v (want exit 7 in the session %s)", e, w.Session)
	}
	var r ReadOut
	c.ok(t, "read_file", map[string]any{"path": "out.txt"}, &r)
	if r.Content != "made\n" {
		t.Errorf("the command's file: %q", r.Content)
	}

	c.ok(t, "exec", map[string]any{"command": "i=0; while [ $i -lt 5000 ]; do echo line-$i; i=$((i+1)); done"}, &e)
	if !e.Truncated || e.FullOutput == "" || len([]rune(e.Output)) > ExecMaxChars+100 || !strings.HasPrefix(e.Output, "line-0\n") || !strings.HasSuffix(e.Output, "line-4999\n") {
		t.Fatalf("a long output: truncated %v, full %q, %d characters", e.Truncated, e.FullOutput, len(e.Output))
	}
	c.ok(t, "read_file", map[string]any{"path": e.FullOutput, "limit": ReadMax}, &r)
	if !strings.HasPrefix(r.Content, "line-0\n") || !strings.HasSuffix(r.Content, "line-4999\n") || strings.Count(r.Content, "\n") != 5000 {
		t.Errorf("the full output %s: %d bytes", e.FullOutput, len(r.Content))
	}

	res := c.call(t, "exec", map[string]any{"command": "echo before; sleep 30", "timeout": 1})
	if !res.IsError || !strings.Contains(text(res), `"timed_out":true`) || !strings.Contains(text(res), `"exit_code":124`) {
		t.Errorf("a command past its timeout: error %v, %s", res.IsError, text(res))
	}
	if got := c.fails(t, "exec", map[string]any{"command": "true", "timeout": ExecMaxTimeout + 1}); !strings.Contains(got, "timeout") {
		t.Errorf("a timeout over the limit: %q", got)
	}
}

// TestRun: run sends the prompt to the agent, tells the client what it
// does as progress notifications, and returns its answer and session;
// the same session name goes on in the same session.
func TestRun(t *testing.T) {
	h := newHarness(t, nil, Options{},
		llmtest.Turn{Text: "Let me look.\n", Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute", Input: `{"command":"echo run-$((6*7)) > found.txt; cat found.txt"}`}}},
		llmtest.Turn{Text: "The answer is run-42."},
		llmtest.Turn{Text: "Still here."})
	c := h.connect(t, "claude-code")
	var out RunOut
	c.ok(t, "run", map[string]any{"prompt": "what is six times seven?", "session": "maths"}, &out)
	if out.Answer != "The answer is run-42." || out.Stop != "end_turn" || out.Agent != "default" || out.Session == "" {
		t.Errorf("run: %+v", out)
	}
	sess, err := h.env.Store.GetSession(context.Background(), out.Session)
	if err != nil || sess.Title != "maths" {
		t.Errorf("the run's session: %+v %v", sess, err)
	}
	want := []string{"→ shell_execute echo run-$((6*7)) > found.txt; cat found.txt", "← shell_execute (exit 0)", "Let me look.", "The answer is run-42."}
	if got, ok := waitProgress(t, c, want); !ok {
		t.Errorf("progress %q, want %q among them", got, want)
	}
	// The agent's file is where the client's tools look, in the session.
	var r ReadOut
	c.ok(t, "read_file", map[string]any{"path": "found.txt", "session": "maths"}, &r)
	if r.Content != "run-42\n" {
		t.Errorf("the agent's file: %q", r.Content)
	}
	var again RunOut
	c.ok(t, "run", map[string]any{"prompt": "still there?", "session": "maths"}, &again)
	if again.Session != out.Session || again.Answer != "Still here." {
		t.Errorf("run again in maths: %+v, want session %s", again, out.Session)
	}
	c.ok(t, "run", map[string]any{"prompt": "and by id?", "session": out.Session}, &again)
	if again.Session != out.Session {
		t.Errorf("run by id: session %s, want %s", again.Session, out.Session)
	}
	var read ReadSessionOut
	c.ok(t, "session_read", map[string]any{"session": "maths"}, &read)
	if read.ID != out.Session || len(read.Messages) < 6 || read.Messages[0].Text != "what is six times seven?" || read.Messages[0].Role != "user" {
		t.Errorf("session_read: %+v", read)
	}
	var list SessionsOut
	c.ok(t, "sessions_list", map[string]any{}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].ID != out.Session || list.Sessions[0].URI != "den://sessions/"+out.Session {
		t.Errorf("sessions_list: %+v", list)
	}
	if got := c.fails(t, "run", map[string]any{"prompt": "x", "agent": "nosuch"}); !strings.Contains(got, `den has no agent "nosuch"`) {
		t.Errorf("run with an unknown agent: %q", got)
	}
	if got := c.fails(t, "run", map[string]any{"prompt": "x", "agent": "other", "session": out.Session}); !strings.Contains(got, "is agent default's") {
		t.Errorf("run in a session of another agent: %q", got)
	}
}

// waitProgress waits until the client got every message of want (as
// progress, in any order); if it did not, it returns false and what it
// got.
func waitProgress(t *testing.T, c *client, want []string) ([]string, bool) {
	t.Helper()
	var got []string
	for range 200 {
		got = c.progressed()
		missing := false
		for _, w := range want {
			if !slices.ContainsFunc(got, func(g string) bool { return strings.TrimSpace(g) == w }) {
				missing = true
			}
		}
		if !missing {
			return got, true
		}
		time.Sleep(25 * time.Millisecond)
	}
	return got, false
}

// TestRunCanceled: a client that cancels its call stops the turn.
func TestRunCanceled(t *testing.T) {
	h := newHarness(t, nil, Options{},
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute", Input: `{"command":"echo sleeping; sleep 600"}`}}},
		llmtest.Turn{Text: "unreachable"})
	c := h.connect(t, "claude-code")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		p := &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"prompt": "sleep", "session": "long"}}
		p.SetProgressToken("t")
		_, err := c.CallTool(ctx, p)
		errc <- err
	}()
	if got, ok := waitProgress(t, c, []string{"→ shell_execute echo sleeping; sleep 600"}); !ok {
		t.Fatalf("the turn did not start its command: %q", got)
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("a canceled call returned no error")
	}
	// The turn ends, interrupted: the session is idle for the next.
	for range 400 {
		found, _ := h.env.Store.FindSessions(context.Background(), store.SessionQuery{Agent: "default"})
		if len(found) == 1 && found[0].Status == "interrupted" && !h.env.RT.Running(found[0].ID) {
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Fatal("the turn still runs after the client canceled its call")
}

// TestResources: den://sessions/ID reads a session as text and
// den://workspace/PATH a file of the session the connection used last;
// resources/list lists the sessions.
func TestResources(t *testing.T) {
	h := newHarness(t, nil, Options{}, llmtest.Turn{Text: "Resource answer."})
	c := h.connect(t, "claude-code")
	var out RunOut
	c.ok(t, "run", map[string]any{"prompt": "hello", "session": "res"}, &out)
	var w WriteOut
	c.ok(t, "write_file", map[string]any{"path": "notes/a.md", "content": "# A\n", "session": "res"}, &w)
	ctx := context.Background()
	got, err := c.ReadResource(ctx, &mcp.ReadResourceParams{URI: "den://workspace/notes/a.md"})
	if err != nil || len(got.Contents) != 1 || got.Contents[0].Text != "# A\n" || got.Contents[0].MIMEType != "text/markdown; charset=utf-8" {
		t.Errorf("den://workspace/notes/a.md: %+v %v", got, err)
	}
	got, err = c.ReadResource(ctx, &mcp.ReadResourceParams{URI: "den://workspace/notes"})
	if err != nil || !strings.Contains(got.Contents[0].Text, `"name":"a.md"`) {
		t.Errorf("den://workspace/notes: %+v %v", got, err)
	}
	got, err = c.ReadResource(ctx, &mcp.ReadResourceParams{URI: "den://sessions/" + out.Session})
	if err != nil || !strings.Contains(got.Contents[0].Text, "Resource answer.") || !strings.Contains(got.Contents[0].Text, "hello") {
		t.Errorf("den://sessions/%s: %+v %v", out.Session, got, err)
	}
	list, err := c.ListResources(ctx, nil)
	if err != nil || len(list.Resources) != 1 || list.Resources[0].URI != "den://sessions/"+out.Session || list.Resources[0].Title != "res" {
		t.Errorf("resources/list: %+v %v", list, err)
	}
	tmpl, err := c.ListResourceTemplates(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, rt := range tmpl.ResourceTemplates {
		uris = append(uris, rt.URITemplate)
	}
	if !slices.Contains(uris, "den://sessions/{id}") || !slices.Contains(uris, "den://workspace/{+path}") {
		t.Errorf("templates %v", uris)
	}
	if _, err := c.ReadResource(ctx, &mcp.ReadResourceParams{URI: "den://workspace/../x"}); err == nil {
		t.Error("den://workspace/../x was read")
	}
}

func remarshal(t *testing.T, from, to any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, to); err != nil {
		t.Fatal(err)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	if s == nil {
		s = []string{}
	}
	return s
}

// TestNoModel: without a model (no provider has a key), den's computer
// is still there for a client: its files and commands work, and run
// says what is missing.
func TestNoModel(t *testing.T) {
	h := newHarness(t, allowExec(), Options{})
	t.Setenv("ANTHROPIC_API_KEY", "")
	c := h.connect(t, "claude-code")
	var w WriteOut
	c.ok(t, "write_file", map[string]any{"path": "a.txt", "content": "a"}, &w)
	var e ExecOut
	c.ok(t, "exec", map[string]any{"command": "cat a.txt", "session": "other"}, &e)
	if e.ExitCode == 0 {
		t.Errorf("another session sees the first's file: %+v", e)
	}
	c.ok(t, "exec", map[string]any{"command": "cat a.txt"}, &e)
	if e.Output != "a" {
		t.Errorf("exec without a model: %+v", e)
	}
	if got := c.fails(t, "run", map[string]any{"prompt": "hi"}); !strings.Contains(got, "ANTHROPIC_API_KEY") {
		t.Errorf("run without a model: %q", got)
	}
}
