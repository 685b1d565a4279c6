package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMCPClients(t *testing.T) {
	c, err := Load(write(t, `
[mcp_clients.claude-code]
agents = ["default", "coder"]
allow = ["exec"]
deny = ["run"]

[mcp_clients."*"]
ask = ["*"]
`), true)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := c.MCPClient("claude-code")
	want := MCPClient{Agents: []string{"default", "coder"}, Allow: []string{"exec"}, Deny: []string{"run"}}
	if !ok || !cmp.Equal(got, want) {
		t.Errorf("claude-code: %v %+v, want %+v", ok, got, want)
	}
	// A client without a table of its own gets "*"'s.
	if got, ok := c.MCPClient("codex"); !ok || !cmp.Equal(got, MCPClient{Ask: []string{"*"}}) {
		t.Errorf("codex: %v %+v, want the \"*\" table", ok, got)
	}
	c, err = Load(write(t, "[mcp_clients.a]\nallow = [\"exec\"]\n"), true)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := c.MCPClient("b"); ok || !cmp.Equal(got, MCPClient{}) {
		t.Errorf("b without a table and no \"*\": %v %+v", ok, got)
	}
}

func TestMCPClientErrors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"[mcp_clients.a]\nallow = [\"exce\"]\n", `:2: mcp_clients.a.allow: "exce" is not a tool`},
		{"[mcp_clients.a]\nallow = [\"exec\"]\n\ndeny = [\"exec\"]\n", `:4: mcp_clients.a.deny: "exec" is also in allow`},
		{"[mcp_clients.a]\nask = [\"*\"]\ndeny = [\"*\"]\n", `"*" is also in ask`},
		{"[mcp_clients.a]\nagents = [\"../x\"]\n", `:2: mcp_clients.a.agents: "../x" is not an agent's name`},
		{"[mcp_clients.a]\ntools = [\"exec\"]\n", "unknown key mcp_clients.a.tools"},
	} {
		p := write(t, c.text)
		_, err := Load(p, true)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.text, err, c.want)
		}
	}
}
