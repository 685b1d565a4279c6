package hostsvc

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Subagent is a sub-agent as den-agent shows it.
type Subagent struct {
	ID      string `json:"id"`
	Agent   string `json:"agent"`
	Profile string `json:"profile,omitempty"`
	Task    string `json:"task"`   // its title: the start of its task
	Status  string `json:"status"` // the session's: running, waiting, idle, interrupted, error
	// Done says its answer is final: it runs no more (until steered).
	Done bool `json:"done"`
	// Ended is how its last run ended: done, canceled, budget, error,
	// interrupted (den stopped during it).
	Ended   string  `json:"ended,omitempty"`
	Error   string  `json:"error,omitempty"`
	Answer  string  `json:"answer,omitempty"`
	CostUSD float64 `json:"cost_usd"`
	Tokens  int64   `json:"tokens"`
}

// SpawnRequest is what den-agent run and spawn ask for.
type SpawnRequest struct {
	Task    string
	Profile string // "": the default profile
	Agent   string // "": the calling agent
}

// Agents starts and follows the calling session's sub-agents, and
// reaches other agents. Errors that are an *AgentError carry the
// envelope's code.
type Agents interface {
	// Run starts a sub-agent and waits for its answer.
	Run(ctx context.Context, session string, r SpawnRequest) (Subagent, error)
	// Spawn starts a sub-agent whose answer joins the session's
	// conversation when it ends.
	Spawn(ctx context.Context, session string, r SpawnRequest) (Subagent, error)
	Status(ctx context.Context, session, id string) (Subagent, error)
	// Wait waits until the sub-agent is done, or ctx ends.
	Wait(ctx context.Context, session, id string) (Subagent, error)
	// Steer gives the sub-agent a message at its next turn boundary.
	Steer(ctx context.Context, session, id, message string) (Subagent, error)
	Cancel(ctx context.Context, session, id string) (Subagent, error)
	List(ctx context.Context, session string) ([]Subagent, error)
	// Send puts a message into another agent's inbox and returns the
	// inbox's session id.
	Send(ctx context.Context, fromAgent, fromSession, to, message string) (string, error)
}

// AgentError is a failure of den-agent with the envelope's code:
// invalid_args, no_data (no such sub-agent or agent), limit_reached (a
// limit of [subagents]), timeout (wait --timeout passed),
// not_available.
type AgentError struct{ Code, Message string }

func (e *AgentError) Error() string { return e.Message }

// The codes den-agent adds to the envelope's.
const (
	CodeLimit   = "limit_reached"
	CodeTimeout = "timeout"
)

// maxWait bounds den-agent wait --timeout.
const maxWait = time.Hour

