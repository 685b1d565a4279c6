package clitest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"den.dev/den/internal/llm/llmtest"
)

// mcpEnv is the environment of den run against fake.
func mcpEnv(fake *llmtest.Server) []string {
	return []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + fake.URL}
}

// toolNames is the tools of an Anthropic request.
func toolNames(t *testing.T, body []byte) []string {
	t.Helper()
	var r struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range r.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// noWarnings fails the test on a warning event (an MCP server den
// could not list, a tool whose schema it left out).
func noWarnings(t *testing.T, events []map[string]any) {
	t.Helper()
	for _, w := range ofType(events, "warning") {
		t.Errorf("warning: %v", w["message"])
	}
}

// TestMCPEverythingInComputer: the reference server
// @modelcontextprotocol/server-everything runs over stdio inside a
// Debian computer with Node.js installed there; den mcp test starts it
// there, and den run's model sees and calls its tools, whose results
// (an image too) reach the model.
func TestMCPEverythingInComputer(t *testing.T) {
	layer := nodeLayer(t)
	d := newDen(t)
	cfg := d.WriteConfig("config.toml", fmt.Sprintf("[agents.default]\nrootfs = \"tar:%s\"\n", layer))
	d.MustRun("--config", cfg, "mcp", "add", "everything", "--", "mcp-server-everything")
	test := d.MustRun("--config", cfg, "mcp", "test", "everything")
	for _, want := range []string{"everything: computer", "server: mcp-servers/everything", "tools: ", "prompts: ", "resources: "} {
		if !strings.Contains(test.Stdout, want) {
			t.Errorf("den mcp test lacks %q:\n%s", want, test)
		}
	}
	tools := d.MustRun("--config", cfg, "mcp", "tools", "everything")
	if !strings.Contains(tools.Stdout, "mcp__everything__get-sum") || !strings.Contains(tools.Stdout, "allow") {
		t.Errorf("den mcp tools:\n%s", tools.Stdout)
	}
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Calls: []llmtest.Call{
			{ID: "toolu_1", Name: "mcp__everything__echo", Input: `{"message":"hello from den"}`},
			{ID: "toolu_2", Name: "mcp__everything__get-sum", Input: `{"a":2,"b":3}`},
			{ID: "toolu_3", Name: "mcp__everything__get-tiny-image", Input: `{}`},
		}},
		llmtest.Turn{Text: "done"})
	events, r := runJSON(t, d, mcpEnv(fake), "--config", cfg, "use the tools")
	if r.Code != 0 {
		t.Fatalf("den run: %s", r)
	}
	noWarnings(t, events)
	reqs := fake.Requests()
	if names := strings.Join(toolNames(t, reqs[0].Body), " "); !strings.Contains(names, "mcp__everything__echo") || !strings.Contains(names, "mcp__everything__get-tiny-image") {
		t.Errorf("tools of the request: %s", names)
	}
	body := string(reqs[1].Body)
	for _, want := range []string{"Echo: hello from den", "The sum of 2 and 3 is 5.", `"type":"image"`, "den://attachments/mcp-everything-get-tiny-image-"} {
		if !strings.Contains(body, want) {
			t.Errorf("the results the model got lack %q", want)
		}
	}
}

// loopback makes a Node.js server listen on 127.0.0.1 only, whatever it
// asks for (server-everything listens on every interface).
const loopback = `const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if ((typeof args[0] === "number" || /^\d+$/.test(String(args[0]))) && typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
  return listen.apply(this, args);
};
`

// freePort is a loopback port nothing listens on now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestMCPEverythingStreamableHTTP: the same reference server over
// streamable HTTP on loopback, reached by den from the host.
func TestMCPEverythingStreamableHTTP(t *testing.T) {
	mods := npmPackages(t)
	preload := filepath.Join(t.TempDir(), "loopback.cjs")
	os.WriteFile(preload, []byte(loopback), 0o644)
	port := freePort(t)
	srv := exec.Command("node", "--require", preload, filepath.Join(mods, "@modelcontextprotocol/server-everything/dist/index.js"), "streamableHttp")
	srv.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Process.Kill()
		srv.Wait()
	})
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(sc.Text(), "listening on port") {
	}
	go func() {
		for sc.Scan() {
		}
	}()
	d := newDen(t)
	serveConfig(t, d, "")
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	d.MustRun("mcp", "add", "web", "--url", url)
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "mcp__web__echo", Input: `{"message":"over streamable HTTP"}`}}},
		llmtest.Turn{Text: "done"})
	events, r := runJSON(t, d, mcpEnv(fake), "echo it")
	if r.Code != 0 {
		t.Fatalf("den run: %s", r)
	}
	noWarnings(t, events)
	if body := string(fake.Requests()[1].Body); !strings.Contains(body, "Echo: over streamable HTTP") {
		t.Errorf("the result the model got: %.1500s", body)
	}
	if list := d.MustRun("mcp", "list"); !strings.Contains(list.Stdout, "http 127.0.0.1:") {
		t.Errorf("den mcp list:\n%s", list.Stdout)
	}
}

