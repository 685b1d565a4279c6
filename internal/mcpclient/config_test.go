package mcpclient

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"den.dev/den/internal/permission"
)

// A file as Claude Desktop and Claude Code write it, with den's keys
// and keys of other programs.
const sampleFile = `{
  "mcpServers": {
    "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"], "env": {"DEBUG": "1"}},
    "files": {"type": "stdio", "command": "mcp-server-filesystem", "args": ["/srv"], "host": true,
      "permissions": {"*": "ask", "read_*": "allow", "read_secret": "deny"}, "tools": {"deny": ["write_*"]}},
    "remote": {"type": "http", "url": "https://mcp.example.com/mcp", "headers": {"Authorization": "Bearer x"},
      "agents": ["work"], "timeout": 90.5, "oauth": {"clientId": "den-app", "callbackPort": 8976}},
    "old": {"type": "sse", "url": "http://127.0.0.1:3001/sse", "enabled": false, "alwaysAllow": ["echo"]},
    "plain": {"url": "https://example.org/mcp", "note": "the team's wiki"}
  },
  "globalShortcut": "Ctrl+Space"
}`

func TestParseSample(t *testing.T) {
	f, err := Parse([]byte(sampleFile))
	if err != nil {
		t.Fatal(err)
	}
	want := []*Server{
		{Name: "everything", Type: Stdio, Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything"}, Env: []KV{{"DEBUG", "1"}}, Enabled: true},
		{Name: "files", Type: Stdio, Command: "mcp-server-filesystem", Args: []string{"/srv"}, Host: true, Enabled: true,
			Permissions: []Rule{{"*", permission.Ask}, {"read_*", permission.Allow}, {"read_secret", permission.Deny}}, Tools: Filter{Deny: []string{"write_*"}}},
		{Name: "remote", Type: HTTP, URL: "https://mcp.example.com/mcp", Headers: []KV{{"Authorization", "Bearer x"}}, Agents: []string{"work"},
			Enabled: true, Timeout: 90500 * time.Millisecond, OAuth: &OAuth{ClientID: "den-app", CallbackPort: 8976}},
		{Name: "old", Type: SSE, URL: "http://127.0.0.1:3001/sse", Enabled: false,
			extra: []field{{"alwaysAllow", []byte(`["echo"]`)}}},
		{Name: "plain", Type: HTTP, URL: "https://example.org/mcp", Enabled: true, Note: "the team's wiki", urlOnly: true},
	}
	if d := cmp.Diff(want, f.Servers, cmp.AllowUnexported(Server{}, field{}), cmpopts.EquateEmpty()); d != "" {
		t.Errorf("servers (-want +got):\n%s", d)
	}
	if len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0], "mcpServers.old.alwaysAllow") {
		t.Errorf("warnings %q", f.Warnings)
	}
	if got := f.For("work"); len(got) != 4 {
		t.Errorf("servers of agent work: %d, want 4 (everything, files, remote, plain)", len(got))
	}
	if got := f.For("home"); len(got) != 3 {
		t.Errorf("servers of agent home: %d, want 3", len(got))
	}

	// Written back and read again: the same servers, and what den does
	// not read is still there.
	out, err := f.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	g, err := Parse(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if d := cmp.Diff(f.Servers, g.Servers, cmp.AllowUnexported(Server{}, field{}), cmpopts.EquateEmpty(),
		cmp.Transformer("raw", func(f field) string { return f.key + "=" + strings.Join(strings.Fields(string(f.raw)), "") })); d != "" {
		t.Errorf("after a round trip (-before +after):\n%s\n%s", d, out)
	}
	for _, kept := range []string{`"globalShortcut": "Ctrl+Space"`, `"alwaysAllow"`, `"timeout": 90.5`, `"callbackPort": 8976`} {
		if !strings.Contains(string(out), kept) {
			t.Errorf("%s is not kept:\n%s", kept, out)
		}
	}
}

