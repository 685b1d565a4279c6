package mcpserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"den.dev/den/internal/session"
	"den.dev/den/internal/store"
)

// Limits of the session tools.
const (
	SessionsDefault = 50
	SessionsMax     = 500
	// MessagesDefault and MessagesMax bound how many of a session's
	// latest messages session_read shows.
	MessagesDefault = 50
	MessagesMax     = 500
	// MaxMessageChars is how much of one message session_read shows.
	MaxMessageChars = 8000
)

// SessionsIn is sessions_list's input.
type SessionsIn struct {
	Agent string `json:"agent,omitempty" jsonschema:"whose sessions (default: the server's agent, usually default)"`
	Query string `json:"query,omitempty" jsonschema:"words their titles or messages hold"`
	Limit int    `json:"limit,omitempty" jsonschema:"at most this many (default 50, at most 500)"`
}

// SessionsOut is sessions_list's output.
type SessionsOut struct {
	Agent    string        `json:"agent"`
	Sessions []SessionInfo `json:"sessions" jsonschema:"the latest first"`
}

// SessionInfo describes a session.
type SessionInfo struct {
	ID      string    `json:"id"`
	Title   string    `json:"title"`
	Status  string    `json:"status" jsonschema:"idle, running, waiting, queued, interrupted or error"`
	Model   string    `json:"model"`
	Updated time.Time `json:"updated"`
	URI     string    `json:"uri" jsonschema:"its resource: den://sessions/ID"`
}

// ReadSessionIn is session_read's input.
type ReadSessionIn struct {
	Session string `json:"session" jsonschema:"the session's id or name"`
	Agent   string `json:"agent,omitempty" jsonschema:"the agent of a session given by name (default: the server's)"`
	Limit   int    `json:"limit,omitempty" jsonschema:"its latest messages, at most this many (default 50, at most 500)"`
}

// ReadSessionOut is session_read's output.
type ReadSessionOut struct {
	SessionInfo
	Agent    string    `json:"agent"`
	Messages []Message `json:"messages" jsonschema:"the oldest first"`
	Earlier  int       `json:"earlier,omitempty" jsonschema:"how many earlier messages are left out"`
}

// Message is one message of a session as text.
type Message struct {
	ID   string `json:"id"`
	Role string `json:"role" jsonschema:"user (a prompt, or tool results) or assistant"`
	Text string `json:"text" jsonschema:"its text, tool calls (→) and results (←), cut to 8000 characters"`
}

func (s *Server) sessionsList(ctx context.Context, c *call, in SessionsIn) (*mcp.CallToolResult, SessionsOut, error) {
	switch {
	case in.Limit < 0 || in.Limit > SessionsMax:
		return nil, SessionsOut{}, refusedf("limit %d: want 1 to %d", in.Limit, SessionsMax)
	case in.Limit == 0:
		in.Limit = SessionsDefault
	}
	out, err := s.sessions(ctx, c, in)
	return nil, out, err
}

// sessions lists the agent's sessions, once the gate allows it.
func (s *Server) sessions(ctx context.Context, c *call, in SessionsIn) (SessionsOut, error) {
	agent := in.Agent
	if agent == "" {
		agent = s.o.Agent
	}
	if err := s.known(ctx, agent); err != nil {
		return SessionsOut{}, err
	}
	p := place{agent: agent}
	args := []string{}
	if in.Query != "" {
		args = append(args, in.Query)
	}
	pc, err := s.allow(ctx, c, p, "", args...)
	if err != nil {
		return SessionsOut{}, err
	}
	found, err := s.rt.Store().FindSessions(ctx, store.SessionQuery{Agent: agent, Text: in.Query, Limit: in.Limit})
	s.done(ctx, pc, exitOf(err))
	if err != nil {
		return SessionsOut{}, err
	}
	out := SessionsOut{Agent: agent, Sessions: []SessionInfo{}}
	for _, sess := range found {
		out.Sessions = append(out.Sessions, info(sess))
	}
	return out, nil
}

func info(sess store.Session) SessionInfo {
	status := sess.Status
	if status == "" {
		status = "idle"
	}
	return SessionInfo{ID: sess.ID, Title: sess.Title, Status: status, Model: sess.Model, Updated: sess.Updated.UTC(), URI: sessionURI(sess.ID)}
}

// sessionURI is a session's resource.
func sessionURI(id string) string { return sessionsPrefix + id }

const sessionsPrefix = "den://sessions/"

func (s *Server) sessionRead(ctx context.Context, c *call, in ReadSessionIn) (*mcp.CallToolResult, ReadSessionOut, error) {
	switch {
	case strings.TrimSpace(in.Session) == "":
		return nil, ReadSessionOut{}, refusedf("session is empty: give a session's id or name (sessions_list lists them)")
	case in.Limit < 0 || in.Limit > MessagesMax:
		return nil, ReadSessionOut{}, refusedf("limit %d: want 1 to %d", in.Limit, MessagesMax)
	case in.Limit == 0:
		in.Limit = MessagesDefault
	}
	out, err := s.readSession(ctx, c, in.Agent, in.Session, in.Limit)
	if err != nil {
		return nil, out, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: transcript(out)}}}, out, nil
}

// readSession reads the latest limit messages of a session, once the
// gate allows it.
func (s *Server) readSession(ctx context.Context, c *call, agent, ref string, limit int) (ReadSessionOut, error) {
	p, err := s.locate(ctx, c.client, agent, ref)
	if err != nil {
		return ReadSessionOut{}, err
	}
	if !p.made() {
		return ReadSessionOut{}, refusedf("agent %s has no session %q (sessions_list lists them)", p.agent, ref)
	}
	pc, err := s.allow(ctx, c, p, "", p.sess.ID)
	if err != nil {
		return ReadSessionOut{}, err
	}
	path, err := s.rt.Store().Path(ctx, p.sess.ID)
	s.done(ctx, pc, exitOf(err))
	if err != nil {
		return ReadSessionOut{}, err
	}
	out := ReadSessionOut{SessionInfo: info(p.sess), Agent: p.agent, Messages: []Message{}}
	if len(path) > limit {
		out.Earlier = len(path) - limit
		path = path[len(path)-limit:]
	}
	for _, m := range path {
		out.Messages = append(out.Messages, Message{ID: m.ID, Role: string(m.Message.Role), Text: cutChars(session.Text(m.Message), MaxMessageChars)})
	}
	return out, nil
}

// transcript is a session as text: a heading, then each message.
func transcript(r ReadSessionOut) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\nsession %s · agent %s · %s\n", r.Title, r.ID, r.Agent, r.Status)
	if r.Earlier > 0 {
		fmt.Fprintf(&b, "\n(%d earlier messages left out)\n", r.Earlier)
	}
	for _, m := range r.Messages {
		fmt.Fprintf(&b, "\n[%s]\n%s\n", m.Role, m.Text)
	}
	return b.String()
}

// cutChars cuts s to n characters, saying how many are left out.
func cutChars(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return fmt.Sprintf("%s\n[… %d more characters]", string(r[:n]), len(r)-n)
}
