// Package server is den's HTTP API: one route table, JSON everywhere,
// errors as {"error": {"code", "message"}} with status codes mapped in
// one place (errorFor), event streams as Server-Sent Events that resume
// from Last-Event-ID. Every route but health is behind the auth guard
// (internal/server/auth), which the daemon wraps around Handler.
package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"den.dev/den/internal/checkpoint"
	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/mcpserver"
	"den.dev/den/internal/metrics"
	"den.dev/den/internal/push"
	"den.dev/den/internal/schedule"
	"den.dev/den/internal/secret"
	"den.dev/den/internal/server/auth"
	"den.dev/den/internal/server/browserview"
	"den.dev/den/internal/server/files"
	"den.dev/den/internal/server/openaicompat"
	"den.dev/den/internal/server/reply"
	"den.dev/den/internal/server/terminal"
	"den.dev/den/internal/session"
	"den.dev/den/internal/skill"
	"den.dev/den/internal/store"
	"den.dev/den/internal/web"
	"den.dev/den/internal/webpush"
)

// Options wire a Server.
type Options struct {
	Runtime *session.Runtime
	Store   *store.Store
	// ConfigPath is the config file the config routes read and change;
	// Reload is called after a change so that new runs use it.
	ConfigPath string
	Reload     func() error
	Version    string
	Log        *slog.Logger
	// Metrics, when set, is served at /metrics with the server's
	// gauges; whoever made it feeds it the events.
	Metrics *metrics.Metrics
	// Push, when set, answers the Web Push routes; they are 404 without
	// it (push = false).
	Push *push.Service
	// RotateToken, when set, replaces den's token for
	// POST /api/v1/token/rotate: it ends every session made with the
	// old one, signs r's browser in again (a cookie set on w) and
	// returns the new token; the auth guard's Rotate. An error wrapping
	// auth.ErrTokenFromEnv says the token is not den's to change.
	RotateToken func(w http.ResponseWriter, r *http.Request) (string, error)
	// MCP, when set, is den's MCP server, served at /mcp with the
	// streamable HTTP transport; /mcp is 404 without it.
	MCP *mcpserver.Server
	// Secrets, when set, are the secrets the secrets routes list and
	// change (never showing a value); they are 404 without it.
	Secrets *secret.Store
	// Schedules, when set, answers the schedule routes; they are 404
	// without it.
	Schedules *schedule.Book
}

// Server answers den's API.
type Server struct {
	o     Options
	rt    *session.Runtime
	st    *store.Store
	log   *slog.Logger
	mux   *http.ServeMux
	sse   *sseClients
	files *files.Handler
	term  *terminal.Handler
	view  *browserview.Handler
	chat  *openaicompat.Handler
	stats http.Handler
	web   *web.Handler
}

// Route is one entry of the route table.
type Route struct {
	Method, Pattern string
	Public          bool // no credentials needed
	handle          func(w http.ResponseWriter, r *http.Request) error
}

// HealthPath is the one route that needs no credentials.
const HealthPath = "/api/v1/health"

// New builds the server and its routes.
func New(o Options) *Server {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{o: o, rt: o.Runtime, st: o.Store, log: o.Log, mux: http.NewServeMux(), sse: &sseClients{},
		files: &files.Handler{F: o.Runtime},
		term:  &terminal.Handler{RT: o.Runtime, Log: o.Log},
		view:  &browserview.Handler{RT: o.Runtime, Log: o.Log},
		chat:  &openaicompat.Handler{RT: o.Runtime, Log: o.Log},
		web:   &web.Handler{}}
	if o.Metrics != nil {
		s.stats = o.Metrics.Handler(metrics.Gauges{
			ActiveSessions: o.Runtime.RunningCount,
			SSEClients:     func() int { return int(s.sse.n.Load()) },
			QueueDepth: func() int {
				n, err := o.Store.QueueDepth(context.Background())
				if err != nil {
					s.log.Warn("metrics: queue depth not read", "err", err)
				}
				return n
			},
		})
	}
	for _, rt := range s.Routes() {
		h := rt.handle
		s.mux.HandleFunc(rt.Method+" "+rt.Pattern, func(w http.ResponseWriter, r *http.Request) {
			if err := h(w, r); err != nil {
				s.fail(w, r, err)
			}
		})
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, notFound("no route %s %s", r.Method, r.URL.Path))
	})
	return s
}

