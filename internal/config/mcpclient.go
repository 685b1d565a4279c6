package config

import (
	"fmt"
	"regexp"
	"slices"

	"github.com/BurntSushi/toml"
)

// MCPClient is what one client of den's MCP server (another agent,
// such as Claude Code, reaching den with den mcp serve or /mcp) may
// do. The client is known by the name it gives when it connects, or
// the one den mcp serve --client gives it.
//
// Tools are the MCP server's (MCPTools); "*" in a list stands for every
// tool not named in another list. A tool in Allow runs without asking,
// one in Ask asks the user each time (unless an earlier answer covers
// it), one in Deny is refused. What the lists leave out is decided by
// the agent's permissions (keys "mcp-client TOOL") and trust level.
type MCPClient struct {
	// Agents are the agents the client may use; empty: every agent den
	// knows.
	Agents []string `toml:"agents"`
	Allow  []string `toml:"allow"`
	Ask    []string `toml:"ask"`
	Deny   []string `toml:"deny"`
}

// MCPAnyClient is the key of the [mcp_clients] table that applies to
// every client without a table of its own.
const MCPAnyClient = "*"

// MCPTools are the tools of den's MCP server, as the lists of an
// [mcp_clients] table name them.
func MCPTools() []string {
	return []string{"run", "exec", "read_file", "write_file", "list_files", "sessions_list", "session_read"}
}

// MCPClient returns the settings of the client called name: its own
// table, else the "*" table, else none (ok false).
func (c *Config) MCPClient(name string) (client MCPClient, ok bool) {
	if m, found := c.MCPClients[name]; found {
		return m, true
	}
	m, found := c.MCPClients[MCPAnyClient]
	return m, found
}

// agentName is what an agent's name may be (computer.ValidName's rule).
var agentName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// validateMCPClients checks every [mcp_clients.NAME] table: known
// tools, each in one list at most, and agent names an agent can have.
func (c *Config) validateMCPClients(data []byte) error {
	tools := MCPTools()
	for name, m := range c.MCPClients {
		at := func(k string) string {
			return fmt.Sprintf("%s:%d: mcp_clients.%s.%s", c.path, lineOf(data, toml.Key{"mcp_clients", name, k}), name, k)
		}
		if name == "" {
			return fmt.Errorf("%w: %s:%d: mcp_clients: a client's name cannot be empty", ErrInvalid, c.path, lineOf(data, toml.Key{"mcp_clients"}))
		}
		for _, a := range m.Agents {
			if !agentName.MatchString(a) {
				return fmt.Errorf("%w: %s: %q is not an agent's name (1-64 letters, digits, '.', '_' or '-')", ErrInvalid, at("agents"), a)
			}
		}
		seen := map[string]string{}
		for _, list := range []struct {
			key   string
			tools []string
		}{{"allow", m.Allow}, {"ask", m.Ask}, {"deny", m.Deny}} {
			for _, t := range list.tools {
				if t != "*" && !slices.Contains(tools, t) {
					return fmt.Errorf("%w: %s: %q is not a tool of den's MCP server: want \"*\" or one of %v", ErrInvalid, at(list.key), t, tools)
				}
				if prev, dup := seen[t]; dup {
					return fmt.Errorf("%w: %s: %q is also in %s: name each tool in one list", ErrInvalid, at(list.key), t, prev)
				}
				seen[t] = list.key
			}
		}
	}
	return nil
}
