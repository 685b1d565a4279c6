package openaicompat

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"time"

	"den.dev/den/internal/config"
	"den.dev/den/internal/server/reply"
	"den.dev/den/internal/session"
	"den.dev/den/internal/store"
)

// Runtime is what the handlers need of den's runtime; *session.Runtime
// satisfies it.
type Runtime interface {
	Create(ctx context.Context, agent, model string) (store.Session, error)
	Send(ctx context.Context, sessionID string, m session.Message, opts session.TurnOptions) (session.Sent, error)
	Subscribe(sessionID string, after int64, keep func(store.Event) bool) *session.Subscription
	LastEventID(ctx context.Context) (int64, error)
	// Sync returns once every event published so far is stored and
	// handed to the subscriptions: a call's usage is then complete.
	Sync()
	Cancel(sessionID string) bool
	Config() *config.Config
	Store() *store.Store
}

var _ Runtime = (*session.Runtime)(nil)

// SessionHeader names the den session of a call: a client sends it to
// continue a session, and every answer to a message den accepted
// carries it.
const SessionHeader = "X-Den-Session"

// modelPrefix starts every model's id: den/AGENT.
const modelPrefix = "den/"

// keepAlive is how often a stream that has nothing to say yet sends a
// comment, so that proxies and clients keep the connection.
const keepAlive = 15 * time.Second

// Handler answers OpenAI's Chat Completions API with den's agents.
type Handler struct {
	RT  Runtime
	Log *slog.Logger
}

func (h *Handler) log() *slog.Logger {
	if h.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Log
}

// Models answers GET /v1/models: one model per agent, den/AGENT.
func (h *Handler) Models(w http.ResponseWriter, r *http.Request) {
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	// den keeps no creation time for an agent: created is when the
	// list was made.
	now := time.Now().Unix()
	data := []model{}
	for _, name := range agents(h.RT.Config()) {
		data = append(data, model{ID: modelPrefix + name, Object: "model", Created: now, OwnedBy: "den"})
	}
	reply.JSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// agents are the names of the agents the config has, and default, in
// order.
func agents(cfg *config.Config) []string {
	names := []string{"default"}
	for name := range cfg.Agents {
		if name != "default" {
			names = append(names, name)
		}
	}
	sort.Strings(names[1:])
	return names
}

// agentOf is the agent a model names (den/AGENT).
func agentOf(cfg *config.Config, model string) (string, bool) {
	name, ok := strings.CutPrefix(model, modelPrefix)
	if !ok {
		return "", false
	}
	if _, known := cfg.Agents[name]; name == "default" || known {
		return name, true
	}
	return "", false
}

// ChatCompletions answers POST /v1/chat/completions: it sends the
// request's message to a session of the agent its model names, waits
// for the run to end, and answers with its final text, streamed or not.
func (h *Handler) ChatCompletions(w http.ResponseWriter, r *http.Request) {
	created := time.Now().Unix()
	req, err := decodeRequest(w, r)
	if err != nil {
		h.fail(w, r, err, false)
		return
	}
	agent, ok := agentOf(h.RT.Config(), req.Model)
	if !ok {
		h.fail(w, r, modelNotFound(req.Model), false)
		return
	}
	c, err := h.send(r, agent, req)
	if err != nil {
		h.fail(w, r, err, false)
		return
	}
	defer c.usage.Close()
	w.Header().Set(SessionHeader, c.session)
	// den has the message now: running it again is not the client's
	// SDK's call to make.
	w.Header().Set("X-Should-Retry", "false")
	if c.sent.Queued {
		h.fail(w, r, sessionBusy(c.session), false)
		return
	}
	c.base = chunk{ID: "chatcmpl-" + c.sent.MessageID, Created: created, Model: req.Model}
	if req.Stream {
		h.stream(w, r, c, req.IncludeUsage)
		return
	}
	h.complete(w, r, c)
}

// call is a message den accepted for a session, with a subscription to
// the usage events of the runs it starts.
type call struct {
	session string
	sent    session.Sent
	usage   *session.Subscription
	base    chunk // the answer's id, created and model
}

// send gives the request's message to the session the request names,
// or to a new session of agent.
func (h *Handler) send(r *http.Request, agent string, req *chatRequest) (*call, error) {
	ctx := r.Context()
	id := r.Header.Get(SessionHeader)
	text := req.last()
	if id != "" {
		sess, err := h.RT.Store().GetSession(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound), err == nil && sess.Agent != agent:
			return nil, sessionNotFound(id, agent)
		case err != nil:
			return nil, err
		}
	} else {
		sess, err := h.RT.Create(ctx, agent, "")
		if err != nil {
			return nil, err
		}
		id, text = sess.ID, req.prompt()
	}
	// Every event published so far is stored before the subscription
	// starts after the newest: what it sees is this message's.
	h.RT.Sync()
	after, err := h.RT.LastEventID(ctx)
	if err != nil {
		return nil, err
	}
	sub := h.RT.Subscribe(id, after, func(e store.Event) bool { return e.Type == "usage" })
	sent, err := h.RT.Send(ctx, id, session.Message{Text: text}, session.TurnOptions{IfBusy: session.Queue})
	if err != nil {
		sub.Close()
		return nil, err
	}
	return &call{session: id, sent: sent, usage: sub}, nil
}

