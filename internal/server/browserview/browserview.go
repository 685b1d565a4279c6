package browserview

import (
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"den.dev/den/internal/browser"
	"den.dev/den/internal/server/reply"
)

// Runtime gives a session's browser; *session.Runtime is one. An error
// says the session has no browser now (its computer does not run here,
// or it has not used its browser).
type Runtime interface {
	Browser(sessionID string) (*browser.Session, error)
}

// Handler serves a session's browser to the web face. The caller
// checks that the session exists.
type Handler struct {
	RT  Runtime
	Log *slog.Logger // nil: nothing is logged

	mu      sync.Mutex
	holders map[*browser.Session]*viewer // the socket that holds each browser's control
	casts   map[*browser.Session]*caster // each watched browser's screencast
}

func (h *Handler) log() *slog.Logger {
	if h.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Log
}

const (
	// ReadLimit bounds one message from the client (text to insert is
	// the longest); a longer one closes the socket with status 1009.
	ReadLimit = 16 << 10
	// InputRate and InputBurst bound the client's messages: mouse moves
	// come at most once an animation frame.
	InputRate  = 100
	InputBurst = 200
	// MaxFPS bounds the frames sent a second.
	MaxFPS = 15
	// WriteWait is how long a message may take to write before the
	// client counts as gone.
	WriteWait = 15 * time.Second
	// PingEvery and PingWait find a client that went away without
	// closing (a phone asleep).
	PingEvery = 15 * time.Second
	PingWait  = 10 * time.Second

	// inputWait bounds the page's taking one input.
	inputWait = 5 * time.Second
	// controlEvery is how often a socket looks whether control changed
	// (another socket took it, the browser closed).
	controlEvery = 250 * time.Millisecond
	// pageEvery is how often a socket reads the current tab's title and
	// address.
	pageEvery = 500 * time.Millisecond
)

// stateJSON is the answer of the state route.
type stateJSON struct {
	Active  bool      `json:"active"`  // the session has a browser with a current tab
	Control bool      `json:"control"` // the user controls it
	Tabs    []tabJSON `json:"tabs"`
}

type tabJSON struct {
	ID      int    `json:"id"`
	URL     string `json:"url"`
	Title   string `json:"title"`
	Current bool   `json:"current"`
}

// State answers GET /api/v1/sessions/{id}/browser: active false (and no
// tabs) when the session has no browser now.
func (h *Handler) State(w http.ResponseWriter, r *http.Request) error {
	st := stateJSON{Tabs: []tabJSON{}}
	if s, err := h.RT.Browser(r.PathValue("id")); err == nil {
		for _, t := range s.Tabs() {
			st.Tabs = append(st.Tabs, tabJSON{ID: t.ID, URL: clip(t.URL, maxURL), Title: clip(t.Title, maxTitle), Current: t.Current})
			st.Active = st.Active || t.Current
		}
		st.Control = s.UserHasControl()
	}
	return reply.JSON(w, http.StatusOK, st)
}

// Serve answers GET /api/v1/sessions/{id}/browser/screencast (see the
// package doc). An error is returned only before the upgrade, for the
// server to answer as JSON: ErrNotWebSocket. From the upgrade on, Serve
// answers itself (a session without a browser gets an end message) and
// returns nil once every goroutine is gone.
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request) error {
	if !isUpgrade(r) {
		return ErrNotWebSocket
	}
	id := r.PathValue("id")
	log := h.log().With("session", id)
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		// Accept has answered the request (a bad handshake, a foreign
		// Origin).
		log.Info("browser view: upgrade refused", "err", err)
		return nil
	}
	v := &viewer{h: h, conn: conn, log: log, ended: make(chan string, 1), ready: make(chan struct{}, 1)}
	s, err := h.RT.Browser(id)
	if err != nil {
		v.end(r.Context(), "The session has no browser now.")
		conn.CloseNow()
		return nil
	}
	v.s = s
	// r.Context() ends when the server's base context does (den
	// stopping); a client that goes away is noticed by the socket's
	// reads, writes and pings instead.
	v.run(r.Context())
	return nil
}

// take gives v the control of its browser.
func (h *Handler) take(v *viewer) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := v.s.TakeControl(); err != nil {
		return err
	}
	if h.holders == nil {
		h.holders = map[*browser.Session]*viewer{}
	}
	h.holders[v.s] = v
	return nil
}

// release gives the browser back to the agent if v holds its control.
func (h *Handler) release(v *viewer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.holders[v.s] == v {
		delete(h.holders, v.s)
		v.s.ReleaseControl()
	}
}

// holds reports whether v holds its browser's control.
func (h *Handler) holds(v *viewer) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.holders[v.s] == v && v.s.UserHasControl()
}

// isUpgrade reports whether r asks for a WebSocket (Accept checks the
// rest of the handshake).
func isUpgrade(r *http.Request) bool {
	return hasToken(r.Header, "Connection", "upgrade") && hasToken(r.Header, "Upgrade", "websocket")
}

func hasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