// Routes is the route table.
func (s *Server) Routes() []Route {
	return []Route{
		{"GET", HealthPath, true, s.health},
		{"GET", "/{$}", false, s.web.Index},
		{"GET", "/app/{path...}", false, s.web.File},
		{"GET", "/sw.js", false, s.web.Worker},
		{"GET", "/manifest.webmanifest", false, s.web.Manifest},
		{"GET", "/api/v1/agents", false, s.agents},
		{"GET", "/api/v1/skills", false, s.listSkills},
		{"GET", "/api/v1/skills/drafts", false, s.listDrafts},
		{"GET", "/api/v1/skills/drafts/{agent}/{name}", false, s.getDraft},
		{"POST", "/api/v1/skills/drafts/{agent}/{name}/install", false, s.installDraft},
		{"DELETE", "/api/v1/skills/drafts/{agent}/{name}", false, s.discardDraft},
		{"GET", "/api/v1/mcp", false, s.listMCP},
		{"GET", "/api/v1/models", false, s.listModels},
		{"GET", "/api/v1/sessions", false, s.listSessions},
		{"POST", "/api/v1/sessions", false, s.createSession},
		{"GET", "/api/v1/sessions/{id}", false, s.getSession},
		{"DELETE", "/api/v1/sessions/{id}", false, s.deleteSession},
		{"PATCH", "/api/v1/sessions/{id}", false, s.patchSession},
		{"POST", "/api/v1/sessions/{id}/messages", false, s.postMessage},
		{"POST", "/api/v1/sessions/{id}/cancel", false, s.cancel},
		{"POST", "/api/v1/sessions/{id}/distill", false, s.distill},
		{"GET", "/api/v1/sessions/{id}/subagents", false, s.listSubagents},
		{"POST", "/api/v1/sessions/{id}/subagents", false, s.startSubagent},
		{"GET", "/api/v1/sessions/{id}/subagents/{sub}", false, s.getSubagent},
		{"POST", "/api/v1/sessions/{id}/subagents/{sub}/messages", false, s.steerSubagent},
		{"POST", "/api/v1/sessions/{id}/subagents/{sub}/cancel", false, s.cancelSubagent},
		{"POST", "/api/v1/agents/{name}/inbox", false, s.sendToInbox},
		{"POST", "/api/v1/sessions/{id}/messages/{message_id}/regenerate", false, s.regenerate},
		{"POST", "/api/v1/sessions/{id}/messages/{message_id}/edit", false, s.edit},
		{"POST", "/api/v1/sessions/{id}/branch", false, s.switchBranch},
		{"GET", "/api/v1/sessions/{id}/files/{path...}", false, s.files.Get},
		{"PUT", "/api/v1/sessions/{id}/files/{path...}", false, s.files.Put},
		{"POST", "/api/v1/sessions/{id}/attachments", false, s.files.Attach},
		{"GET", "/api/v1/sessions/{id}/attachments/{name}", false, s.files.GetAttachment},
		{"GET", "/api/v1/sessions/{id}/offloads/{name}", false, s.files.GetOffload},
		{"GET", "/api/v1/resources", false, s.files.Resource},
		{"GET", "/api/v1/sessions/{id}/events", false, s.sessionEvents},
		{"GET", "/api/v1/events", false, s.allEvents},
		{"GET", "/api/v1/approvals", false, s.listApprovals},
		{"POST", "/api/v1/approvals/{id}", false, s.answerApproval},
		{"GET", "/api/v1/rules", false, s.listRules},
		{"DELETE", "/api/v1/rules", false, s.deleteRule},
		{"GET", "/api/v1/sessions/{id}/terminal", false, s.term.Serve},
		{"GET", "/api/v1/sessions/{id}/browser", false, s.browserState},
		{"GET", "/api/v1/sessions/{id}/checkpoints", false, s.listCheckpoints},
		{"GET", "/api/v1/sessions/{id}/checkpoints/{checkpoint}/changes", false, s.checkpointChanges},
		{"POST", "/api/v1/sessions/{id}/checkpoints/{checkpoint}/restore", false, s.restoreCheckpoint},
		{"GET", "/api/v1/sessions/{id}/browser/screencast", false, s.browserScreencast},
		{"POST", "/api/v1/device/{id}", false, s.deviceAnswer},
		{"POST", "/api/v1/device/{id}/claim", false, s.deviceClaim},
		{"POST", "/api/v1/device/presence", false, s.devicePresence},
		{"GET", "/api/v1/usage", false, s.usage},
		{"GET", "/api/v1/network", false, s.network},
		{"GET", "/api/v1/secrets", false, s.secrets},
		{"PUT", "/api/v1/secrets/{name}", false, s.putSecret},
		{"DELETE", "/api/v1/secrets/{name}", false, s.deleteSecret},
		{"GET", "/api/v1/config", false, s.getConfig},
		{"PATCH", "/api/v1/config", false, s.patchConfig},
		{"GET", "/api/v1/push", false, s.pushInfo},
		{"POST", "/api/v1/push/subscriptions", false, s.subscribePush},
		{"DELETE", "/api/v1/push/subscriptions", false, s.unsubscribePush},
		{"POST", "/api/v1/push/test", false, s.testPush},
		{"POST", "/api/v1/token/rotate", false, s.rotateToken},
		{"GET", "/api/v1/schedules", false, s.listSchedules},
		{"POST", "/api/v1/schedules", false, s.addSchedule},
		{"GET", "/api/v1/schedules/runs", false, s.scheduleRuns},
		{"GET", "/api/v1/schedules/{id}", false, s.getSchedule},
		{"PATCH", "/api/v1/schedules/{id}", false, s.editSchedule},
		{"DELETE", "/api/v1/schedules/{id}", false, s.deleteSchedule},
		{"GET", "/api/v1/schedules/{id}/runs", false, s.scheduleRuns},
		{"POST", "/api/v1/schedules/{id}/{action}", false, s.scheduleAction},
		{"POST", "/v1/chat/completions", false, plain(s.chat.ChatCompletions)},
		{"GET", "/v1/models", false, plain(s.chat.Models)},
		{"GET", "/metrics", false, s.metrics},
		// The MCP server's streamable HTTP transport: requests, the
		// stream of its own messages, the end of a session.
		{"POST", "/mcp", false, s.mcp},
		{"GET", "/mcp", false, s.mcp},
		{"DELETE", "/mcp", false, s.mcp},
	}
}

