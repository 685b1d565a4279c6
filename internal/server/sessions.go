package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/egress"
	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/server/reply"
	"den.dev/den/internal/session"
	"den.dev/den/internal/store"
)

// sessionJSON is a session as the API shows it.
type sessionJSON struct {
	ID      string    `json:"id"`
	Agent   string    `json:"agent"`
	Title   string    `json:"title"`
	Model   string    `json:"model"`
	Status  string    `json:"status"`
	Running bool      `json:"running"` // a turn runs in this den process
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	Head    string    `json:"head,omitempty"`
	Usage   usageJSON `json:"usage"`
	// Parent is the session that started this one as a sub-agent, with
	// Profile.
	Parent  string `json:"parent,omitempty"`
	Profile string `json:"profile,omitempty"`
}

type usageJSON struct {
	Requests         int64   `json:"requests"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CostUSD          float64 `json:"cost_usd"`
}

func usageOf(u store.Usage) usageJSON {
	return usageJSON{u.Requests, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.CostUSD}
}

func (s *Server) sessionOf(sess store.Session) sessionJSON {
	status := sess.Status
	if status == "" {
		status = "idle"
	}
	return sessionJSON{ID: sess.ID, Agent: sess.Agent, Title: sess.Title, Model: sess.Model, Status: status,
		Running: s.rt.Running(sess.ID), Created: sess.Created, Updated: sess.Updated, Head: sess.Head, Usage: usageOf(sess.Usage),
		Parent: sess.Parent, Profile: sess.Profile}
}

// agentJSON is an agent's settings as the API shows them: what the
// config says, "" (or empty) where it says nothing and den's default
// applies, but for trust and network, which show the level den uses.
type agentJSON struct {
	Name             string            `json:"name"`
	Model            string            `json:"model,omitempty"` // "": den's default model
	Trust            string            `json:"trust"`
	Instructions     string            `json:"instructions"`
	InstructionsFile string            `json:"instructions_file,omitempty"`
	Network          string            `json:"network"` // "on" or "off"
	Egress           string            `json:"egress"`  // the policy with the network on: open, allowlist or ask
	Allow            []string          `json:"allow"`   // its rules
	Mounts           []string          `json:"mounts"`  // HOST:GUEST[:ro|:rw], as the config writes them
	Rootfs           string            `json:"rootfs"`  // "": alpine, when the computer is first made
	Permissions      map[string]string `json:"permissions"`
	AllowedModels    []string          `json:"allowed_models"`
	Memory           string            `json:"memory"` // sizes such as "2GiB", or "unlimited"; "": den's default
	Tmp              string            `json:"tmp"`
	Disk             string            `json:"disk"`
	Pids             int64             `json:"pids"`       // 0: den's default
	CPUWeight        uint64            `json:"cpu_weight"` // 0: den's default
	Remember         bool              `json:"remember"`   // the agent's memory is on for its sessions (each may differ)
	Browser          bool              `json:"browser"`    // the agent may have a web browser (agents.NAME.browser)
}

func agentOf(name string, a config.Agent) agentJSON {
	out := agentJSON{Name: name, Model: a.Model, Trust: a.Trust, Instructions: a.Instructions, InstructionsFile: a.InstructionsFile,
		Network: a.Network, Mounts: a.Mounts, Rootfs: a.Rootfs, Permissions: a.Permissions, AllowedModels: a.AllowedModels,
		Memory: a.Memory, Tmp: a.Tmp, Disk: a.Disk, Pids: a.Pids, CPUWeight: a.CPUWeight, Remember: a.MemoryOn(), Browser: a.BrowserOn()}
	if out.Trust == "" {
		out.Trust = string(permission.Trusted)
	}
	if pol, err := a.EgressPolicy(); err == nil && pol.Mode == egress.Off {
		out.Network = "off" // egress = "off" is network = "off"
	}
	if out.Network == "" {
		out.Network = "on" // a computer has the network unless the config turns it off
	}
	out.Egress, out.Allow = a.Egress, a.Allow
	if out.Egress == "" || out.Egress == string(egress.Off) {
		out.Egress = string(egress.Open)
	}
	if out.Allow == nil {
		out.Allow = []string{}
	}
	if out.Mounts == nil {
		out.Mounts = []string{}
	}
	if out.Permissions == nil {
		out.Permissions = map[string]string{}
	}
	if out.AllowedModels == nil {
		out.AllowedModels = []string{}
	}
	return out
}

func (s *Server) agents(w http.ResponseWriter, r *http.Request) error {
	cfg := s.rt.Config()
	names := map[string]bool{"default": true}
	for name := range cfg.Agents {
		names[name] = true
	}
	out := make([]agentJSON, 0, len(names))
	for name := range names {
		out = append(out, agentOf(name, cfg.Agent(name)))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return reply.JSON(w, http.StatusOK, map[string]any{"agents": out})
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			return badRequest("limit %q: want a number from 1 to 500", v)
		}
		limit = n
	}
	list, err := s.st.FindSessions(r.Context(), store.SessionQuery{Agent: q.Get("agent"), Text: q.Get("q"), Before: q.Get("before"), Limit: limit + 1})
	if err != nil {
		return err
	}
	more := len(list) > limit
	if more {
		list = list[:limit]
	}
	out := make([]sessionJSON, len(list))
	for i, sess := range list {
		out[i] = s.sessionOf(sess)
	}
	return reply.JSON(w, http.StatusOK, map[string]any{"sessions": out, "more": more})
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Agent string `json:"agent"`
		Model string `json:"model"`
		Title string `json:"title"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Agent == "" {
		req.Agent = "default"
	}
	if err := computer.ValidName("agent", req.Agent); err != nil {
		return badRequest("%v", err)
	}
	sess, err := s.rt.Create(r.Context(), req.Agent, req.Model)
	if err != nil {
		return err
	}
	if req.Title != "" {
		if err := s.st.SetTitle(r.Context(), sess.ID, req.Title); err != nil {
			return err
		}
		sess.Title = req.Title
	}
	return reply.JSON(w, http.StatusCreated, s.sessionOf(sess))
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) error {
	sess, err := s.st.GetSession(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	limit := 50
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			return badRequest("limit %q: want a number from 1 to 500", v)
		}
		limit = n
	}
	last, err := s.rt.LastEventID(r.Context())
	if err != nil {
		return err
	}
	page, more, err := s.st.PathPage(r.Context(), sess.ID, r.URL.Query().Get("before"), limit)
	if err != nil {
		return err
	}
	msgs := make([]messageJSON, len(page))
	ids := make([]string, len(page))
	for i, m := range page {
		msgs[i], ids[i] = messageOf(m), m.ID
	}
	versions, err := s.st.Versions(r.Context(), sess.ID, ids)
	if err != nil {
		return err
	}
	for i := range msgs {
		msgs[i].Versions = versions[msgs[i].ID]
	}
	if err := s.addCallFacts(r.Context(), msgs); err != nil {
		return err
	}
	queued, err := s.st.QueuedMessages(r.Context(), sess.ID)
	if err != nil {
		return err
	}
	pending := make([]map[string]string, len(queued))
	for i, q := range queued {
		pending[i] = map[string]string{"message_id": q.MessageID, "text": q.Text}
	}
	// What the running turn streamed since its last committed message
	// is in no message yet: a face that follows the events after the
	// last message event shows it.
	resume, err := s.st.LastEventOf(r.Context(), sess.ID, "message", last)
	if err != nil {
		return err
	}
	// last was read before the messages were: a face that follows the
	// events after it misses nothing committed since.
	remember, err := s.rt.MemoryOn(r.Context(), sess)
	if err != nil {
		return err
	}
	_, lastRequest, _, err := s.st.SessionBreakdown(r.Context(), sess.ID)
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, struct {
		sessionJSON
		Memory        bool                `json:"memory"`       // memory is on for its next turns
		LastRequest   map[string]int64    `json:"last_request"` // the last request's input tokens by part
		Messages      []messageJSON       `json:"messages"`
		More          bool                `json:"more"` // older messages: ?before=<the first one's id>
		Queued        []map[string]string `json:"queued"`
		LastEventID   int64               `json:"last_event_id"`   // follow the events after it
		ResumeEventID int64               `json:"resume_event_id"` // or after it, to see the uncommitted part of a running turn too
	}{s.sessionOf(sess), remember, lastRequest, msgs, more, pending, last, resume})
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) error {
	if err := s.rt.Delete(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) postMessage(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Text        string   `json:"text"`
		Attachments []string `json:"attachments"`
		Model       string   `json:"model"`
		Thinking    string   `json:"thinking"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Text) == "" && len(req.Attachments) == 0 {
		return badRequest("the message has no text")
	}
	thinking, err := parseThinking(req.Thinking)
	if err != nil {
		return err
	}
	msg := session.Message{Text: req.Text}
	if len(req.Attachments) > 0 {
		if msg.Parts, err = s.attachmentParts(r.Context(), r.PathValue("id"), req.Text, req.Attachments); err != nil {
			return err
		}
	}
	sent, err := s.rt.Send(r.Context(), r.PathValue("id"), msg,
		session.TurnOptions{Model: req.Model, Thinking: thinking, IfBusy: session.Queue})
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusAccepted, map[string]any{"message_id": sent.MessageID, "queued": sent.Queued})
}

func parseThinking(s string) (llm.ThinkingLevel, error) {
	switch l := llm.ThinkingLevel(s); l {
	case "", llm.ThinkingOff, llm.ThinkingLow, llm.ThinkingMedium, llm.ThinkingHigh, llm.ThinkingMax:
		return l, nil
	}
	return "", badRequest("thinking %q: want off, low, medium, high or max", s)
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.st.GetSession(r.Context(), id); err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, map[string]any{"canceled": s.rt.Cancel(id)})
}

// messageJSON is a message as the API shows it.
type messageJSON struct {
	ID      string     `json:"id"`
	Role    string     `json:"role"`
	Parent  string     `json:"parent_id,omitempty"`
	Model   string     `json:"model,omitempty"`
	Created time.Time  `json:"created"`
	Parts   []partJSON `json:"parts"`
	// Versions are this message and its siblings (other versions made by
	// a regenerate or an edit), oldest first, when there are several;
	// POST .../branch {"message_id"} shows another.
	Versions []string `json:"versions,omitempty"`
}

type partJSON struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Content   []partJSON      `json:"content,omitempty"`
	MediaType string          `json:"media_type,omitempty"`
	Data      []byte          `json:"data,omitempty"` // base64 in JSON
	// A tool call's card: its shell command's classification, and once
	// it finished, how long it took and its exit code.
	Labels     []string `json:"labels,omitempty"`
	DurationMS *int64   `json:"duration_ms,omitempty"`
	ExitCode   *int     `json:"exit_code,omitempty"`
}

// addCallFacts puts on the tool calls of msgs what their cards show.
func (s *Server) addCallFacts(ctx context.Context, msgs []messageJSON) error {
	var ids []string
	for _, m := range msgs {
		if m.Role == string(llm.Assistant) {
			ids = append(ids, m.ID)
		}
	}
	facts, err := s.st.CallFacts(ctx, ids)
	if err != nil {
		return err
	}
	for _, m := range msgs {
		for i := range m.Parts {
			p := &m.Parts[i]
			if p.Type != "tool_call" {
				continue
			}
			p.Labels = session.CallLabels(&llm.ToolCall{Name: p.Name, Input: p.Input})
			if f, ok := facts[p.ID]; ok {
				ms := f.Duration.Milliseconds()
				p.DurationMS, p.ExitCode = &ms, f.ExitCode
			}
		}
	}
	return nil
}

func messageOf(m store.StoredMessage) messageJSON {
	return messageJSON{ID: m.ID, Role: string(m.Message.Role), Parent: m.ParentID, Model: m.Model, Created: m.Created, Parts: partsOf(m.Message.Parts)}
}

func partsOf(parts []llm.Part) []partJSON {
	out := make([]partJSON, 0, len(parts))
	for _, p := range parts {
		switch p := p.(type) {
		case *llm.Text:
			out = append(out, partJSON{Type: "text", Text: p.Text})
		case *llm.Thinking:
			if p.Text != "" {
				out = append(out, partJSON{Type: "thinking", Text: p.Text})
			}
		case *llm.ToolCall:
			in := p.Input
			if !json.Valid(in) {
				in, _ = json.Marshal(string(p.Input))
			}
			out = append(out, partJSON{Type: "tool_call", ID: p.ID, Name: p.Name, Input: in})
		case *llm.ToolResult:
			out = append(out, partJSON{Type: "tool_result", CallID: p.CallID, Name: p.Name, IsError: p.IsError, Content: partsOf(p.Content)})
		case *llm.Image:
			out = append(out, partJSON{Type: "image", MediaType: p.MediaType, Data: p.Data})
		}
	}
	return out
}

func (s *Server) regenerate(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Model    string `json:"model"`
		Thinking string `json:"thinking"`
	}
	if r.ContentLength != 0 {
		if err := decode(r, &req); err != nil {
			return err
		}
	}
	thinking, err := parseThinking(req.Thinking)
	if err != nil {
		return err
	}
	if _, err := s.rt.Regenerate(r.Context(), r.PathValue("id"), r.PathValue("message_id"),
		session.TurnOptions{Model: req.Model, Thinking: thinking}); err != nil {
		return err
	}
	return reply.JSON(w, http.StatusAccepted, map[string]any{"regenerating": r.PathValue("message_id")})
}

func (s *Server) edit(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Text string `json:"text"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if strings.TrimSpace(req.Text) == "" {
		return badRequest("the message has no text")
	}
	sent, err := s.rt.Edit(r.Context(), r.PathValue("id"), r.PathValue("message_id"), req.Text, session.TurnOptions{})
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusAccepted, map[string]any{"message_id": sent.MessageID, "queued": false})
}