// TestMCPFilesystemOnHost: @modelcontextprotocol/server-filesystem
// runs on the host ("host": true) over a folder of the user's: a
// read-only tool runs unasked, a write is asked about (denied by den
// run with nobody to ask, approved with --yes), and den doctor marks
// the server as one that runs with the user's rights.
func TestMCPFilesystemOnHost(t *testing.T) {
	mods := npmPackages(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from the host\n"), 0o644)
	d := newDen(t)
	serveConfig(t, d, "")
	d.MustRun("mcp", "add", "files", "--host", "--", "node", filepath.Join(mods, "@modelcontextprotocol/server-filesystem/dist/index.js"), dir)
	read := fmt.Sprintf(`{"path":%q}`, filepath.Join(dir, "hello.txt"))
	write := fmt.Sprintf(`{"path":%q,"content":"written by den"}`, filepath.Join(dir, "new.txt"))
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "mcp__files__read_text_file", Input: read}}},
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_2", Name: "mcp__files__write_file", Input: write}}},
		llmtest.Turn{Text: "done"},
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_3", Name: "mcp__files__write_file", Input: write}}},
		llmtest.Turn{Text: "written"})
	events, r := runJSON(t, d, mcpEnv(fake), "read and write")
	if r.Code != 0 {
		t.Fatalf("den run: %s", r)
	}
	noWarnings(t, events)
	reqs := fake.Requests()
	if body := string(reqs[1].Body); !strings.Contains(body, "hello from the host") {
		t.Errorf("the read: %.1500s", body)
	}
	if body := string(reqs[2].Body); !strings.Contains(body, "not run: mcp: the call was denied: write_file of files was denied (unattended)") {
		t.Errorf("the unasked write: %.1500s", body)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); err == nil {
		t.Error("the denied write wrote")
	}
	_, r = runJSON(t, d, mcpEnv(fake), "--yes", "write it")
	if r.Code != 0 {
		t.Fatalf("den run --yes: %s", r)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "new.txt")); string(b) != "written by den" {
		t.Errorf("new.txt: %q", b)
	}
	if audit := d.MustRun("audit").Stdout; strings.Count(audit, "mcp call files/write_file") != 2 || !strings.Contains(audit, "mcp call files/read_text_file") {
		t.Errorf("den audit:\n%s", audit)
	}
	if doc := d.Run("doctor"); !strings.Contains(doc.Stdout, "MCP files: HOST: runs node on this machine with your rights") {
		t.Errorf("den doctor:\n%s", doc.Stdout)
	}
}

// TestWebMCPPrompts: once a session has used the agent's MCP servers,
// typing "/" in the composer suggests their prompts as /SERVER:PROMPT;
// one picked and sent (with its argument) sends that prompt's text.
func TestWebMCPPrompts(t *testing.T) {
	mods := npmPackages(t)
	p, fake := serveWith(t, "", llmtest.Turn{Text: "ok"}, llmtest.Turn{Text: "Sunny."})
	mcpJSON := fmt.Sprintf(`{"mcpServers": {"everything": {"command": "node", "args": [%q], "host": true}}}`,
		filepath.Join(mods, "@modelcontextprotocol/server-everything/dist/index.js"))
	if err := os.WriteFile(filepath.Join(p.den.ConfigHome, "den", "mcp.json"), []byte(mcpJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	b := openBrowser(t, p, phoneScreen)
	b.newChat()
	b.send("hi")
	b.waitText(".msg.assistant .md", "ok")
	b.run(chromedp.SendKeys(chromedp.CSS(`#composer`), "/every"))
	b.waitText(".suggestions", "/everything:args-prompt")
	b.shot("mcp-prompt-suggestions")
	b.run(chromedp.Click(chromedp.Search(`//ul[@class="suggestions"]//button[contains(., "/everything:args-prompt")]`)),
		chromedp.SendKeys(chromedp.CSS(`#composer`), "city=Lisbon"),
		chromedp.Click(chromedp.CSS(`button[aria-label="Send"]`)))
	b.waitText(".msg.assistant .md", "Sunny.")
	if body := string(fake.Requests()[1].Body); !strings.Contains(body, "What's weather in Lisbon?") {
		t.Errorf("the prompt did not reach the model: %.2000s", body)
	}
}