// mcp serves /mcp: every method goes to the MCP server's handler, which
// answers in the transport's own shapes (JSON-RPC errors, plain text
// for a bad request), with bodies up to mcpserver.MaxBody (a
// write_file's content).
func (s *Server) mcp(w http.ResponseWriter, r *http.Request) error {
	if s.o.MCP == nil {
		return notFound("den's MCP server is not served here")
	}
	auth.LimitBody(w, r, mcpserver.MaxBody)
	s.o.MCP.Handler().ServeHTTP(w, r)
	return nil
}

// plain is a handler that answers every request itself (in its own
// error shape) as a route's.
func plain(h http.HandlerFunc) func(w http.ResponseWriter, r *http.Request) error {
	return func(w http.ResponseWriter, r *http.Request) error {
		h(w, r)
		return nil
	}
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) error {
	if s.stats == nil {
		return notFound("metrics are off")
	}
	s.stats.ServeHTTP(w, r)
	return nil
}

// IsPublic reports whether r is for a route that needs no credentials.
func IsPublic(r *http.Request) bool {
	return r.URL.Path == HealthPath && (r.Method == http.MethodGet || r.Method == http.MethodHead)
}

// Handler is the API, without the auth guard.
func (s *Server) Handler() http.Handler { return s.mux }

func (s *Server) health(w http.ResponseWriter, r *http.Request) error {
	return reply.JSON(w, http.StatusOK, map[string]any{"ok": true, "version": s.o.Version})
}

// apiError is an error with its status and code.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.message }

