package server

import (
	"context"
	"net/http"
	"strings"
	"time"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/server/reply"
	"den.dev/den/internal/session"
)

// subagentJSON is a sub-agent as the API shows it: its session, and
// what its parent wants to know.
type subagentJSON struct {
	sessionJSON
	Done   bool   `json:"done"`             // its answer is final: it runs no more (until steered)
	Ended  string `json:"ended,omitempty"`  // done, canceled, budget, error, interrupted: how its last run ended
	Error  string `json:"error,omitempty"`  // what stopped it
	Answer string `json:"answer,omitempty"` // its last answer
}

func (s *Server) subagentOf(sa session.Subagent) subagentJSON {
	return subagentJSON{sessionJSON: s.sessionOf(sa.Session), Done: !sa.Running, Ended: sa.Ended, Error: sa.Error, Answer: sa.Answer}
}

// maxSubagentWait bounds how long a request waits for a sub-agent.
const maxSubagentWait = 10 * time.Minute

func (s *Server) listSubagents(w http.ResponseWriter, r *http.Request) error {
	list, err := s.rt.Subagents(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	out := make([]subagentJSON, len(list))
	for i, sa := range list {
		out[i] = s.subagentOf(sa)
	}
	return reply.JSON(w, http.StatusOK, map[string]any{"subagents": out})
}

// startSubagent starts a sub-agent of the session: at once (201, its
// answer in GET …/subagents/{sub}), or, with "wait": true, answering
// once it is done (200, its answer in the body).
func (s *Server) startSubagent(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Task    string `json:"task"`
		Profile string `json:"profile"`
		Agent   string `json:"agent"`
		Wait    bool   `json:"wait"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Task) == "" {
		return badRequest("the sub-agent has no task")
	}
	if req.Agent != "" {
		if err := computer.ValidName("agent", req.Agent); err != nil {
			return badRequest("%v", err)
		}
	}
	o := session.SpawnOptions{Task: req.Task, Profile: req.Profile, Agent: req.Agent}
	parent := r.PathValue("id")
	if req.Wait {
		ctx, cancel := context.WithTimeout(r.Context(), maxSubagentWait)
		defer cancel()
		sa, err := s.rt.RunSubagent(ctx, parent, o)
		if err != nil && ctx.Err() == nil {
			return err
		}
		return reply.JSON(w, http.StatusOK, s.subagentOf(sa))
	}
	c, err := s.rt.Spawn(r.Context(), parent, o)
	if err != nil {
		return err
	}
	sa, err := s.rt.SubagentStatus(r.Context(), parent, c.ID)
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusCreated, s.subagentOf(sa))
}

// getSubagent describes a sub-agent; ?wait=30s waits up to that long
// (at most 10 minutes) for it to be done.
func (s *Server) getSubagent(w http.ResponseWriter, r *http.Request) error {
	parent, id := r.PathValue("id"), r.PathValue("sub")
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > maxSubagentWait {
			return badRequest("wait %q: want a duration up to %v, such as 30s", v, maxSubagentWait)
		}
		ctx, cancel := context.WithTimeout(r.Context(), d)
		defer cancel()
		sa, err := s.rt.WaitSubagent(ctx, parent, id)
		if err != nil && ctx.Err() == nil {
			return err
		}
		return reply.JSON(w, http.StatusOK, s.subagentOf(sa))
	}
	sa, err := s.rt.SubagentStatus(r.Context(), parent, id)
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, s.subagentOf(sa))
}

// steerSubagent gives a sub-agent a message from its parent.
func (s *Server) steerSubagent(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Text string `json:"text"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	sent, err := s.rt.Steer(r.Context(), r.PathValue("id"), r.PathValue("sub"), req.Text)
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusAccepted, map[string]any{"message_id": sent.MessageID, "queued": sent.Queued})
}

func (s *Server) cancelSubagent(w http.ResponseWriter, r *http.Request) error {
	sa, err := s.rt.CancelSubagent(r.Context(), r.PathValue("id"), r.PathValue("sub"))
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, s.subagentOf(sa))
}

// sendToInbox puts a message into an agent's inbox, from a session
// ("from", as den-agent send in it would) or from a person.
func (s *Server) sendToInbox(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Text string `json:"text"`
		From string `json:"from"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Text) == "" {
		return badRequest("the message has no text")
	}
	fromAgent := ""
	if req.From != "" {
		from, err := s.st.GetSession(r.Context(), req.From)
		if err != nil {
			return err
		}
		fromAgent = from.Agent
	}
	inbox, err := s.rt.SendToAgent(r.Context(), fromAgent, req.From, r.PathValue("name"), req.Text)
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusAccepted, map[string]string{"inbox": inbox})
}