func (s *Server) switchBranch(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		MessageID string `json:"message_id"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.MessageID == "" {
		return badRequest("message_id is required")
	}
	id := r.PathValue("id")
	if err := s.rt.Switch(r.Context(), id, req.MessageID); err != nil {
		return err
	}
	sess, err := s.st.GetSession(r.Context(), id)
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, s.sessionOf(sess))
}

// maxAttachedImage bounds an image attachment put in the message itself
// (larger ones are named, for the agent to read with its tools).
const maxAttachedImage = 5 << 20

// attachmentParts is a message of text and the named attachments (files
// uploaded to the session's /den/attachments): each is named by its
// path in the computer, and an image small enough is in the message
// too, for a model that takes images.
func (s *Server) attachmentParts(ctx context.Context, sessionID, text string, names []string) ([]llm.Part, error) {
	if len(names) > 20 {
		return nil, badRequest("at most 20 attachments a message")
	}
	f, err := s.rt.Folders(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	dir, err := hostfs.OpenDir(f.Attachments)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, badRequest("the session has no attachments: upload them with POST /api/v1/sessions/{id}/attachments first")
	}
	if err != nil {
		return nil, err
	}
	defer dir.Close()
	parts := []llm.Part{&llm.Text{Text: text}}
	var lines []string
	for _, name := range names {
		if name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") {
			return nil, badRequest("attachment %q: give the name the upload returned", name)
		}
		fh, err := dir.Open(name)
		if err != nil {
			return nil, badRequest("attachment %q: %v", name, err)
		}
		fi, err := fh.Stat()
		fh.Close()
		if err != nil {
			return nil, err
		}
		kind := mime.TypeByExtension(strings.ToLower(filepath.Ext(name)))
		lines = append(lines, fmt.Sprintf("[attached: %s/%s (%s, %d bytes)]", sandbox.GuestAttachments, name, firstNonEmpty(kind, "unknown type"), fi.Size()))
		if !strings.HasPrefix(kind, "image/") || fi.Size() > maxAttachedImage {
			continue
		}
		data, err := dir.ReadFile(name, maxAttachedImage)
		if err != nil {
			return nil, badRequest("attachment %q: %v", name, err)
		}
		if sniffed := http.DetectContentType(data); strings.HasPrefix(sniffed, "image/") {
			parts = append(parts, &llm.Image{MediaType: sniffed, Data: data})
		}
	}
	parts[0] = &llm.Text{Text: strings.TrimSpace(text + "\n\n" + strings.Join(lines, "\n"))}
	return parts, nil
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// patchSession changes a session: {"memory": true|false|null} turns its
// memory on or off (null: as its agent), {"title": "..."} renames it.
func (s *Server) patchSession(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Memory json.RawMessage `json:"memory"` // "null" when sent as null, empty when not sent
		Title  *string         `json:"title"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	id := r.PathValue("id")
	if _, err := s.st.GetSession(r.Context(), id); err != nil {
		return err
	}
	if len(req.Memory) == 0 && req.Title == nil {
		return badRequest(`nothing to change: send {"memory": true|false|null} or {"title": "..."}`)
	}
	if len(req.Memory) > 0 {
		var on *bool
		if string(req.Memory) != "null" {
			var b bool
			if err := json.Unmarshal(req.Memory, &b); err != nil {
				return badRequest("memory: want true, false or null")
			}
			on = &b
		}
		if err := s.st.SetSessionMemory(r.Context(), id, on); err != nil {
			return err
		}
	}
	if req.Title != nil {
		t := strings.TrimSpace(*req.Title)
		if t == "" || utf8.RuneCountInString(t) > 200 || strings.ContainsAny(t, "\n\r\x00") {
			return badRequest("title: one line of 1 to 200 characters")
		}
		if err := s.st.SetTitle(r.Context(), id, t); err != nil {
			return err
		}
	}
	sess, err := s.st.GetSession(r.Context(), id)
	if err != nil {
		return err
	}
	remember, err := s.rt.MemoryOn(r.Context(), sess)
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, struct {
		sessionJSON
		Memory bool `json:"memory"`
	}{s.sessionOf(sess), remember})
}
