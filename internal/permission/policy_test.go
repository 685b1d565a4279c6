package permission

import (
	"strings"
	"testing"
)

func TestPolicyDefaults(t *testing.T) {
	models := []string{"anthropic/claude-haiku-4-5", "openai/*"}
	tests := []struct {
		cmd, action, subject string
		restricted, trusted  Decision
	}{
		{CmdOpen, "", "https://example.com/x", Allow, Allow},
		{CmdOpen, "", "HTTP://example.com", Allow, Allow},
		{CmdOpen, "", "/workspace/report.pdf", Ask, Allow},
		{CmdOpen, "", "file:///etc/passwd", Ask, Allow},
		{CmdOpen, "", "javascript:alert(1)", Ask, Allow},
		{CmdNotify, "", "", Allow, Allow},
		{CmdAsk, "", "", Allow, Allow},
		{CmdModel, "list", "", Allow, Allow},
		{CmdModel, "run", "anthropic/claude-haiku-4-5", Ask, Allow},
		{CmdModel, "run", "openai/gpt-5-mini", Ask, Allow},
		{CmdModel, "run", "anthropic/claude-opus-4-1", Deny, Ask},
		{CmdModel, "run", "", Deny, Ask},
		{CmdSessions, "list", "", Allow, Allow},
		{CmdSessions, "show", "", Ask, Allow},
		{CmdSessions, "search", "", Ask, Allow},
		{CmdSessions, "send", "", Ask, Ask},
		{CmdConfig, "get", "", Allow, Allow},
		{CmdConfig, "set", "", Deny, Ask},
		{CmdClipboard, "read", "", Ask, Ask},
		{CmdClipboard, "write", "", Ask, Allow},
		{CmdSpeak, "", "", Allow, Allow},
		{CmdMCP, "list", "", Allow, Allow},
		{CmdMCP, "call", "", Allow, Allow},
		{CmdMCP, "read", "", Ask, Allow},
		{CmdSchedule, "list", "", Allow, Allow},
		{CmdSchedule, "history", "3", Allow, Allow},
		{CmdSchedule, "add", "", Ask, Allow},
		{CmdSchedule, "add", "openai/gpt-5-mini", Ask, Allow},
		{CmdSchedule, "add", "anthropic/claude-opus-4-1", Ask, Ask},
		{CmdSchedule, "edit", "3", Ask, Allow},
		{CmdSchedule, "rm", "3", Ask, Allow},
		{CmdSchedule, "run", "3", Ask, Allow},
		{"den-unknown", "", "", Ask, Ask},
		{CmdSessions, "delete", "", Ask, Ask}, // an action the table does not know
	}
	for _, tt := range tests {
		for trust, want := range map[Trust]Decision{Restricted: tt.restricted, Trusted: tt.trusted, Full: Allow} {
			p := Policy{Trust: trust, Models: models}
			if got := p.DecideFor(tt.cmd, tt.action, tt.subject); got != want {
				t.Errorf("%s: %s %s %q = %s, want %s", trust, tt.cmd, tt.action, tt.subject, got, want)
			}
		}
	}
	// The zero trust is trusted; Decide knows no subject.
	if got := (Policy{}).Decide(CmdConfig, "set"); got != Ask {
		t.Errorf("zero policy: config set = %s, want ask", got)
	}
	if got := (Policy{Models: models}).Decide(CmdModel, "run"); got != Ask {
		t.Errorf("model run without a model = %s, want ask", got)
	}
}

func TestPolicyOverrides(t *testing.T) {
	p := Policy{Trust: Full, Overrides: map[string]Decision{
		"den-config set":    Deny,
		"den-sessions":      Ask,
		"den-sessions list": Allow, // the action's key wins over the command's
		"den-model run":     Ask,
	}}
	tests := []struct {
		cmd, action, subject string
		want                 Decision
	}{
		{CmdConfig, "set", "", Deny},
		{CmdConfig, "get", "", Allow},
		{CmdSessions, "send", "", Ask},
		{CmdSessions, "show", "", Ask},
		{CmdSessions, "list", "", Allow},
		{CmdModel, "run", "any/model", Ask},
		{CmdOpen, "", "x", Allow},
	}
	for _, tt := range tests {
		if got := p.DecideFor(tt.cmd, tt.action, tt.subject); got != tt.want {
			t.Errorf("%s %s = %s, want %s", tt.cmd, tt.action, got, tt.want)
		}
	}
	// An override allows a model off the allow-list, even restricted.
	r := Policy{Trust: Restricted, Overrides: map[string]Decision{"den-model run": Allow}}
	if got := r.DecideFor(CmdModel, "run", "x/y"); got != Allow {
		t.Errorf("restricted with override: model run = %s, want allow", got)
	}
}

