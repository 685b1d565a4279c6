package hostsvc

import (
	"context"
	"strings"
	"time"
)

// SessionInfo describes a session for den-sessions.
type SessionInfo struct {
	ID      string    `json:"id"`
	Title   string    `json:"title"`
	Model   string    `json:"model"`
	Updated time.Time `json:"updated"`
}

// SessionMessage is one message of a shown session.
type SessionMessage struct {
	Role string `json:"role"`
	Text string `json:"text"`
}

// Hit is a search match.
type Hit struct {
	Session string `json:"session"`
	Title   string `json:"title"`
	Snippet string `json:"snippet"`
}

// Sessions is the agent's sessions, as den-sessions may use them: only
// the calling agent's.
type Sessions interface {
	List(ctx context.Context, agent string) ([]SessionInfo, error)
	Search(ctx context.Context, agent, query string) ([]Hit, error)
	Show(ctx context.Context, agent, id string) (SessionInfo, []SessionMessage, error)
	// Send adds a message to another session, read by its next run:
	// one of the agent's, or, marked with the agent's name, one of
	// another agent's (whose id the caller was given).
	Send(ctx context.Context, agent, fromSession, id, message string) error
}

func (s *Service) parseSessions(c *Call) (*Plan, *Result) {
	if s.Sessions == nil {
		return nil, unavailable("", "sessions are not available here")
	}
	if len(c.Args) == 0 {
		return nil, invalid("", "want list, search QUERY, show ID or send ID MESSAGE")
	}
	action := c.Args[0]
	args, bad := newFlags("den-sessions "+action).parse(action, c.Args[1:])
	if bad != nil {
		return nil, bad
	}
	switch action {
	case "list":
		if len(args) > 0 {
			return nil, invalid("list", "list takes no arguments")
		}
		return plan("list", "", "", func(ctx context.Context) Result {
			list, err := s.Sessions.List(ctx, c.Agent)
			if err != nil {
				return fail("list", CodeInternal, "%v", err)
			}
			return ok("list", list)
		})
	case "search":
		q := strings.TrimSpace(strings.Join(args, " "))
		if q == "" {
			return nil, invalid("search", "no query")
		}
		if bad := checkText("search", "the query", q, maxTitle); bad != nil {
			return nil, bad
		}
		return plan("search", "", "", func(ctx context.Context) Result {
			hits, err := s.Sessions.Search(ctx, c.Agent, q)
			if err != nil {
				return fail("search", CodeInternal, "%v", err)
			}
			if len(hits) == 0 {
				return fail("search", CodeNoData, "nothing matches %q", q)
			}
			return ok("search", hits)
		})
	case "show":
		if len(args) != 1 || !sessionID(args[0]) {
			return nil, invalid("show", "want show ID")
		}
		id := args[0]
		return plan("show", id, "", func(ctx context.Context) Result {
			info, msgs, err := s.Sessions.Show(ctx, c.Agent, id)
			if err != nil {
				return fail("show", CodeNoData, "%v", err)
			}
			return ok("show", map[string]any{"session": info, "messages": msgs})
		})
	case "send":
		if len(args) < 2 || !sessionID(args[0]) {
			return nil, invalid("send", "want send ID MESSAGE")
		}
		id, msg := args[0], strings.Join(args[1:], " ")
		if id == c.Session {
			return nil, invalid("send", "that is this session")
		}
		if bad := checkText("send", "the message", msg, maxText); bad != nil {
			return nil, bad
		}
		return plan("send", id, "", func(ctx context.Context) Result {
			if err := s.Sessions.Send(ctx, c.Agent, c.Session, id, msg); err != nil {
				return fail("send", CodeNoData, "%v", err)
			}
			return ok("send", map[string]string{"session": id})
		})
	}
	return nil, invalid(action, "unknown action %q: want list, search, show or send", action)
}

// sessionID reports whether s can be a session id (den's ids are short
// and plain).
func sessionID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
			return false
		}
	}
	return true
}
