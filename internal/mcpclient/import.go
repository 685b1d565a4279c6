package mcpclient

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Import reads the servers of another MCP client's file: Claude
// Desktop's claude_desktop_config.json, Claude Code's .mcp.json or
// ~/.claude.json (its user servers and every project's), Cursor's
// mcp.json, or VS Code's mcp.json ("servers"). Each server is read as
// den reads its own file; a name den does not take is changed (and
// said so in the notes), "disabled": true becomes "enabled": false,
// and a server found twice under one name is taken once when both are
// the same, else the first is kept and the other named in the notes.
func Import(data []byte) (servers []*Server, notes []string, err error) {
	root, err := parseTree(data)
	if err != nil {
		var se *syntaxError
		errors.As(err, &se)
		line, col := position(data, se.off)
		return nil, nil, &ConfigError{Line: line, Col: col, Problem: "not valid JSON: " + se.msg}
	}
	p := &parser{data: data, f: &File{}}
	if root.kind != '{' {
		return nil, nil, p.errAt(root, "", "want a JSON object")
	}
	type found struct {
		at   string
		name string
		n    *node
	}
	var all []found
	collect := func(at string, n *node) error {
		if n == nil {
			return nil
		}
		if n.kind != '{' {
			return p.errAt(n, at, "want an object of servers by name, got "+n.what())
		}
		for i, name := range n.keys {
			all = append(all, found{at, name, n.vals[i]})
		}
		return nil
	}
	for _, key := range []string{"mcpServers", "servers"} {
		if err := collect(key, root.get(key)); err != nil {
			return nil, nil, err
		}
	}
	if projects := root.get("projects"); projects != nil && projects.kind == '{' {
		for i, dir := range projects.keys {
			if pr := projects.vals[i]; pr.kind == '{' {
				if err := collect("projects."+dir+".mcpServers", pr.get("mcpServers")); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	if len(all) == 0 {
		return nil, nil, fmt.Errorf("%w: no servers in the file (no \"mcpServers\" or \"servers\" object)", ErrConfig)
	}
	for _, x := range all {
		name := importName(x.name)
		s, err := p.server(name, x.n)
		if err != nil {
			var ce *ConfigError
			if errors.As(err, &ce) {
				ce.Field = x.at + "." + x.name + strings.TrimPrefix(ce.Field, "mcpServers."+name)
			}
			return nil, nil, err
		}
		if name != x.name {
			notes = append(notes, fmt.Sprintf("%s.%s: named %s (den's server names are letters, digits, '_' and '-')", x.at, x.name, name))
		}
		s.extra = slices.DeleteFunc(s.extra, func(f field) bool {
			if f.key == "disabled" && string(f.raw) == "true" {
				s.Enabled = false
			}
			return f.key == "disabled"
		})
		if i := slices.IndexFunc(servers, func(o *Server) bool { return o.Name == s.Name }); i >= 0 {
			if servers[i].Fingerprint() != s.Fingerprint() {
				notes = append(notes, fmt.Sprintf("%s.%s: another server of that name came first; this one is left out", x.at, x.name))
			}
			continue
		}
		servers = append(servers, s)
	}
	return servers, notes, nil
}

var notNameChar = regexp.MustCompile(`[^A-Za-z0-9_-]+`)

// importName is a name den takes for a server another client names.
func importName(name string) string {
	if ValidName(name) == nil {
		return name
	}
	n := strings.Trim(notNameChar.ReplaceAllString(name, "-"), "-_")
	if len(n) > 48 {
		n = n[:48]
	}
	if n == "" {
		n = "server"
	}
	return n
}
