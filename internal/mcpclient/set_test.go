package mcpclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/tool"
)

// TestInComputer: a stdio server runs in the agent's computer, started
// at the first listing; its tools reach the model under
// mcp__SERVER__TOOL with schemas den's registry takes, and their
// results come back as den's: text, structured content (once), images
// as image parts and files, audio as a file, long text capped and
// offloaded, a tool's failure as an error result.
func TestInComputer(t *testing.T) {
	b := newBox(t)
	g := newGate(t, permission.Policy{})
	set := NewSet(Options{Agent: "a", Session: "s1", Servers: []*Server{server("t", false, "den-test-mcp")},
		Computer: b.start, DataDir: b.data, Gate: g, PackageManager: "apk"})
	defer set.Close()
	offer := set.Offer(context.Background(), 200000)
	if len(offer.Warnings) != 0 {
		t.Fatalf("warnings: %v", offer.Warnings)
	}
	reg := registry(t, offer)
	var names []string
	for _, s := range reg.Specs() {
		names = append(names, s.Name)
	}
	if got := strings.Join(names, " "); !strings.Contains(got, "mcp__t__echo") || !strings.Contains(got, "mcp__t__write_note") || strings.Contains(got, " mcp ") {
		t.Errorf("tools %s", got)
	}
	for _, want := range []string{"# MCP servers", "- t (in the agent's computer): 10 tools", "den-mcp"} {
		if !strings.Contains(offer.Prompt, want) {
			t.Errorf("the prompt does not say %q:\n%s", want, offer.Prompt)
		}
	}

	if r := call(t, reg, b.env, "mcp__t__echo", `{"text": "hi", "tool_title": "say hi"}`); r.IsError || text(r) != "echo: hi" {
		t.Errorf("echo: %+v %q", r, text(r))
	}
	// Inside the computer: its environment, its /workspace.
	if r := text(call(t, reg, b.env, "mcp__t__env", `{}`)); !strings.Contains(r, "DEN_SESSION=s1") || !strings.Contains(r, "CWD=/workspace") {
		t.Errorf("env in the computer:\n%s", r)
	}
	if r := text(call(t, reg, b.env, "mcp__t__add", `{"a": 2, "b": 3}`)); strings.Count(r, `"sum":5`)+strings.Count(r, `"sum": 5`) != 1 {
		t.Errorf("structured content not said once: %q", r)
	}
	r := call(t, reg, b.env, "mcp__t__image", `{}`)
	var img *llm.Image
	for _, p := range r.Content {
		if i, ok := p.(*llm.Image); ok {
			img = i
		}
	}
	if img == nil || img.MediaType != "image/png" {
		t.Errorf("no image part: %+v", r.Content)
	}
	for _, want := range []string{"here is the image", "[image image/png", "den://attachments/mcp-t-image-", "[audio audio/wav, 16 bytes: den://attachments/"} {
		if !strings.Contains(text(r), want) {
			t.Errorf("image result does not say %q: %q", want, text(r))
		}
	}
	files, _ := filepath.Glob(filepath.Join(b.attachments(), "mcp-t-image-*"))
	if len(files) != 2 {
		t.Errorf("saved %v", files)
	}
	r = call(t, reg, b.env, "mcp__t__big", `{"n": 100000}`)
	if s := text(r); len([]rune(s)) > tool.ShellMaxChars+1000 || !strings.Contains(s, "/den/offloads/mcp-t-") || !strings.Contains(s, "line 0\n") {
		t.Errorf("big: %d characters, %q; the server's log:\n%s", len(s), s[max(0, len(s)-300):], set.Log("t"))
	}
	if r := call(t, reg, b.env, "mcp__t__fail", `{}`); !r.IsError || !strings.Contains(text(r), "the disk is full") {
		t.Errorf("fail: %+v", r)
	}
	// den checks input against the schema before the server sees it.
	if r := call(t, reg, b.env, "mcp__t__echo", `{"text": 3}`); !r.IsError || !strings.Contains(text(r), "text: want a string") {
		t.Errorf("bad input: %q", text(r))
	}
	if st := set.Status(); len(st) != 1 || st[0].State != Ready || st[0].Tools != 10 {
		t.Errorf("status %+v", st)
	}
	// Every call is audited, as command mcp.
	var subjects []string
	for _, e := range g.audit(t) {
		subjects = append(subjects, e.Decision+" "+e.Command+" "+e.Action)
	}
	if len(subjects) != 6 || subjects[0] != "allow mcp call" {
		t.Errorf("audit %v", subjects)
	}
}

