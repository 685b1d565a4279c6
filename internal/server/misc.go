package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"den.dev/den/internal/config"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/server/reply"
	"den.dev/den/internal/store"
)

type approvalJSON struct {
	ID       string    `json:"id"`
	Agent    string    `json:"agent"`
	Session  string    `json:"session_id"`
	Command  string    `json:"command"`
	Action   string    `json:"action,omitempty"`
	Subject  string    `json:"subject,omitempty"`
	Detail   string    `json:"detail,omitempty"`
	Args     []string  `json:"args"`
	Question string    `json:"question"`
	Scopes   []string  `json:"scopes"`
	Status   string    `json:"status"`
	Created  time.Time `json:"created"`
	Expires  time.Time `json:"expires"`
}

func approvalOf(a store.Approval) approvalJSON {
	req := permission.ApprovalRequest{ID: a.ID, Agent: a.Agent, Session: a.Session, Command: a.Command, Action: a.Action,
		Subject: a.Subject, Detail: a.Detail, Args: a.Args}
	scopes := []string{"once", "session", "always"}
	if a.Session == "" {
		scopes = []string{"once", "always"}
	}
	return approvalJSON{ID: a.ID, Agent: a.Agent, Session: a.Session, Command: a.Command, Action: a.Action, Subject: a.Subject,
		Detail: a.Detail, Args: a.Args, Question: req.Question(), Scopes: scopes, Status: a.Status, Created: a.Created, Expires: a.Expires}
}

func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) error {
	list, err := s.st.PendingApprovals(r.Context(), r.URL.Query().Get("agent"))
	if err != nil {
		return err
	}
	out := make([]approvalJSON, len(list))
	for i, a := range list {
		out[i] = approvalOf(a)
	}
	return reply.JSON(w, http.StatusOK, map[string]any{"approvals": out})
}

func (s *Server) answerApproval(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Decision string `json:"decision"`
		Scope    string `json:"scope"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	var approve bool
	switch req.Decision {
	case "allow":
		approve = true
	case "deny":
	default:
		return badRequest("decision %q: want allow or deny", req.Decision)
	}
	scope, err := permission.ParseScope(req.Scope)
	if err != nil {
		return badRequest("%v", err)
	}
	id := r.PathValue("id")
	a, err := s.st.GetApproval(r.Context(), id)
	if err != nil {
		return err
	}
	if scope == permission.Session && a.Session == "" {
		return badRequest("scope session: the call belongs to no session")
	}
	a, err = s.rt.Answer(r.Context(), id, approve, scope, "api")
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, approvalOf(a))
}

// usage answers a session's usage totals (?session=), or an agent's
// (?agent=; none: every agent's) since ?since= (a duration back from
// now; none: all of it): summed, or with ?by=day per calendar day in
// ?tz= (an IANA zone, UTC by default), or with ?by=session per session
// (the ?limit= with the most input, 20 by default).
func (s *Server) usage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	by := q.Get("by")
	if id := q.Get("session"); id != "" {
		if by != "" {
			return badRequest("usage of a session: ?session= goes without ?by=")
		}
		u, err := s.st.SessionUsage(r.Context(), id)
		if err != nil {
			return err
		}
		return reply.JSON(w, http.StatusOK, map[string]any{"session_id": id, "usage": usageOf(u)})
	}
	var since time.Time
	if v := q.Get("since"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return badRequest("since %q: want a duration such as 24h", v)
		}
		since = time.Now().Add(-d)
	}
	agent := q.Get("agent")
	switch by {
	case "":
		u, err := s.st.AgentUsage(r.Context(), agent, since)
		if err != nil {
			return err
		}
		return reply.JSON(w, http.StatusOK, map[string]any{"agent": agent, "usage": usageOf(u)})
	case "day":
		tz := q.Get("tz")
		if tz == "" {
			tz = "UTC"
		}
		loc, err := time.LoadLocation(tz)
		if err != nil || tz == "Local" {
			return badRequest("tz %q: want an IANA time zone such as Europe/Berlin", tz)
		}
		list, err := s.st.UsageByDay(r.Context(), agent, since, loc)
		if err != nil {
			return err
		}
		type dayJSON struct {
			Day string `json:"day"`
			usageJSON
		}
		days := make([]dayJSON, len(list))
		for i, d := range list {
			days[i] = dayJSON{d.Day, usageOf(d.Usage)}
		}
		return reply.JSON(w, http.StatusOK, map[string]any{"agent": agent, "tz": tz, "days": days})
	case "session":
		limit := 20
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 500 {
				return badRequest("limit %q: want a number from 1 to 500", v)
			}
			limit = n
		}
		list, err := s.st.AgentUsageBySession(r.Context(), agent, since, limit)
		if err != nil {
			return err
		}
		type sessionUsageJSON struct {
			Session string `json:"session_id"` // "": the deleted sessions, together
			Title   string `json:"title"`
			usageJSON
		}
		sessions := make([]sessionUsageJSON, len(list))
		for i, t := range list {
			sessions[i] = sessionUsageJSON{t.Session, t.Title, usageOf(t.Usage)}
		}
		return reply.JSON(w, http.StatusOK, map[string]any{"agent": agent, "sessions": sessions})
	}
	return badRequest("by %q: want day or session", by)
}

// getConfig is the config file with secrets masked (as den config get
// shows it): all of it, or ?key=.
func (s *Server) getConfig(w http.ResponseWriter, r *http.Request) error {
	key := r.URL.Query().Get("key")
	v, err := config.Get(s.o.ConfigPath, key)
	if err != nil && (key != "" || !strings.Contains(err.Error(), "there is no config file")) {
		return err
	}
	return reply.JSON(w, http.StatusOK, map[string]any{"path": s.o.ConfigPath, "key": key, "toml": v})
}

// patchConfig changes keys as den config set and den config unset
// do: {"unset": ["key", ...], "set": {"key": "value as TOML or plain
// text"}}. Unsets come first (so that a table can be replaced whole),
// then sets, a table's type before its other keys. Each change is
// checked: the file is valid after every one, or the change is refused
// and the file left as it was; changes before a refused one stay made,
// and the runtime reloads the config whenever anything changed.
// Secrets are never shown back.
func (s *Server) patchConfig(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Set   map[string]json.RawMessage `json:"set"`
		Unset []string                   `json:"unset"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if len(req.Set) == 0 && len(req.Unset) == 0 {
		return badRequest(`nothing to change: send {"set": {"key": value}} or {"unset": ["key"]}`)
	}
	seen := map[string]bool{}
	for _, k := range req.Unset {
		if _, ok := req.Set[k]; ok || seen[k] {
			return badRequest("%s: set or unset a key once", k)
		}
		seen[k] = true
	}
	keys := make([]string, 0, len(req.Set))
	for k := range req.Set {
		keys = append(keys, k)
	}
	// A table's type comes before its other keys: a provider is only
	// valid once it has one.
	sort.Slice(keys, func(i, j int) bool {
		ti, tj := strings.HasSuffix(keys[i], ".type"), strings.HasSuffix(keys[j], ".type")
		if ti != tj {
			return ti
		}
		return keys[i] < keys[j]
	})
	done, err := s.changeConfig(req.Unset, keys, req.Set)
	if len(done) > 0 && s.o.Reload != nil {
		if rerr := s.o.Reload(); rerr != nil {
			if err == nil {
				return rerr
			}
			s.log.Error("config: reload after a refused change", "err", rerr)
		}
	}
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, map[string]any{"changed": done})
}

