package mcpserver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"den.dev/den/internal/config"
	"den.dev/den/internal/permission"
)

// call is one tool call (or resource read) of a client.
type call struct {
	client   string // the client's name
	tool     string // the gate's action: the tool, or the tool a read counts as
	ss       *mcp.ServerSession
	progress *progress // nil when the client asked for none
}

// allow puts the call through the gate: it acts on p, args say on what
// (the command, the path), detail is the exact effect for the person
// asked. It returns the allowed call, to Finish with its exit code, or
// an error: a refusal saying who denied it and why, or the gate's own
// failure.
func (s *Server) allow(ctx context.Context, c *call, p place, detail string, args ...string) (*permission.Call, error) {
	policy, agentOK, err := policyFor(s.rt.Config(), c.client, p.agent)
	if err != nil {
		return nil, err
	}
	gate := permission.New(s.rt.Store(), p.agent, policy, permission.Options{
		Emit: func(ev permission.Event) {
			s.rt.Publish(p.sess.ID, ev)
			if r, ok := ev.(*permission.ApprovalRequest); ok {
				if s.o.Told != nil {
					s.o.Told(r)
				}
				c.progress.say(fmt.Sprintf("waiting for the user's approval in den (den approve %s): %s", r.ID, r.Question()))
			}
		},
		Timeout: s.o.ApprovalTimeout,
	})
	pc, err := gate.Check(ctx, permission.Request{
		Session: p.sess.ID, Command: permission.CmdMCPClient, Action: c.tool, Subject: c.client, Detail: detail,
		Args: append([]string{c.client, c.tool}, args...),
	})
	if err != nil {
		return nil, err
	}
	if pc.Decision == permission.Allow {
		return pc, nil
	}
	if err := pc.Finish(ctx, permission.ExitDenied); err != nil {
		return nil, err
	}
	return nil, denial(c, p, pc, agentOK, s.approvalTimeout())
}

func (s *Server) approvalTimeout() string {
	if s.o.ApprovalTimeout > 0 {
		return s.o.ApprovalTimeout.String()
	}
	return permission.DefaultTimeout.String()
}

// done records in the audit log how an allowed call ended: 0 when it
// did what it was asked, else 1 (or a command's exit code). The call's
// result is the client's either way; a record that fails is logged.
func (s *Server) done(ctx context.Context, pc *permission.Call, code int) {
	if err := pc.Finish(context.WithoutCancel(ctx), code); err != nil {
		s.log.Error("mcp: call not audited", "command", pc.Command, "action", pc.Action, "err", err)
	}
}

// denial says why the gate denied a call, and what would allow it.
func denial(c *call, p place, pc *permission.Call, agentOK bool, timeout string) error {
	what := fmt.Sprintf("%s was denied", c.tool)
	table := fmt.Sprintf("[mcp_clients.%q] in den's config", c.client)
	switch pc.By {
	case permission.ByPolicy:
		if !agentOK {
			return refusedf("%s: den's config does not let MCP client %q use agent %s (the agents of %s)", what, c.client, p.agent, table)
		}
		return refusedf("%s: den's config denies it to MCP client %q on agent %s (%s, or the agent's permissions)", what, c.client, p.agent, table)
	case permission.ByRule:
		return refusedf("%s: the user said no to it for good (den rules list shows the rule)", what)
	case permission.BySession:
		return refusedf("%s: the user said no to it for the rest of session %s", what, p.sess.ID)
	case permission.ByTimeout:
		return refusedf("%s: it needs the user's approval (%s), and nobody answered within %s. The user answers in den's web face (den serve) or in a terminal with den approve %s; ask them, then call again",
			what, pc.ApprovalID, timeout, pc.ApprovalID)
	case permission.ByUnattended:
		return refusedf("%s: it needs the user's approval, and nobody can be asked here", what)
	case permission.ByCanceled, permission.ByError, permission.ByAuto, permission.ByInvalid:
		return refusedf("%s (%s)", what, pc.By)
	}
	// A person's answer, in a face: den approve (user), den serve's API
	// or web face (api).
	return refusedf("%s: the user said no (approval %s)", what, pc.ApprovalID)
}

// policyFor is the policy of client's calls on agent: the agent's own
// (trust level, permissions), with the client's [mcp_clients] lists
// over it as overrides of mcp-client's actions ("*" for every tool no
// list names). agentOK is false when the client may not use the agent:
// every tool is then denied.
func policyFor(cfg *config.Config, client, agent string) (p permission.Policy, agentOK bool, err error) {
	ac := cfg.Agent(agent)
	p, err = permission.ParsePolicy(ac.Trust, ac.Permissions, ac.AllowedModels)
	if err != nil {
		return p, false, fmt.Errorf("config: agents.%s: %w", agent, err)
	}
	mc, _ := cfg.MCPClient(client)
	listed := map[string]permission.Decision{}
	var every permission.Decision
	for _, l := range []struct {
		d     permission.Decision
		tools []string
	}{{permission.Allow, mc.Allow}, {permission.Ask, mc.Ask}, {permission.Deny, mc.Deny}} {
		for _, t := range l.tools {
			if t == "*" {
				every = l.d
			} else {
				listed[t] = l.d
			}
		}
	}
	agentOK = len(mc.Agents) == 0 || slices.Contains(mc.Agents, agent)
	over := maps.Clone(p.Overrides)
	if over == nil {
		over = map[string]permission.Decision{}
	}
	for _, tool := range config.MCPTools() {
		key := permission.CmdMCPClient + " " + tool
		d, ok := listed[tool]
		switch {
		case !agentOK:
			over[key] = permission.Deny
		case ok:
			over[key] = d
		case every != "":
			over[key] = every
		}
	}
	p.Overrides = over
	return p, agentOK, nil
}

// progress sends a call's progress notifications, when the client asked
// for them with a progress token. A nil *progress sends nothing.
type progress struct {
	ctx   context.Context // the call's: on HTTP, it routes to the call's stream
	ss    *mcp.ServerSession
	token any

	mu sync.Mutex
	n  float64
}

func newProgress(ctx context.Context, ss *mcp.ServerSession, token any) *progress {
	if token == nil || ss == nil {
		return nil
	}
	return &progress{ctx: ctx, ss: ss, token: token}
}

// say sends one notification with msg (cut to maxProgress bytes).
func (p *progress) say(msg string) {
	if p == nil {
		return
	}
	msg = cut(strings.TrimSpace(msg), maxProgress)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	// A client gone away is told nothing more; the call ends anyway.
	p.ss.NotifyProgress(p.ctx, &mcp.ProgressNotificationParams{ProgressToken: p.token, Progress: p.n, Message: msg})
}

// maxProgress is the most bytes of one progress message.
const maxProgress = 2000

// cut returns s cut to at most n bytes, at a rune's start, marked "…"
// when cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