// TestHostServer: a host server runs with PATH, HOME (its own folder
// under den's data) and the variables its config names: nothing of
// den's own environment.
func TestHostServer(t *testing.T) {
	b := newBox(t)
	t.Setenv("DEN_TEST_SECRET", "must-not-leak")
	t.Setenv("DEN_TEST_EXPANDED", "from-den")
	srv := server("h", true, testServer(t))
	srv.Env = []KV{{"GREETING", "hello"}, {"TOKEN", "${DEN_TEST_EXPANDED}"}, {"DEFAULTED", "${DEN_TEST_UNSET:-fallback}"}}
	set := NewSet(Options{Agent: "a", Session: "s1", Servers: []*Server{srv}, DataDir: b.data, Gate: newGate(t, permission.Policy{})})
	defer set.Close()
	offer := set.Offer(context.Background(), 0)
	out := text(call(t, registry(t, offer), b.env, "mcp__h__env", `{}`))
	home := filepath.Join(b.data, "mcp", "home", "h")
	env := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		env[l] = true
	}
	for _, want := range []string{"PATH=" + HostPath, "HOME=" + home, "GREETING=hello", "TOKEN=from-den", "DEFAULTED=fallback", "CWD=" + home} {
		if !env[want] {
			t.Errorf("%s missing:\n%s", want, out)
		}
	}
	if strings.Contains(out, "must-not-leak") || len(env) != 6 {
		t.Errorf("more than the clean environment:\n%s", out)
	}
	if fi, err := os.Stat(home); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("home %v %v", fi, err)
	}
	if !strings.Contains(offer.Prompt, "h (on the host, with your rights)") {
		t.Errorf("prompt:\n%s", offer.Prompt)
	}
}

// TestNotInstalled: a command missing where the server runs is said
// plainly, with what to install or how to run it elsewhere.
func TestNotInstalled(t *testing.T) {
	b := newBox(t)
	set := NewSet(Options{Agent: "a", Session: "s1", Computer: b.start, DataDir: b.data, Gate: newGate(t, permission.Policy{}), PackageManager: "apk",
		Servers: []*Server{
			{Name: "n", Type: Stdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything"}, Enabled: true},
			{Name: "h", Type: Stdio, Command: "den-no-such-program", Host: true, Enabled: true},
		}})
	defer set.Close()
	offer := set.Offer(context.Background(), 0)
	got := strings.Join(offer.Warnings, "\n")
	for _, want := range []string{
		`MCP server n is unavailable: mcp: the server's command is not installed: npx is not installed in the agent's computer: install it there (apk add nodejs npm), or set "host": true for n in mcp.json to run it on the host`,
		`MCP server h is unavailable: mcp: the server's command is not installed: den-no-such-program is not installed on the host (den looks in /usr/local/bin:/usr/bin:/bin`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("warnings do not say\n%s\n%s", want, got)
		}
	}
	if len(offer.Tools) != 0 || !strings.Contains(offer.Prompt, "- n is unavailable right now") {
		t.Errorf("tools %d, prompt:\n%s", len(offer.Tools), offer.Prompt)
	}
	if _, err := set.Tools(context.Background(), "n"); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("Tools: %v", err)
	}
	if hint := installHint("npx", "apt"); hint != "install it there (apt-get install -y nodejs npm)" {
		t.Errorf("apt hint: %s", hint)
	}
}