func (s *Service) parseAgent(c *Call) (*Plan, *Result) {
	if s.Agents == nil {
		return nil, unavailable("", "sub-agents are not available here")
	}
	if len(c.Args) == 0 {
		return nil, invalid("", "want run, spawn, status, wait, steer, cancel, list or send")
	}
	action := c.Args[0]
	switch action {
	case "run", "spawn":
		f := newFlags("den-agent " + action)
		profile := f.String("profile", "profile")
		agent := f.String("agent", "agent")
		rest, bad := f.parse(action, c.Args[1:])
		if bad != nil {
			return nil, bad
		}
		for _, v := range []struct{ what, s string }{{"--profile", *profile}, {"--agent", *agent}} {
			if v.s != "" && !plainName(v.s) {
				return nil, invalid(action, "%s %q: want a name (letters, digits, '.', '_', '-')", v.what, v.s)
			}
		}
		task := strings.Join(rest, " ")
		if bad := checkText(action, "the task", task, maxStdin); bad != nil {
			return nil, bad
		}
		req := SpawnRequest{Task: task, Profile: *profile, Agent: *agent}
		if req.Agent == c.Agent {
			req.Agent = ""
		}
		// The subject is the other agent whose computer it would run in
		// ("" for the caller's own): that asks.
		return plan(action, req.Agent, "", func(ctx context.Context) Result {
			if req.Task == "" {
				b, err := readAll(c.Stdin, maxStdin)
				if err != nil {
					return fail(action, CodeInvalidArgs, "reading the task: %v", err)
				}
				req.Task = string(b)
			}
			if strings.TrimSpace(req.Task) == "" {
				return fail(action, CodeInvalidArgs, "no task: give it as arguments or on standard input")
			}
			run := s.Agents.Spawn
			if action == "run" {
				run = s.Agents.Run
			}
			sa, err := run(ctx, c.Session, req)
			return agentResult(action, sa, err)
		})
	case "status", "cancel", "wait", "steer", "list":
		f := newFlags("den-agent " + action)
		timeout := f.Duration("timeout", 0)
		args, pos := c.Args[1:], []string(nil)
		// Flags may follow the id (wait ID --timeout 30s), but not a
		// steering message's words.
		for {
			rest, bad := f.parse(action, args)
			if bad != nil {
				return nil, bad
			}
			if len(rest) == 0 {
				break
			}
			if action == "steer" {
				pos = rest
				break
			}
			pos, args = append(pos, rest[0]), rest[1:]
		}
		if f.set["timeout"] && action != "wait" {
			return nil, invalid(action, "--timeout is for wait")
		}
		if *timeout < 0 || *timeout > maxWait {
			return nil, invalid(action, "--timeout %v: want at most %v", *timeout, maxWait)
		}
		want := map[string]string{"status": "status ID", "cancel": "cancel ID", "wait": "wait ID [--timeout 5m]", "steer": "steer ID MESSAGE", "list": "list"}[action]
		switch {
		case action == "list" && len(pos) > 0, action == "steer" && len(pos) < 2,
			action != "list" && action != "steer" && len(pos) != 1:
			return nil, invalid(action, "want %s", want)
		case action != "list" && !sessionID(pos[0]):
			return nil, invalid(action, "%q is not a sub-agent's id", pos[0])
		}
		if action == "list" {
			return plan(action, "", "", func(ctx context.Context) Result {
				list, err := s.Agents.List(ctx, c.Session)
				if err != nil {
					return agentResult(action, Subagent{}, err)
				}
				if list == nil {
					list = []Subagent{}
				}
				return ok(action, list)
			})
		}
		id := pos[0]
		msg := strings.Join(pos[1:], " ")
		if bad := checkText(action, "the message", msg, maxText); bad != nil {
			return nil, bad
		}
		return plan(action, "", "", func(ctx context.Context) Result {
			var sa Subagent
			var err error
			switch action {
			case "status":
				sa, err = s.Agents.Status(ctx, c.Session, id)
			case "cancel":
				sa, err = s.Agents.Cancel(ctx, c.Session, id)
			case "steer":
				sa, err = s.Agents.Steer(ctx, c.Session, id, msg)
			case "wait":
				wctx := ctx
				if *timeout > 0 {
					var stop context.CancelFunc
					wctx, stop = context.WithTimeout(ctx, *timeout)
					defer stop()
				}
				sa, err = s.Agents.Wait(wctx, c.Session, id)
				if err != nil && ctx.Err() == nil && wctx.Err() != nil {
					return fail(action, CodeTimeout, "sub-agent %s still runs after %v: wait again, steer it or cancel it", id, *timeout)
				}
			}
			return agentResult(action, sa, err)
		})
	case "send":
		rest, bad := newFlags("den-agent send").parse(action, c.Args[1:])
		if bad != nil {
			return nil, bad
		}
		if len(rest) < 2 || !plainName(rest[0]) {
			return nil, invalid(action, "want send AGENT MESSAGE")
		}
		to, msg := rest[0], strings.Join(rest[1:], " ")
		if bad := checkText(action, "the message", msg, maxText); bad != nil {
			return nil, bad
		}
		return plan(action, to, "", func(ctx context.Context) Result {
			inbox, err := s.Agents.Send(ctx, c.Agent, c.Session, to, msg)
			if err != nil {
				return agentResult(action, Subagent{}, err)
			}
			return ok(action, map[string]string{"agent": to, "inbox": inbox})
		})
	}
	return nil, invalid(action, "unknown action %q: want run, spawn, status, wait, steer, cancel, list or send", action)
}

// agentResult is a sub-agent's answer, or the error with its code.
func agentResult(action string, sa Subagent, err error) Result {
	if err != nil {
		var ae *AgentError
		if errors.As(err, &ae) {
			return fail(action, ae.Code, "%s", ae.Message)
		}
		return fail(action, CodeInternal, "%v", err)
	}
	return ok(action, sa)
}

// plainName reports whether s can be an agent's or a profile's name.
func plainName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '.' || s[0] == '-' {
		return false
	}
	return sessionID(s)
}
