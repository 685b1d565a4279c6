package server

import (
	"bytes"
	"net/http"
	"time"
	"unicode/utf8"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/server/reply"
	"den.dev/den/internal/skill"
)

// skillJSON is a skill as the API lists it.
type skillJSON struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	State       string `json:"state"`
	Usable      bool   `json:"usable"`
	Problem     string `json:"problem,omitempty"`
}

func skillOf(e skill.Entry) skillJSON {
	j := skillJSON{Name: e.Name, State: string(e.State), Usable: e.Usable(), Problem: e.Problem}
	if e.Manifest != nil {
		j.Description = e.Manifest.Description
	}
	return j
}

// listSkills is the skills an agent's sessions may use, for the
// composer's suggestions (GET /api/v1/skills?agent=&session=): name,
// description and state.
func (s *Server) listSkills(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	agentName, sessionID := q.Get("agent"), q.Get("session")
	if sessionID != "" {
		sess, err := s.st.GetSession(r.Context(), sessionID)
		if err != nil {
			return err
		}
		agentName = sess.Agent
	}
	if agentName == "" {
		agentName = "default"
	}
	if err := computer.ValidName("agent", agentName); err != nil {
		return badRequest("%v", err)
	}
	cat, err := s.rt.Skills(r.Context(), agentName)
	if err != nil {
		return err
	}
	entries, err := cat.List(sessionID, time.Now())
	if err != nil {
		return err
	}
	out := []skillJSON{}
	for _, e := range entries {
		out = append(out, skillOf(e))
	}
	return reply.JSON(w, http.StatusOK, map[string]any{"agent": agentName, "skills": out})
}

// Limits of a draft's text in an answer: a draft holds at most 20
// files of 256 KiB as the model writes it, but its folder may have been
// changed since.
const (
	maxDraftText  = 256 << 10 // of one file
	maxDraftTexts = 1 << 20   // of all of them
)

// draftJSON is a skill draft as the API shows it, named by its agent
// and name, never by its folder on the host.
type draftJSON struct {
	Agent       string          `json:"agent"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Session     string          `json:"request_session"` // the session that holds the model's request and answer
	Files       []draftFileJSON `json:"files"`           // SKILL.md first, then by path
	Findings    []skill.Finding `json:"findings"`
	High        int             `json:"high"` // findings of high severity: installing needs force
}

type draftFileJSON struct {
	Path   string `json:"path"`
	Size   int    `json:"size"`
	Exec   bool   `json:"exec"`
	Binary bool   `json:"binary"` // not UTF-8 text: no text
	Text   string `json:"text"`
	Cut    bool   `json:"cut"` // text is the file's start only
}

func draftOf(agentName, requestSession string, b *skill.Bundle) draftJSON {
	d := draftJSON{Agent: agentName, Name: b.Name(), Description: b.Manifest.Description, Session: requestSession,
		Files: []draftFileJSON{}, Findings: b.Findings}
	if d.Findings == nil {
		d.Findings = []skill.Finding{}
	}
	d.High = skill.CountHigh(d.Findings)
	budget := maxDraftTexts
	for _, f := range b.Files {
		j := draftFileJSON{Path: f.Path, Size: len(f.Data), Exec: f.Exec}
		if !utf8.Valid(f.Data) || bytes.IndexByte(f.Data, 0) >= 0 {
			j.Binary = true
		} else {
			text := clipUTF8(f.Data, min(maxDraftText, budget))
			budget -= len(text)
			j.Text, j.Cut = string(text), len(text) < len(f.Data)
		}
		if f.Path == skill.ManifestFile {
			d.Files = append([]draftFileJSON{j}, d.Files...)
		} else {
			d.Files = append(d.Files, j)
		}
	}
	return d
}

// clipUTF8 is the start of text, at most n bytes, not cutting a
// character in two.
func clipUTF8(text []byte, n int) []byte {
	if len(text) <= n {
		return text
	}
	for n > 0 && !utf8.RuneStart(text[n]) {
		n--
	}
	return text[:n]
}

// distill asks the model to turn the session into a skill draft (as den
// skills distill does) and answers the draft for the user to read:
// {"name"?, "model"?}. It takes as long as the model does, and stops
// when the client goes.
func (s *Server) distill(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Name  string `json:"name"`
		Model string `json:"model"`
	}
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil {
			return err
		}
	}
	d, err := s.rt.Distill(r.Context(), r.PathValue("id"), req.Name, req.Model)
	if err != nil {
		return err
	}
	b, err := s.rt.ReadDraft(r.Context(), d.Agent, d.Name)
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, draftOf(d.Agent, d.Session, b))
}

// draftEntryJSON is a skill draft in the list of those waiting.
type draftEntryJSON struct {
	Agent       string    `json:"agent"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Files       int       `json:"files"`
	High        int       `json:"high"`
	Modified    time.Time `json:"modified"`
	Error       string    `json:"error,omitempty"` // why it is not a skill now (its folder was changed)
}

// listDrafts lists the skill drafts waiting for review, of ?agent= or of
// every agent, newest first: the web's and those den skills distill left
// without a terminal.
func (s *Server) listDrafts(w http.ResponseWriter, r *http.Request) error {
	entries, err := s.rt.Drafts(r.Context(), r.URL.Query().Get("agent"))
	if err != nil {
		return err
	}
	out := []draftEntryJSON{}
	for _, e := range entries {
		out = append(out, draftEntryJSON{Agent: e.Agent, Name: e.Name, Description: e.Description, Files: e.Files,
			High: skill.CountHigh(e.Findings), Modified: e.Modified, Error: e.Problem})
	}
	return reply.JSON(w, http.StatusOK, map[string]any{"drafts": out})
}

// getDraft answers one skill draft as distill does, for the user to
// read before installing or discarding it.
func (s *Server) getDraft(w http.ResponseWriter, r *http.Request) error {
	agentName, name := r.PathValue("agent"), r.PathValue("name")
	b, err := s.rt.ReadDraft(r.Context(), agentName, name)
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, draftOf(agentName, "", b))
}

// installDraft installs a skill draft as den skills distill --yes
// does: {"allow_high"?: true} installs one with high-severity findings,
// {"replace"?: true} one in place of a skill of its name, {"force"?:
// true} both (as --force). It answers the skill as listSkills lists it.
func (s *Server) installDraft(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Force     bool `json:"force"`
		AllowHigh bool `json:"allow_high"`
		Replace   bool `json:"replace"`
	}
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil {
			return err
		}
	}
	e, err := s.rt.InstallDraft(r.Context(), r.PathValue("agent"), r.PathValue("name"), req.Force || req.AllowHigh, req.Force || req.Replace)
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, skillOf(e))
}

// discardDraft removes a skill draft.
func (s *Server) discardDraft(w http.ResponseWriter, r *http.Request) error {
	if err := s.rt.DiscardDraft(r.PathValue("agent"), r.PathValue("name")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