// TestBrokenServers: a server that prints garbage, one that never
// answers, one that dies at once, one that crashes in a call, one that
// writes broken JSON in a call and a call that takes too long each give
// the model a clear error result (quoting the end of the server's log
// where it wrote one); den goes on, and the server is
// started again at the next call.
func TestBrokenServers(t *testing.T) {
	b := newBox(t)
	short := func(s *Server) *Server { s.StartupTimeout, s.Timeout = 2*time.Second, 2*time.Second; return s }
	set := NewSet(Options{Agent: "a", Session: "s1", Computer: b.start, DataDir: b.data, Gate: newGate(t, permission.Policy{Trust: permission.Full}),
		Servers: []*Server{
			short(server("garbage", false, "den-test-mcp", "garbage")),
			short(server("hang", false, "den-test-mcp", "hang")),
			short(server("die", false, "den-test-mcp", "die")),
			short(server("ok", false, "den-test-mcp")),
		}})
	defer set.Close()
	ctx := context.Background()
	for name, want := range map[string][]string{
		"garbage": {"garbage did not answer within 2s (den stopped it)", `it wrote on its standard output what is not MCP: "<html>not a protocol</html>"`},
		"hang":    {"hang did not answer within 2s (den stopped it)"},
		"die":     {"die ended (exit status 2) before it answered", "mcpserver: cannot open the database: permission denied"},
	} {
		_, err := set.Tools(ctx, name)
		for _, w := range want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want …%s…", name, err, w)
			}
		}
		if l := set.Log(name); !strings.Contains(l, "[den] start failed") {
			t.Errorf("%s's log:\n%s", name, l)
		}
	}
	if l := set.Log("garbage"); !strings.Contains(l, "[stdout, not MCP] Starting the server, please wait...") {
		t.Errorf("garbage's log:\n%s", l)
	}

	offer := set.Offer(ctx, 0)
	reg := registry(t, offer)
	if len(offer.Warnings) != 3 {
		t.Errorf("warnings %q", offer.Warnings)
	}
	echo := func() {
		t.Helper()
		if r := call(t, reg, b.env, "mcp__ok__echo", `{"text": "still here"}`); r.IsError || text(r) != "echo: still here" {
			t.Errorf("echo after a failure: %q", text(r))
		}
	}
	echo()
	for _, tt := range []struct{ tool, input, want string }{
		{"mcp__ok__crash", `{}`, "ok broke off (the server ended (exit status 3)); den starts it again at the next call"},
		{"mcp__ok__garble", `{}`, "ok broke off"},
		{"mcp__ok__sleep", `{"seconds": 30}`, "ok did not answer within 2s; den stopped it, and starts it again at the next call"},
	} {
		r := call(t, reg, b.env, tt.tool, tt.input)
		if !r.IsError || !strings.Contains(text(r), tt.want) {
			t.Errorf("%s: %q, want …%s…", tt.tool, text(r), tt.want)
		}
		echo()
	}
	if r := text(call(t, reg, b.env, "mcp__ok__sleep", `{"seconds": 30}`)); !strings.Contains(r, "the end of its log:\nmcpserver: ready on stdio") {
		t.Errorf("the timeout's result does not quote the server's log: %q", r)
	}
	echo()
	if r := text(call(t, reg, b.env, "mcp__ok__crash", `{}`)); !strings.Contains(r, "crashing on purpose") {
		t.Errorf("the crash's result does not quote the server's log: %q", r)
	}
	echo()
	// Each failure stopped the server, and each next call started it.
	l := set.Log("ok")
	if n := strings.Count(l, "[den] starting "); n != 6 || !strings.Contains(l, "[den] stopped: no answer within 2s") {
		t.Errorf("%d starts; the log:\n%s", n, l)
	}
}

