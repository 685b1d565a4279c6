package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/session"
	"den.dev/den/internal/store"
)

// MaxSessionName is the longest name a session may be given: a title,
// as den's faces allow one.
const MaxSessionName = 200

// place is where a call acts: an agent and one of its sessions, which
// may be still to make (sess.ID "" and name its title).
type place struct {
	agent string
	sess  store.Session
	name  string // the session's title when it is still to make
}

// made reports whether the session exists.
func (p place) made() bool { return p.sess.ID != "" }

// label is how messages name the session: its id, or the name it will
// have.
func (p place) label() string {
	if p.made() {
		if p.sess.Title != "" {
			return fmt.Sprintf("%s (%s)", p.sess.ID, p.sess.Title)
		}
		return p.sess.ID
	}
	return fmt.Sprintf("%q (new)", p.name)
}

// locate finds where a call acts: agentArg and sessionArg as the client
// gave them ("" for none). A session is an id or a name (the agent's
// latest session with that title); without one, the session named after
// the client. A session that does not exist is returned unmade; the
// agent must be one den knows.
func (s *Server) locate(ctx context.Context, client, agentArg, sessionArg string) (place, error) {
	if sessionArg != "" {
		sess, err := s.rt.Store().GetSession(ctx, sessionArg)
		switch {
		case err == nil && agentArg != "" && sess.Agent != agentArg:
			return place{}, refusedf("session %s is agent %s's, not %s's", sess.ID, sess.Agent, agentArg)
		case err == nil:
			return place{agent: sess.Agent, sess: sess}, nil
		case !errors.Is(err, store.ErrNotFound):
			return place{}, err
		}
	}
	agent := agentArg
	if agent == "" {
		agent = s.o.Agent
	}
	if err := s.known(ctx, agent); err != nil {
		return place{}, err
	}
	name := sessionArg
	if name == "" {
		name = client
	}
	if err := checkName(name); err != nil {
		return place{}, err
	}
	return s.locateNamed(ctx, agent, name)
}

// known checks that den knows agent: "default", one the config
// describes, or one that has sessions. An MCP client never brings a new
// agent (and a new computer) into being.
func (s *Server) known(ctx context.Context, agent string) error {
	if err := computer.ValidName("agent", agent); err != nil {
		return refusedf("%v", err)
	}
	stored, err := s.rt.Store().Agents(ctx)
	if err != nil {
		return err
	}
	agents := append(stored, "default")
	for name := range s.rt.Config().Agents {
		agents = append(agents, name)
	}
	if slices.Contains(agents, agent) {
		return nil
	}
	slices.Sort(agents)
	return refusedf("den has no agent %q: it has %s", agent, strings.Join(slices.Compact(agents), ", "))
}

// checkName checks a session's name: one line of 1 to MaxSessionName
// characters, no control characters.
func checkName(name string) error {
	switch {
	case strings.TrimSpace(name) == "":
		return refusedf("a session's name cannot be empty")
	case !utf8.ValidString(name):
		return refusedf("a session's name must be UTF-8")
	case utf8.RuneCountInString(name) > MaxSessionName:
		return refusedf("a session's name is at most %d characters", MaxSessionName)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		return refusedf("a session's name is one line without control characters")
	}
	return nil
}

// make makes the place's session if it is still to make, and returns
// the place with it.
func (s *Server) make(ctx context.Context, p place) (place, error) {
	if p.made() {
		return p, nil
	}
	s.making.Lock()
	defer s.making.Unlock()
	// Made meanwhile by another call?
	again, err := s.locateNamed(ctx, p.agent, p.name)
	if err != nil || again.made() {
		return again, err
	}
	sess, err := s.rt.Create(ctx, p.agent, "")
	if errors.Is(err, session.ErrBadOptions) {
		// No model to name (no provider has a key): the computer needs
		// none, and a turn finds one when it runs, or says why not.
		sess, err = s.rt.Store().CreateSession(ctx, p.agent, "")
	}
	if err != nil {
		return p, err
	}
	if err := s.rt.Store().SetTitle(ctx, sess.ID, p.name); err != nil {
		return p, err
	}
	sess.Title = p.name
	return place{agent: p.agent, sess: sess}, nil
}

// makeFor makes the place's session before the gate decides c, a call
// that would make it anyway (run, exec, write_file), so that an
// approval it asks for belongs to the session and den's faces show it
// there. A call the policy denies makes nothing.
func (s *Server) makeFor(ctx context.Context, c *call, p place) (place, error) {
	if p.made() {
		return p, nil
	}
	policy, _, err := policyFor(s.rt.Config(), c.client, p.agent)
	if err != nil {
		return p, err
	}
	if policy.DecideFor(permission.CmdMCPClient, c.tool, c.client) == permission.Deny {
		return p, nil
	}
	return s.make(ctx, p)
}

// locateNamed finds the agent's latest session titled name, or returns
// it unmade.
func (s *Server) locateNamed(ctx context.Context, agent, name string) (place, error) {
	found, err := s.rt.Store().FindSessions(ctx, store.SessionQuery{Agent: agent, Text: name, Limit: 100})
	if err != nil {
		return place{}, err
	}
	for _, sess := range found {
		if sess.Title == name {
			return place{agent: agent, sess: sess}, nil
		}
	}
	return place{agent: agent, name: name}, nil
}
