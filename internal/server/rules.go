package server

import (
	"net/http"
	"time"

	"den.dev/den/internal/permission"
	"den.dev/den/internal/server/reply"
)

// ruleJSON is a standing answer (an approval answered with scope
// always) as the API shows it. Agent, command, action and subject are
// the rule's own values, which DELETE /api/v1/rules takes back; a page
// shows subject_shown, as den rules list prints it.
type ruleJSON struct {
	Agent        string    `json:"agent"`
	Command      string    `json:"command"`
	Action       string    `json:"action"`
	Subject      string    `json:"subject"`
	SubjectShown string    `json:"subject_shown"` // quoted where needed, hidden characters made visible; "(none)" for none
	Decision     string    `json:"decision"`      // allow or deny
	Created      time.Time `json:"created"`
}

func (s *Server) listRules(w http.ResponseWriter, r *http.Request) error {
	rules, err := s.st.Rules(r.Context(), r.URL.Query().Get("agent"))
	if err != nil {
		return err
	}
	out := make([]ruleJSON, len(rules))
	for i, rl := range rules {
		shown := "(none)"
		if rl.Subject != "" {
			shown = permission.ShowArg(rl.Subject, permission.MaxShownArg)
		}
		out[i] = ruleJSON{Agent: rl.Agent, Command: rl.Command, Action: rl.Action, Subject: rl.Subject, SubjectShown: shown,
			Decision: rl.Decision, Created: rl.Created}
	}
	return reply.JSON(w, http.StatusOK, map[string]any{"rules": out})
}

// deleteRule forgets one standing answer, named by its agent, command,
// action and subject as GET /api/v1/rules lists them: the next such call
// is decided by the agent's policy again, which may ask.
func (s *Server) deleteRule(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Agent   string `json:"agent"`
		Command string `json:"command"`
		Action  string `json:"action"`
		Subject string `json:"subject"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Agent == "" || req.Command == "" {
		return badRequest("agent and command are required")
	}
	ok, err := s.st.DeleteRule(r.Context(), req.Agent, req.Command, req.Action, &req.Subject)
	if err != nil {
		return err
	}
	if !ok {
		return notFound("agent %s has no standing answer for %s %s %s", req.Agent, req.Command, req.Action,
			permission.ShowArg(req.Subject, permission.MaxShownArg))
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