// wait waits for the outcome of c's runs. A client that goes first (its
// context ends, or ping, when set, finds it gone) cancels the turn;
// ok is false then.
func (h *Handler) wait(ctx context.Context, c *call, ping func() error) (out session.Outcome, ok bool) {
	var tick <-chan time.Time
	if ping != nil {
		t := time.NewTicker(keepAlive)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case out := <-c.sent.Done:
			return out, true
		case <-tick:
			if ping() == nil {
				continue
			}
		case <-ctx.Done():
		}
		select {
		case out := <-c.sent.Done:
			return out, true
		default:
		}
		h.RT.Cancel(c.session)
		h.log().Info("openai client gone: turn canceled", "session", c.session)
		return session.Outcome{}, false
	}
}

// tokens sums the usage events of c's runs, all published by now.
func (h *Handler) tokens(ctx context.Context, c *call) usage {
	h.RT.Sync()
	var u usage
	for {
		e, ok, err := c.usage.Poll(ctx)
		if err != nil {
			h.log().Warn("openai: usage not read", "session", c.session, "err", err)
			break
		}
		if !ok {
			break
		}
		var d struct {
			Input      int64 `json:"input_tokens"`
			Output     int64 `json:"output_tokens"`
			CacheRead  int64 `json:"cache_read_tokens"`
			CacheWrite int64 `json:"cache_write_tokens"`
		}
		if err := json.Unmarshal(e.Data, &d); err != nil {
			h.log().Warn("openai: usage event not read", "id", e.ID, "err", err)
			continue
		}
		u.PromptTokens += d.Input + d.CacheRead + d.CacheWrite
		u.PromptTokensDetails.CachedTokens += d.CacheRead
		u.CompletionTokens += d.Output
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

// complete answers with the run's outcome once it has ended.
func (h *Handler) complete(w http.ResponseWriter, r *http.Request, c *call) {
	// The run may take minutes: no write deadline (where the writer
	// has one).
	http.NewResponseController(w).SetWriteDeadline(time.Time{})
	out, ok := h.wait(r.Context(), c, nil)
	if !ok {
		return
	}
	if out.Err != nil {
		h.fail(w, r, out.Err, true)
		return
	}
	reply.JSON(w, http.StatusOK, completion{
		ID: c.base.ID, Object: "chat.completion", Created: c.base.Created, Model: c.base.Model,
		Choices: []choice{{Message: answer{Role: "assistant", Content: out.Result.Text}, FinishReason: finishReason(out.Result.Stop)}},
		Usage:   h.tokens(r.Context(), c),
	})
}

// fail answers with err in OpenAI's shape, logging what is den's own
// fault. shown is errorFor's.
func (h *Handler) fail(w http.ResponseWriter, r *http.Request, err error, shown bool) {
	ae := errorFor(err, shown)
	if ae.Status >= 500 {
		h.log().Error("openai request failed", "path", r.URL.Path, "session", w.Header().Get(SessionHeader), "err", err)
	}
	reply.JSON(w, ae.Status, map[string]any{"error": ae})
}
