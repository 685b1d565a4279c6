package mcpserver

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/config"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/store"
)

// TestExecAsks: exec asks the user by default; the approval is an event
// of the session, answered outside MCP; approved, the command runs,
// denied, the result says so and nothing runs. Every call is audited
// as the client's.
func TestExecAsks(t *testing.T) {
	h := newHarness(t, nil, Options{})
	c := h.connect(t, "claude-code")
	var w WriteOut
	c.ok(t, "write_file", map[string]any{"path": "x.txt", "content": "x"}, &w)
	ctx := context.Background()

	answer := func(approve bool) *permission.ApprovalRequest {
		t.Helper()
		select {
		case req := <-h.told:
			if _, err := h.env.RT.Answer(ctx, req.ID, approve, permission.Once, "user"); err != nil {
				t.Fatal(err)
			}
			return req
		case <-time.After(time.Minute):
			t.Fatal("no approval was asked for")
		}
		return nil
	}
	approved := c.async("exec", map[string]any{"command": "echo approved > approved.txt; echo ran"})
	req := answer(true)
	var e ExecOut
	decode(t, <-approved, &e)
	if e.ExitCode != 0 || e.Output != "ran\n" {
		t.Errorf("exec once approved: %+v", e)
	}
	if req.Command != "mcp-client" || req.Action != "exec" || req.Subject != "claude-code" || req.Agent != "default" || req.Session != w.Session {
		t.Errorf("the approval: %+v", req)
	}
	if q, want := req.Question(), "MCP client claude-code wants, with agent default: exec 'echo approved > approved.txt; echo ran'"; !strings.HasPrefix(q, want) {
		t.Errorf("question %q, want it to start %q", q, want)
	}
	if got, ok := waitProgress(t, c, []string{"waiting for the user's approval in den (den approve " + req.ID + "): " + req.Question()}); !ok {
		t.Errorf("the client was not told it waits: %q", got)
	}
	// The approval is an event of the session, for den's faces.
	evs, err := h.env.Store.Events(ctx, w.Session, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	if !strings.Contains(strings.Join(types, " "), "approval_request approval_resolved") {
		t.Errorf("the session's events: %v", types)
	}

	denied := c.async("exec", map[string]any{"command": "echo denied > denied.txt"})
	answer(false)
	if res := <-denied; !res.IsError || !strings.Contains(text(res), "exec was denied: the user said no") {
		t.Errorf("exec denied: error %v, %q", res.IsError, text(res))
	}
	var l ListOut
	c.ok(t, "list_files", map[string]any{}, &l)
	for _, e := range l.Entries {
		if e.Name == "denied.txt" {
			t.Error("a denied command ran")
		}
	}
	// In a session still to make, the session is made first: the
	// approval is the session's, where den's faces show it.
	fresh := c.async("exec", map[string]any{"command": "true", "session": "fresh"})
	req = answer(false)
	<-fresh
	sess, err := h.env.Store.GetSession(ctx, req.Session)
	if err != nil || sess.Title != "fresh" {
		t.Errorf("the approval of an exec in a new session belongs to %q: %+v %v", req.Session, sess, err)
	}

	audit, err := h.env.Store.ListAudit(ctx, store.AuditFilter{Command: "mcp-client"}, 100)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, a := range audit {
		rows = append(rows, strings.Join(append([]string{a.Decision, a.DecidedBy}, a.Args[:2]...), " "))
	}
	want := []string{ // newest first
		"deny user claude-code exec",
		"allow policy claude-code list_files",
		"deny user claude-code exec",
		"allow user claude-code exec",
		"allow policy claude-code write_file",
	}
	if !cmp.Equal(rows, want) {
		t.Errorf("audit:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
}

// TestApprovalTimesOut: an ask nobody answers is denied, and the
// result says how the user answers next time.
func TestApprovalTimesOut(t *testing.T) {
	h := newHarness(t, nil, Options{ApprovalTimeout: 300 * time.Millisecond})
	c := h.connect(t, "claude-code")
	got := c.fails(t, "exec", map[string]any{"command": "true"})
	req := <-h.told
	if !strings.Contains(got, "nobody answered within 300ms") || !strings.Contains(got, "den approve "+req.ID) {
		t.Errorf("a timed-out ask: %q", got)
	}
}

// TestClientConfig: a client's [mcp_clients] table says which agents it
// may use and which tools ask, run or are refused; a client without
// one gets the "*" table, or the agent's defaults; Options.Client
// names the client whatever it calls itself.
func TestClientConfig(t *testing.T) {
	cfg := &config.Config{
		Agents: map[string]config.Agent{"writer": {}},
		MCPClients: map[string]config.MCPClient{
			"claude-code": {Agents: []string{"writer"}, Allow: []string{"exec"}},
			"*":           {Deny: []string{"write_file"}},
		},
	}
	h := newHarness(t, cfg, Options{})
	cc := h.connect(t, "claude-code")
	for tool, args := range map[string]map[string]any{"list_files": {}, "exec": {"command": "true"}, "write_file": {"path": "a", "content": "a"}} {
		got := cc.fails(t, tool, args)
		if !strings.Contains(got, `den's config does not let MCP client "claude-code" use agent default`) {
			t.Errorf("%s on an agent the client may not use: %q", tool, got)
		}
	}
	var e ExecOut
	cc.ok(t, "exec", map[string]any{"command": "echo writer", "agent": "writer"}, &e)
	if e.Output != "writer\n" {
		t.Errorf("exec allowed on writer: %+v", e)
	}

	other := h.connect(t, "codex")
	if got := other.fails(t, "write_file", map[string]any{"path": "a", "content": "a"}); !strings.Contains(got, `den's config denies it to MCP client "codex"`) {
		t.Errorf("write_file denied by the \"*\" table: %q", got)
	}
	var l ListOut
	other.ok(t, "list_files", map[string]any{}, &l)
	// A call its config denies makes no session.
	if found, err := h.env.Store.FindSessions(context.Background(), store.SessionQuery{Agent: "default"}); err != nil || len(found) != 0 {
		t.Errorf("denied calls made sessions: %v %v", found, err)
	}

	named := newHarness(t, cfg, Options{Client: "claude-code"}).connect(t, "anything")
	if got := named.fails(t, "list_files", map[string]any{}); !strings.Contains(got, `MCP client "claude-code"`) {
		t.Errorf("Options.Client: %q", got)
	}
}

// TestPolicyFor: the client's lists win over the agent's permissions, a
// tool's own list over "*", and an agent off the client's list denies
// everything.
func TestPolicyFor(t *testing.T) {
	cfg := &config.Config{
		Agents: map[string]config.Agent{
			"default": {Permissions: map[string]string{"mcp-client exec": "allow", "mcp-client run": "deny"}},
			"locked":  {Trust: "restricted"},
		},
		MCPClients: map[string]config.MCPClient{
			"a": {Ask: []string{"*"}, Allow: []string{"read_file"}},
			"b": {Agents: []string{"locked"}, Deny: []string{"exec"}},
		},
	}
	for _, tc := range []struct {
		client, agent, tool string
		want                permission.Decision
	}{
		{"a", "default", "exec", permission.Ask},        // "*" wins over the agent's allow
		{"a", "default", "read_file", permission.Allow}, // its own list wins over "*"
		{"a", "default", "run", permission.Ask},
		{"z", "default", "exec", permission.Allow}, // no table: the agent's permissions
		{"z", "default", "run", permission.Deny},
		{"z", "default", "write_file", permission.Allow},
		{"z", "locked", "write_file", permission.Ask}, // restricted's default
		{"z", "locked", "list_files", permission.Allow},
		{"b", "default", "list_files", permission.Deny}, // not its agent
		{"b", "locked", "exec", permission.Deny},
		{"b", "locked", "list_files", permission.Allow},
	} {
		p, _, err := policyFor(cfg, tc.client, tc.agent)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.DecideFor(permission.CmdMCPClient, tc.tool, tc.client); got != tc.want {
			t.Errorf("client %s, agent %s, %s: %s, want %s", tc.client, tc.agent, tc.tool, got, tc.want)
		}
	}
}