func notFound(format string, args ...any) error {
	return &apiError{http.StatusNotFound, "not_found", fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) error {
	return &apiError{http.StatusBadRequest, "bad_request", fmt.Sprintf(format, args...)}
}

// errorFor maps every error a handler returns to its status and code:
// the one table of them.
func errorFor(err error) *apiError {
	var ae *apiError
	var fe *files.Error
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &fe):
		return &apiError{fe.Status, fe.Code, fe.Message}
	case errors.Is(err, web.ErrNotFound):
		return &apiError{http.StatusNotFound, "not_found", err.Error()}
	case errors.Is(err, terminal.ErrNotWebSocket):
		return &apiError{http.StatusUpgradeRequired, "websocket_required", "the terminal is a WebSocket: ask to upgrade"}
	case errors.Is(err, browserview.ErrNotWebSocket):
		return &apiError{http.StatusUpgradeRequired, "websocket_required", "the screencast is a WebSocket: ask to upgrade"}
	case errors.As(err, &tooLarge):
		return &apiError{http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("the request body is over the limit of %d bytes", tooLarge.Limit)}
	case errors.Is(err, store.ErrNotFound):
		return &apiError{http.StatusNotFound, "not_found", err.Error()}
	case errors.Is(err, webpush.ErrBadSubscription):
		return &apiError{http.StatusBadRequest, "bad_request", err.Error()}
	case errors.Is(err, config.ErrNoKey):
		return &apiError{http.StatusNotFound, "not_found", err.Error()}
	case errors.Is(err, config.ErrNotEditable):
		return &apiError{http.StatusConflict, "not_editable", err.Error()}
	case errors.Is(err, session.ErrBadOptions), errors.Is(err, schedule.ErrBadParams), errors.Is(err, config.ErrInvalid),
		errors.Is(err, config.ErrBadKey), errors.Is(err, config.ErrBadValue):
		return &apiError{http.StatusBadRequest, "bad_request", err.Error()}
	case errors.Is(err, session.ErrBadDraft):
		return &apiError{http.StatusUnprocessableEntity, "bad_draft", err.Error()}
	case errors.Is(err, session.ErrModel):
		return &apiError{http.StatusBadGateway, "model_failed", err.Error()}
	case errors.Is(err, skill.ErrFlagged):
		return &apiError{http.StatusConflict, "flagged", err.Error()}
	case errors.Is(err, skill.ErrExists):
		return &apiError{http.StatusConflict, "exists", err.Error()}
	case errors.Is(err, store.ErrAnswered):
		return &apiError{http.StatusConflict, "already_answered", err.Error()}
	case errors.Is(err, store.ErrExpired):
		return &apiError{http.StatusGone, "expired", err.Error()}
	case errors.Is(err, store.ErrSessionBusy):
		return &apiError{http.StatusConflict, "busy", err.Error()}
	case errors.Is(err, schedule.ErrNotRunning):
		return &apiError{http.StatusConflict, "not_running", err.Error()}
	case errors.Is(err, session.ErrNoCheckpoint), errors.Is(err, checkpoint.ErrNotFound):
		return &apiError{http.StatusNotFound, "not_found", err.Error()}
	case errors.Is(err, computer.ErrInUse):
		return &apiError{http.StatusConflict, "in_use", err.Error()}
	case errors.Is(err, checkpoint.ErrTooLarge):
		return &apiError{http.StatusConflict, "too_large", err.Error()}
	case errors.Is(err, checkpoint.ErrDamaged), errors.Is(err, checkpoint.ErrTree):
		return &apiError{http.StatusConflict, "damaged", err.Error()}
	case errors.Is(err, auth.ErrTokenFromEnv):
		return &apiError{http.StatusConflict, "token_from_env", "den's token comes from DEN_TOKEN in its environment: change it there and restart den serve"}
	case errors.Is(err, session.ErrSubagentLimit):
		return &apiError{http.StatusTooManyRequests, "limit_reached", err.Error()}
	case errors.Is(err, session.ErrClosed):
		return &apiError{http.StatusServiceUnavailable, "shutting_down", "den is shutting down"}
	}
	return &apiError{http.StatusInternalServerError, "internal", "den failed to do this; its log says why"}
}

// fail answers r with err as JSON, logging what is den's own fault.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	ae := errorFor(err)
	if ae.status >= 500 {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	reply.JSON(w, ae.status, map[string]any{"error": map[string]string{"code": ae.code, "message": ae.message}})
}

// decode reads r's JSON body into v: one object, no unknown fields (a
// misspelt field would otherwise be silently ignored), nothing after it.
func decode(r *http.Request, v any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return &apiError{http.StatusUnsupportedMediaType, "unsupported_media_type", "send JSON (Content-Type: application/json)"}
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return err
		}
		if errors.Is(err, io.EOF) {
			return badRequest("the request has no JSON body")
		}
		return badRequest("the request body is not the JSON expected: %v", err)
	}
	if dec.More() {
		return badRequest("the request body has more than one JSON value")
	}
	return nil
}