// configChange is one change as PATCH /api/v1/config reports it: old is
// "" for a key that was unset, new is null for one removed.
type configChange struct {
	Key     string  `json:"key"`
	Old     string  `json:"old"`
	New     *string `json:"new"`
	Removed bool    `json:"removed,omitempty"`
}

// changeConfig removes the keys of unset, then sets each of keys to its
// value in set, in order, stopping at the first refused; it returns
// the changes made.
func (s *Server) changeConfig(unset, keys []string, set map[string]json.RawMessage) ([]configChange, error) {
	var done []configChange
	fail := func(err error) ([]configChange, error) {
		return done, fmt.Errorf("%w (changes before it were made: %d)", err, len(done))
	}
	for _, k := range unset {
		old, err := config.Unset(s.o.ConfigPath, k) // secrets in a table masked
		if err != nil {
			return fail(err)
		}
		if config.Secret(k) {
			old = "********" // as a set shows it
		}
		done = append(done, configChange{Key: k, Old: old, Removed: true})
	}
	for _, k := range keys {
		value, err := configValue(set[k])
		if err != nil {
			return fail(fmt.Errorf("%w: %s: %v", config.ErrBadValue, k, err))
		}
		old, err := config.Set(s.o.ConfigPath, k, value)
		if err != nil {
			return fail(err)
		}
		shown := value
		if config.Secret(k) {
			shown, old = "********", "********"
		}
		done = append(done, configChange{Key: k, Old: old, New: &shown})
	}
	return done, nil
}

// configValue is a JSON value as den config set takes it: strings as
// they are, anything else as its JSON text (TOML reads numbers, booleans
// and arrays of strings the same way).
func configValue(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", err
	}
	switch v.(type) {
	case map[string]any, nil:
		return "", fmt.Errorf("want a string, number, boolean or array, not %s", raw)
	}
	return string(raw), nil
}

// rotateToken replaces den's token: every other browser and script
// signed in with the old one is signed out, this browser gets a new
// cookie, and the answer holds the new token, shown once, for scripts.
func (s *Server) rotateToken(w http.ResponseWriter, r *http.Request) error {
	if s.o.RotateToken == nil {
		return notFound("this server cannot rotate the token")
	}
	t, err := s.o.RotateToken(w, r)
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, map[string]string{"token": t})
}
