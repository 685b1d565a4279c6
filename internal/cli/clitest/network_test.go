package clitest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNetwork: under an allowlist, den exec's command cannot reach a
// host the rules do not name (its HTTP request gets den's 403, which
// says how to allow it, and so does stderr); den network log shows the
// refusal; den network allow adds the rule to the config, and the same
// command then reaches the host; den network disallow takes it away.
func TestNetwork(t *testing.T) {
	t.Parallel()
	d := newDen(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "site-token host=%s\n", r.Host)
	})}
	go srv.Serve(l)
	defer srv.Close()
	cfg := d.WriteConfig("config.toml", fmt.Sprintf(`[agents.default]
rootfs = "busybox"
egress = "allowlist"

[network]
hosts = { "site.example:80" = %q }
`, l.Addr().String()))
	fetch := []string{"--config", cfg, "exec", "--", "sh", "-c", `printf 'GET / HTTP/1.0\r\nHost: site.example\r\n\r\n' | nc -w 10 site.example 80`}

	r := d.Run(fetch...)
	hint := "den network allow --agent default site.example"
	if !strings.Contains(r.Stdout, "403 Forbidden") || !strings.Contains(r.Stdout, hint) || !strings.Contains(r.Stderr, hint) {
		t.Fatalf("a host the rules do not name: want den's 403 and the hint on stderr, got %v", r)
	}
	log := d.MustRun("--config", cfg, "network", "log").Stdout
	if !strings.Contains(log, "site.example") || !strings.Contains(log, "denied") {
		t.Errorf("den network log after the refusal:\n%s", log)
	}

	d.MustRun("--config", cfg, "network", "allow", "site.example")
	b, _ := os.ReadFile(cfg)
	if !strings.Contains(string(b), `allow = ["site.example"]`) {
		t.Errorf("the config after den network allow:\n%s", b)
	}
	if show := d.MustRun("--config", cfg, "network").Stdout; !strings.Contains(show, "egress allowlist") || !strings.Contains(show, "allow site.example") {
		t.Errorf("den network: %s", show)
	}
	r = d.Run(fetch...)
	if r.Code != 0 || !strings.Contains(r.Stdout, "site-token host=site.example") {
		t.Fatalf("after den network allow: %v", r)
	}
	lines := strings.Split(strings.TrimSpace(d.MustRun("--config", cfg, "network", "log", "--json", "--limit", "2").Stdout), "\n")
	var last struct {
		Type    string `json:"type"`
		Host    string `json:"host"`
		Port    int    `json:"port"`
		Allowed bool   `json:"allowed"`
		In      int64  `json:"bytes_in"`
		Out     int64  `json:"bytes_out"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &last); err != nil || last.Type != "egress" || last.Host != "site.example" ||
		last.Port != 80 || !last.Allowed || last.In == 0 || last.Out == 0 {
		t.Errorf("den network log --json, newest first: %v %+v\n%s", err, last, lines)
	}
	if denied := d.MustRun("--config", cfg, "network", "log", "--denied").Stdout; strings.Count(strings.TrimSpace(denied), "\n") != 1 || !strings.Contains(denied, "denied") {
		t.Errorf("den network log --denied:\n%s", denied)
	}

	d.MustRun("--config", cfg, "network", "disallow", "site.example")
	if r = d.Run(fetch...); !strings.Contains(r.Stdout, "403 Forbidden") {
		t.Errorf("after den network disallow: %v", r)
	}
}

// TestNetworkSkillsAndServers: den mcp add --egress gives a server a
// policy of its own in mcp.json; den network allow --mcp and --skill
// change a server's rules and the hosts a skill brings while in use;
// den network and den mcp list show them; mistakes are refused with
// nothing written.
func TestNetworkSkillsAndServers(t *testing.T) {
	t.Parallel()
	d := newDen(t)
	cfg := d.WriteConfig("config.toml", "[agents.default]\nrootfs = \"busybox\"\negress = \"allowlist\"\n")
	mcpFile := filepath.Join(filepath.Dir(cfg), "mcp.json")
	run := func(args ...string) Result { return d.Run(append([]string{"--config", cfg}, args...)...) }

	if r := run("mcp", "add", "files", "--host", "--egress", "allowlist", "--allow", "api.example", "--", "files-server"); r.Code != 0 ||
		!strings.Contains(r.Stdout, "Its network: own allowlist (api.example).") {
		t.Fatalf("den mcp add --egress: %v", r)
	}
	run("mcp", "add", "box", "--", "box-server")
	if r := run("network", "allow", "--mcp", "files", "uploads.example:443"); r.Code != 0 {
		t.Fatalf("den network allow --mcp: %v", r)
	}
	if r := run("network", "allow", "--mcp", "box", "pypi.org"); r.Code != 0 || !strings.Contains(r.Stderr, `it now has "egress": "allowlist"`) {
		t.Fatalf("den network allow --mcp for a server without a policy: %v", r)
	}
	var f struct {
		Servers map[string]struct {
			Egress string   `json:"egress"`
			Allow  []string `json:"allow"`
		} `json:"mcpServers"`
	}
	b, _ := os.ReadFile(mcpFile)
	if err := json.Unmarshal(b, &f); err != nil || f.Servers["files"].Egress != "allowlist" ||
		strings.Join(f.Servers["files"].Allow, " ") != "api.example uploads.example:443" ||
		f.Servers["box"].Egress != "allowlist" || strings.Join(f.Servers["box"].Allow, " ") != "pypi.org" {
		t.Errorf("mcp.json: %v\n%s", err, b)
	}
	if r := run("network", "allow", "--skill", "weather", "weather.example"); r.Code != 0 {
		t.Fatalf("den network allow --skill: %v", r)
	}
	b, _ = os.ReadFile(cfg)
	if !strings.Contains(string(b), "[agents.default.skills.weather]") || !strings.Contains(string(b), `allow = ["weather.example"]`) {
		t.Errorf("the config after den network allow --skill:\n%s", b)
	}
	show := run("network").Stdout
	for _, want := range []string{"skill weather, while in use in a session: allow weather.example",
		"MCP server files: own allowlist (api.example, uploads.example:443)", "MCP server box: own allowlist (pypi.org)"} {
		if !strings.Contains(show, want) {
			t.Errorf("den network lacks %q:\n%s", want, show)
		}
	}
	var list struct {
		Servers []struct {
			Name, Network string
		} `json:"servers"`
	}
	if err := json.Unmarshal([]byte(run("mcp", "list", "--json").Stdout), &list); err != nil || len(list.Servers) != 2 || list.Servers[0].Network != "own allowlist (api.example, uploads.example:443)" {
		t.Errorf("den mcp list --json: %v %+v", err, list)
	}
	run("network", "disallow", "--mcp", "files", "api.example")
	if b, _ := os.ReadFile(mcpFile); strings.Contains(string(b), `"api.example"`) || !strings.Contains(string(b), "uploads.example:443") {
		t.Errorf("mcp.json after disallow: %s", b)
	}

	before, _ := os.ReadFile(mcpFile)
	beforeCfg, _ := os.ReadFile(cfg)
	for _, args := range [][]string{
		{"network", "allow", "--mcp", "nosuch", "x.example"},
		{"network", "allow", "--skill", "Bad_Name", "x.example"},
		{"network", "allow", "--skill", "weather", "--mcp", "files", "x.example"},
		{"network", "allow", "--mcp", "files", "bad host"},
		{"mcp", "add", "web", "--url", "https://mcp.example/", "--egress", "allowlist"},
		{"mcp", "add", "loose", "--allow", "x.example", "--", "loose-server"},
		{"mcp", "add", "odd", "--egress", "sometimes", "--", "odd-server"},
	} {
		if r := run(args...); r.Code == 0 || r.Stderr == "" {
			t.Errorf("den %s: want a refusal, got %v", strings.Join(args, " "), r)
		}
	}
	after, _ := os.ReadFile(mcpFile)
	afterCfg, _ := os.ReadFile(cfg)
	if string(after) != string(before) || string(afterCfg) != string(beforeCfg) {
		t.Errorf("a refused command changed the files")
	}
}