// TestGateDecides: a call of a tool goes through the permission gate:
// read-only tools run unasked, others of a host server are asked about
// (approved: it runs; refused: the model is told), the server's own
// rules in mcp.json win, and tools its filter hides are neither shown
// nor run.
func TestGateDecides(t *testing.T) {
	b := newBox(t)
	srv := server("h", true, testServer(t))
	srv.Permissions = []Rule{{"env", permission.Deny}}
	srv.Tools = Filter{Deny: []string{"crash"}}
	g := newGate(t, permission.Policy{Trust: permission.Trusted})
	set := NewSet(Options{Agent: "a", Session: "s1", Servers: []*Server{srv}, DataDir: b.data, Gate: g, Policy: permission.Policy{Trust: permission.Trusted}})
	defer set.Close()
	reg := registry(t, set.Offer(context.Background(), 0))
	if _, ok := reg.Tool("mcp__h__crash"); ok {
		t.Error("a tool the filter hides is shown")
	}
	if r := call(t, reg, b.env, "mcp__h__echo", `{"text": "a"}`); r.IsError {
		t.Errorf("read-only tool: %q", text(r))
	}
	g.answer = func(*permission.ApprovalRequest) permission.Answer { return permission.Answer{Approve: true} }
	if r := call(t, reg, b.env, "mcp__h__write_note", `{"text": "b"}`); r.IsError || text(r) != "noted: b" {
		t.Errorf("approved: %q", text(r))
	}
	g.answer = nil
	r := call(t, reg, b.env, "mcp__h__write_note", `{"text": "c"}`)
	if !r.IsError || !strings.Contains(text(r), "not run: mcp: the call was denied: write_note of h was denied (user)") {
		t.Errorf("refused: %q", text(r))
	}
	if r := call(t, reg, b.env, "mcp__h__env", `{}`); !r.IsError || !strings.Contains(text(r), "denied (policy)") {
		t.Errorf("denied by mcp.json: %q", text(r))
	}
	if got := strings.Join(g.askedAbout(), " "); got != "h/write_note h/write_note" {
		t.Errorf("asked about %s", got)
	}
	if _, err := set.Call(context.Background(), "h", "crash", []byte(`{}`)); !errors.Is(err, ErrDenied) {
		t.Errorf("den-mcp call of a hidden tool: %v", err)
	}
	var log []string
	for _, e := range g.audit(t) {
		log = append(log, e.Decision+"/"+e.DecidedBy+" "+strings.Join(e.Args, " "))
	}
	want := []string{`allow/policy call h/echo {"text":"a"}`, `allow/user call h/write_note {"text":"b"}`, `deny/user call h/write_note {"text":"c"}`, `deny/policy call h/env {}`}
	if strings.Join(log, "\n") != strings.Join(want, "\n") {
		t.Errorf("audit:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
}

// TestBudget: a server whose tools would take more than its share of a
// small window is offered through the mcp tool, which lists,
// describes and calls them; the prompt says so.
func TestBudget(t *testing.T) {
	b := newBox(t)
	set := NewSet(Options{Agent: "a", Session: "s1", Computer: b.start, DataDir: b.data, Gate: newGate(t, permission.Policy{}),
		Servers: []*Server{server("t", false, "den-test-mcp")}})
	defer set.Close()
	offer := set.Offer(context.Background(), 2000) // a window den takes as 32k: 5% is 1600 tokens
	reg := registry(t, offer)
	specs := reg.Specs()
	if direct := len(offer.Tools); direct != 10 {
		t.Fatalf("at 32k tokens the 10 tools should fit: %d tools", direct)
	}
	// A window where they do not: pretend the model's is tiny by giving
	// the server many tools' worth of description.
	set.mu.Lock()
	for _, tl := range set.known["t"].Tools {
		tl.Description = strings.Repeat("A long description of what the tool does. ", 40)
	}
	set.mu.Unlock()
	offer = set.Offer(context.Background(), 0)
	reg = registry(t, offer)
	specs = reg.Specs()
	if len(specs) != 1 || specs[0].Name != ProxyName {
		t.Fatalf("tools %+v", specs)
	}
	if !strings.Contains(offer.Prompt, "The tools of t would take too much of your context") {
		t.Errorf("prompt:\n%s", offer.Prompt)
	}
	if r := text(call(t, reg, b.env, "mcp", `{"action": "list", "server": "t"}`)); !strings.Contains(r, "echo: A long description") {
		t.Errorf("list: %q", r)
	}
	if r := text(call(t, reg, b.env, "mcp", `{"action": "describe", "server": "t", "tool": "echo"}`)); !strings.Contains(r, `"text"`) || !strings.Contains(r, "what to say back") {
		t.Errorf("describe: %q", r)
	}
	if r := call(t, reg, b.env, "mcp", `{"action": "call", "server": "t", "tool": "echo", "arguments": {"text": "via the proxy"}}`); r.IsError || text(r) != "echo: via the proxy" {
		t.Errorf("call: %q", text(r))
	}
	if r := call(t, reg, b.env, "mcp", `{"action": "call", "server": "t", "tool": "echo", "arguments": {"txt": 1}}`); !r.IsError || !strings.Contains(text(r), `missing required field "text"`) {
		t.Errorf("call with bad arguments: %q", text(r))
	}
	if r := call(t, reg, b.env, "mcp", `{"action": "call", "server": "nope", "tool": "echo"}`); !r.IsError || !strings.Contains(text(r), "the servers are: t") {
		t.Errorf("unknown server: %q", text(r))
	}
}

// TestCatalog: once den has listed a server, a later session offers
// its tools without starting it; the first call starts it.
func TestCatalog(t *testing.T) {
	b := newBox(t)
	opts := Options{Agent: "a", Session: "s1", Computer: b.start, DataDir: b.data, Gate: newGate(t, permission.Policy{}),
		Servers: []*Server{server("t", false, "den-test-mcp")}}
	first := NewSet(opts)
	if o := first.Offer(context.Background(), 0); len(o.Tools) != 10 {
		t.Fatalf("first offer: %d tools %v", len(o.Tools), o.Warnings)
	}
	first.Close()
	later := NewSet(opts)
	defer later.Close()
	reg := registry(t, later.Offer(context.Background(), 0))
	if st := later.Status(); st[0].State != Idle || st[0].Tools != 10 {
		t.Errorf("the offer started the server: %+v", st)
	}
	if r := call(t, reg, b.env, "mcp__t__echo", `{"text": "x"}`); r.IsError {
		t.Errorf("call: %q", text(r))
	}
	if st := later.Status(); st[0].State != Ready {
		t.Errorf("after a call: %+v", st)
	}
	// Another way of reaching it is another server: asked again.
	changed := *opts.Servers[0]
	changed.Args = []string{"die"}
	opts.Servers = []*Server{&changed}
	third := NewSet(opts)
	defer third.Close()
	if o := third.Offer(context.Background(), 0); len(o.Tools) != 0 || len(o.Warnings) != 1 {
		t.Errorf("a changed server offered the old tools: %d %v", len(o.Tools), o.Warnings)
	}
}

// TestResourcesAndPrompts: what den-mcp and /SERVER:PROMPT use.
func TestResourcesAndPrompts(t *testing.T) {
	b := newBox(t)
	set := NewSet(Options{Agent: "a", Session: "s1", Computer: b.start, DataDir: b.data, Gate: newGate(t, permission.Policy{}),
		Servers: []*Server{server("t", false, "den-test-mcp")}})
	defer set.Close()
	ctx := context.Background()
	res, _, err := set.Resources(ctx, "t")
	if err != nil || len(res) != 1 || res[0].URI != "test://hello" {
		t.Fatalf("resources %+v %v", res, err)
	}
	rr, err := set.Read(ctx, "t", "test://hello")
	if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "hello world" {
		t.Errorf("read %+v %v", rr, err)
	}
	ps, err := set.Prompts(ctx, "t")
	if err != nil || len(ps) != 1 || ps[0].Name != "greet" {
		t.Fatalf("prompts %+v %v", ps, err)
	}
	gp, err := set.Prompt(ctx, "t", "greet", map[string]string{"name": "Ada"})
	if err != nil || len(gp.Messages) != 1 {
		t.Fatalf("prompt %+v %v", gp, err)
	}
	if _, err := set.Tools(ctx, "nope"); !errors.Is(err, ErrUnknownServer) || !strings.Contains(err.Error(), "this agent's servers are t") {
		t.Errorf("unknown server: %v", err)
	}
}

// TestHTTPAndSSE: servers reached over streamable HTTP and over SSE on
// loopback, and a server with a url and no type that speaks only SSE.
func TestHTTPAndSSE(t *testing.T) {
	b := newBox(t)
	httpURL, sseURL := listen(t, "http"), listen(t, "sse")
	// A server that wants a key in a header: its value from den's
	// environment.
	target, _ := url.Parse(httpURL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	keyed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Api-Key") != "k-123" {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer keyed.Close()
	t.Setenv("DEN_TEST_KEY", "k-123")
	set := NewSet(Options{Agent: "a", Session: "s1", DataDir: b.data, Gate: newGate(t, permission.Policy{}),
		Servers: []*Server{
			{Name: "web", Type: HTTP, URL: httpURL, Enabled: true},
			{Name: "old", Type: SSE, URL: sseURL, Enabled: true},
			{Name: "guess", Type: HTTP, URL: sseURL, Enabled: true, urlOnly: true},
			{Name: "keyed", Type: HTTP, URL: keyed.URL, Headers: []KV{{"X-Api-Key", "${DEN_TEST_KEY}"}}, Enabled: true},
		}})
	defer set.Close()
	offer := set.Offer(context.Background(), 0)
	if len(offer.Warnings) != 0 {
		t.Fatalf("warnings %v", offer.Warnings)
	}
	reg := registry(t, offer)
	for _, name := range []string{"web", "old", "guess", "keyed"} {
		if r := call(t, reg, b.env, "mcp__"+name+"__echo", `{"text": "over the wire"}`); r.IsError || text(r) != "echo: over the wire" {
			t.Errorf("%s: %q", name, text(r))
		}
	}
	if !strings.Contains(offer.Prompt, "- web (at "+httpURL+")") {
		t.Errorf("prompt:\n%s", offer.Prompt)
	}
}

// TestCloseStopsAStart: closing the set ends a server's start under way
// (a session that ends does not wait for a server that never answers).
func TestCloseStopsAStart(t *testing.T) {
	b := newBox(t)
	srv := server("hang", false, "den-test-mcp", "hang")
	srv.StartupTimeout = time.Hour
	set := NewSet(Options{Agent: "a", Session: "s1", Computer: b.start, DataDir: b.data, Servers: []*Server{srv}})
	started := make(chan error, 1)
	go func() {
		_, err := set.Tools(context.Background(), "hang")
		started <- err
	}()
	for i := 0; !strings.Contains(set.Log("hang"), "[den] starting"); i++ {
		if i == 3000 {
			t.Fatal("the server did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	closed := make(chan struct{})
	go func() {
		set.Close()
		close(closed)
	}()
	select {
	case err := <-started:
		if err == nil {
			t.Error("the start succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close left the start running")
	}
	<-closed
}