func TestParsePolicy(t *testing.T) {
	p, err := ParsePolicy(" Restricted ", map[string]string{"den-config  set": "DENY", "den-open": "allow"}, []string{"anthropic/*"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Trust != Restricted || p.Overrides["den-config set"] != Deny || p.Overrides["den-open"] != Allow || !p.ModelAllowed("anthropic/claude") {
		t.Errorf("parsed %+v", p)
	}
	if p, err := ParsePolicy("", nil, nil); err != nil || p.Trust != Trusted {
		t.Errorf("empty: %+v %v", p, err)
	}
	bad := []struct {
		trust     string
		overrides map[string]string
		models    []string
		want      string
	}{
		{"root", nil, nil, `trust "root"`},
		{"", map[string]string{"den-open": "maybe"}, nil, `permission "den-open": decision "maybe"`},
		{"", map[string]string{"den-config set key": "deny"}, nil, `want "command" or "command action"`},
		{"", map[string]string{"": "deny"}, nil, `want "command" or "command action"`},
		{"", map[string]string{"Den-Open": "deny"}, nil, `not a command or action name`},
		{"", map[string]string{"den-open": "deny", "den-open ": "allow"}, nil, "set twice"},
		{"", nil, []string{"a/["}, "bad pattern"},
		{"", nil, []string{" "}, "empty entry"},
	}
	for _, b := range bad {
		_, err := ParsePolicy(b.trust, b.overrides, b.models)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("ParsePolicy(%q, %v, %v) = %v, want an error containing %q", b.trust, b.overrides, b.models, err, b.want)
		}
	}
}

// TestDecideMCP: the defaults for MCP tools by trust level, where the
// server runs and whether the tool only reads; the user's "mcp call"
// and "mcp" overrides win.
func TestDecideMCP(t *testing.T) {
	tests := []struct {
		place                     MCPPlace
		readOnly                  bool
		restricted, trusted, full Decision
	}{
		{MCPInComputer, true, Allow, Allow, Allow},
		{MCPInComputer, false, Ask, Allow, Allow},
		{MCPOnHost, true, Ask, Allow, Allow},
		{MCPOnHost, false, Ask, Ask, Allow},
		{MCPRemote, true, Ask, Allow, Allow},
		{MCPRemote, false, Ask, Ask, Allow},
	}
	for _, tt := range tests {
		for trust, want := range map[Trust]Decision{Restricted: tt.restricted, Trusted: tt.trusted, Full: tt.full, "": tt.trusted} {
			if got := (Policy{Trust: trust}).DecideMCP(tt.place, tt.readOnly); got != want {
				t.Errorf("%q place %d read-only %v = %s, want %s", trust, tt.place, tt.readOnly, got, want)
			}
		}
	}
	p := Policy{Trust: Full, Overrides: map[string]Decision{"mcp": Deny}}
	if got := p.DecideMCP(MCPInComputer, true); got != Deny {
		t.Errorf("override mcp = deny under full: %s", got)
	}
	p.Overrides["mcp call"] = Ask
	if got := p.DecideMCP(MCPInComputer, true); got != Ask {
		t.Errorf("override mcp call wins over mcp: %s", got)
	}
}

// TestMCPClientDefaults: another agent reads freely, talks to the agent
// and writes files where den trusts its agent, and runs a command only
// when the user allows it, whatever the agent's trust.
func TestMCPClientDefaults(t *testing.T) {
	tests := []struct {
		tool                      string
		restricted, trusted, full Decision
	}{
		{"read_file", Allow, Allow, Allow},
		{"list_files", Allow, Allow, Allow},
		{"sessions_list", Allow, Allow, Allow},
		{"session_read", Allow, Allow, Allow},
		{"run", Ask, Allow, Allow},
		{"write_file", Ask, Allow, Allow},
		{"exec", Ask, Ask, Ask},
	}
	for _, tt := range tests {
		for trust, want := range map[Trust]Decision{Restricted: tt.restricted, Trusted: tt.trusted, Full: tt.full} {
			p := Policy{Trust: trust}
			if got := p.DecideFor(CmdMCPClient, tt.tool, "claude-code"); got != want {
				t.Errorf("%s: mcp-client %s = %s, want %s", trust, tt.tool, got, want)
			}
		}
	}
	// The user's word wins, at every level.
	for _, trust := range []Trust{Restricted, Trusted, Full} {
		p := Policy{Trust: trust, Overrides: map[string]Decision{"mcp-client exec": Allow, "mcp-client read_file": Deny}}
		if got := p.DecideFor(CmdMCPClient, "exec", "claude-code"); got != Allow {
			t.Errorf("%s with exec allowed: %s", trust, got)
		}
		if got := p.DecideFor(CmdMCPClient, "read_file", "claude-code"); got != Deny {
			t.Errorf("%s with read_file denied: %s", trust, got)
		}
	}
}