// TestParseErrors: each mistake is refused with the line, the column
// and the field it is in.
func TestParseErrors(t *testing.T) {
	tests := []struct{ name, file, want string }{
		{"not JSON", `{"mcpServers": {"a": {"command": "x",}}}`, "line 1, column 38: not valid JSON"},
		{"ends early", `{"mcpServers": {`, "not valid JSON: the file ends"},
		{"not an object", `[]`, "line 1, column 1: the file must be a JSON object"},
		{"servers not an object", `{"mcpServers": []}`, "line 1, column 16: mcpServers: want an object"},
		{"args", "{\"mcpServers\": {\n  \"a\": {\"command\": \"x\", \"args\": \"-y\"}}}", `line 2, column 33: mcpServers.a.args: want an array of strings, got a string`},
		{"arg", `{"mcpServers": {"a": {"command": "x", "args": ["ok", 3]}}}`, `mcpServers.a.args[1]: want a string, got a number`},
		{"env number", `{"mcpServers": {"a": {"command": "x", "env": {"PORT": 3000}}}}`, `mcpServers.a.env.PORT: want a string, got a number: write it in quotes, "3000"`},
		{"env name", `{"mcpServers": {"a": {"command": "x", "env": {"A B": "1"}}}}`, `mcpServers.a.env.A B: not a variable name`},
		{"header", `{"mcpServers": {"a": {"url": "https://x", "headers": {"X": "a\nb"}}}}`, `mcpServers.a.headers.X: not a valid HTTP header`},
		{"both", `{"mcpServers": {"a": {"command": "x", "url": "https://x"}}}`, `mcpServers.a: has both a command and a url`},
		{"neither", `{"mcpServers": {"a": {"env": {}}}}`, `mcpServers.a: has neither a command`},
		{"type", `{"mcpServers": {"a": {"type": "ws", "url": "https://x"}}}`, `mcpServers.a.type: "ws": want "stdio", "http" or "sse"`},
		{"type and command", `{"mcpServers": {"a": {"type": "http", "command": "x"}}}`, `type "http" needs a url`},
		{"url", `{"mcpServers": {"a": {"url": "ftp://x"}}}`, `mcpServers.a.url: "ftp://x" is not an http or https URL`},
		{"host on url", `{"mcpServers": {"a": {"url": "https://x", "host": true}}}`, `host, args and env are for servers den starts`},
		{"host", `{"mcpServers": {"a": {"command": "x", "host": "yes"}}}`, `mcpServers.a.host: want true or false, got a string`},
		{"egress", `{"mcpServers": {"a": {"command": "x", "egress": "closed"}}}`, `mcpServers.a.egress: "closed": want "open", "allowlist", "ask" or "off"`},
		{"egress rule", `{"mcpServers": {"a": {"command": "x", "egress": "allowlist", "allow": ["ok.example", "bad host"]}}}`, `mcpServers.a.allow[1]: egress rule "bad host": not a domain`},
		{"allow without egress", `{"mcpServers": {"a": {"command": "x", "allow": ["ok.example"]}}}`, `allow without egress`},
		{"egress on url", `{"mcpServers": {"a": {"url": "https://x", "egress": "off"}}}`, `egress and allow are for servers den starts`},
		{"decision", `{"mcpServers": {"a": {"command": "x", "permissions": {"*": "maybe"}}}}`, `mcpServers.a.permissions.*: "maybe": want "allow", "ask" or "deny"`},
		{"pattern", `{"mcpServers": {"a": {"command": "x", "tools": {"allow": ["[x"]}}}}`, `mcpServers.a.tools.allow[0]: "[x" is not a glob pattern`},
		{"tools key", `{"mcpServers": {"a": {"command": "x", "tools": {"alow": []}}}}`, `mcpServers.a.tools.alow: unknown key`},
		{"timeout", `{"mcpServers": {"a": {"command": "x", "timeout": -1}}}`, `mcpServers.a.timeout: want seconds above 0`},
		{"name", `{"mcpServers": {"my server": {"command": "x"}}}`, `mcpServers.my server: server name "my server"`},
		{"twice", `{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`, `line 1, column 40: not valid JSON: the key "a" is given twice`},
		{"oauth key", `{"mcpServers": {"a": {"url": "https://x", "oauth": {"client_id": "x"}}}}`, `mcpServers.a.oauth.client_id: unknown key`},
		{"oauth on command", `{"mcpServers": {"a": {"command": "x", "oauth": {}}}}`, `oauth is for servers den reaches`},
		{"empty command", `{"mcpServers": {"a": {"command": ""}}}`, `mcpServers.a.command: empty`},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.file))
		if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrConfig) {
			t.Errorf("%s: got %v, want …%s…", tt.name, err, tt.want)
		}
	}
}

// TestSaveLoad: the file is written whole, mode 0600, and read back;
// a file that does not exist is empty; a file others may read that
// holds env is warned about; Load names the file in its errors.
func TestSaveLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "den", FileName)
	f, err := Load(p)
	if err != nil || len(f.Servers) != 0 {
		t.Fatalf("missing file: %+v %v", f, err)
	}
	f.Set(&Server{Name: "a", Type: Stdio, Command: "x", Env: []KV{{"TOKEN", "secret"}}, Enabled: true})
	f.Set(&Server{Name: "b", Type: HTTP, URL: "https://x/mcp", Enabled: true})
	f.Set(&Server{Name: "a", Type: Stdio, Command: "y", Env: []KV{{"TOKEN", "secret"}}, Enabled: true, Egress: "allowlist", Allow: []string{"api.example", "*.cdn.example:443"}})
	if err := f.Save(p); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v %v", fi.Mode(), err)
	}
	g, err := Load(p)
	if err != nil || len(g.Servers) != 2 || g.Servers[0].Command != "y" || g.Servers[1].Type != HTTP || len(g.Warnings) != 0 {
		t.Fatalf("loaded %+v %v", g, err)
	}
	pol, own, err := g.Servers[0].EgressPolicy()
	if err != nil || !own || pol.Mode != "allowlist" || len(pol.Allow) != 2 || pol.Allow[1].String() != "*.cdn.example:443" || pol.Of != "mcp:a" {
		t.Errorf("the server's egress policy, saved and loaded: %+v %v %v", pol, own, err)
	}
	if _, own, _ := g.Servers[1].EgressPolicy(); own {
		t.Errorf("a server without egress has a policy of its own")
	}
	if !g.Remove("a") || g.Remove("a") || g.Get("a") != nil || g.Get("b") == nil {
		t.Error("Remove")
	}
	os.Chmod(p, 0o644)
	if g, _ := Load(p); len(g.Warnings) != 1 || !strings.Contains(g.Warnings[0], "chmod 600") {
		t.Errorf("warnings of a readable file: %q", g.Warnings)
	}
	os.WriteFile(p, []byte(`{"mcpServers": {"a": 1}}`), 0o600)
	if _, err := Load(p); err == nil || !strings.HasPrefix(err.Error(), p+":1:22: mcpServers.a:") {
		t.Errorf("error of a bad file: %v", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(p)); len(entries) != 1 {
		t.Errorf("left in the folder: %v", entries)
	}
}

// TestDecide: a tool's own name beats patterns, the longest pattern
// beats shorter ones, and without a rule the agent's policy decides.
func TestDecide(t *testing.T) {
	f, err := Parse([]byte(sampleFile))
	if err != nil {
		t.Fatal(err)
	}
	files := f.Get("files")
	trusted := permission.Policy{Trust: permission.Trusted}
	for tool, want := range map[string]permission.Decision{
		"read_file": permission.Allow, "read_secret": permission.Deny, "write_file": permission.Ask, "list": permission.Ask,
	} {
		if got := files.Decide(trusted, tool, false); got != want {
			t.Errorf("files %s: %s, want %s", tool, got, want)
		}
	}
	every := f.Get("everything")
	if got := every.Decide(trusted, "echo", false); got != permission.Allow {
		t.Errorf("a tool of a server in the computer, trusted: %s", got)
	}
	if got := every.Decide(permission.Policy{Trust: permission.Restricted}, "echo", false); got != permission.Ask {
		t.Errorf("restricted: %s", got)
	}
	if got := f.Get("remote").Decide(trusted, "search", true); got != permission.Allow {
		t.Errorf("a read-only tool of a remote server, trusted: %s", got)
	}
	if got := f.Get("remote").Decide(trusted, "create", false); got != permission.Ask {
		t.Errorf("a remote tool that writes, trusted: %s", got)
	}
	if files.Shows("write_file") || !files.Shows("read_file") {
		t.Error("tools.deny")
	}
	only := &Server{Tools: Filter{Allow: []string{"get_*"}, Deny: []string{"get_secret"}}}
	if !only.Shows("get_x") || only.Shows("get_secret") || only.Shows("put_x") {
		t.Error("tools.allow")
	}
}

func TestImport(t *testing.T) {
	desktop := `{"mcpServers": {"filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"]},
	  "github.com": {"command": "gh-mcp", "env": {"GITHUB_TOKEN": "ghp_x"}, "disabled": true}}, "theme": "dark"}`
	servers, notes, err := Import([]byte(desktop))
	if err != nil {
		t.Fatal(err)
	}
	if len(servers) != 2 || servers[0].Name != "filesystem" || servers[1].Name != "github-com" || servers[1].Enabled || len(servers[1].extra) != 0 {
		t.Errorf("servers %+v", servers)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "mcpServers.github.com: named github-com") {
		t.Errorf("notes %q", notes)
	}

	// ~/.claude.json: the user's servers and every project's; one name
	// twice with the same server is one server, with another it is
	// named in the notes.
	claude := `{"numStartups": 3, "mcpServers": {"ctx": {"type": "http", "url": "https://mcp.example.com/mcp"}},
	  "projects": {"/home/me/a": {"mcpServers": {"ctx": {"type": "http", "url": "https://mcp.example.com/mcp"}, "db": {"type": "stdio", "command": "db-mcp"}}},
	               "/home/me/b": {"mcpServers": {"db": {"command": "other-db-mcp"}}}, "/home/me/c": {"allowedTools": []}}}`
	servers, notes, err = Import([]byte(claude))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range servers {
		names = append(names, s.Name+":"+s.Type)
	}
	if strings.Join(names, " ") != "ctx:http db:stdio" || len(notes) != 1 || !strings.Contains(notes[0], "projects./home/me/b.mcpServers.db") {
		t.Errorf("servers %v notes %q", names, notes)
	}

	// VS Code keeps them under "servers".
	servers, _, err = Import([]byte(`{"servers": {"fetch": {"type": "stdio", "command": "uvx", "args": ["mcp-server-fetch"]}}, "inputs": []}`))
	if err != nil || len(servers) != 1 || servers[0].Command != "uvx" {
		t.Errorf("VS Code: %+v %v", servers, err)
	}

	// Errors name the field in the imported file.
	_, _, err = Import([]byte(`{"projects": {"/p": {"mcpServers": {"x": {"command": 1}}}}}`))
	if err == nil || !strings.Contains(err.Error(), "projects./p.mcpServers.x.command: want a string") {
		t.Errorf("error: %v", err)
	}
	if _, _, err := Import([]byte(`{"other": 1}`)); err == nil || !strings.Contains(err.Error(), "no servers in the file") {
		t.Errorf("no servers: %v", err)
	}
}
