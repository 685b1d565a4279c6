package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"den.dev/den/internal/server/reply"
	"den.dev/den/internal/session"
)

// deviceStream connects a browser as a device (GET /api/v1/device):
// host commands' requests come as "request" events, until the browser
// goes. den-location and the like answer not_available while none is
// connected.
func (s *Server) deviceStream(w http.ResponseWriter, r *http.Request) error {
	flusher, ok := w.(http.Flusher)
	if !ok {
		return errors.New("server: the response writer cannot stream")
	}
	http.NewResponseController(w).SetWriteDeadline(time.Time{})
	requests, stop := s.rt.Devices().Connect()
	defer stop()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": den device stream\n\n")
	flusher.Flush()
	ping := time.NewTicker(Heartbeat)
	defer ping.Stop()
	for {
		select {
		case req := <-requests:
			data, err := json.Marshal(req)
			if err != nil {
				return nil
			}
			if _, err := fmt.Fprintf(w, "event: request\ndata: %s\n\n", data); err != nil {
				return nil
			}
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return nil
			}
		case <-r.Context().Done():
			return nil
		}
		flusher.Flush()
	}
}

// deviceAnswer takes a browser's answer to a request (POST
// /api/v1/device/{id}): {"data": ...} or {"error": "what went wrong"}.
func (s *Server) deviceAnswer(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Data  json.RawMessage `json:"data"`
		Error string          `json:"error"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if (len(req.Data) == 0) == (req.Error == "") {
		return badRequest(`send {"data": ...} or {"error": "..."}`)
	}
	if len(req.Error) > 500 {
		req.Error = req.Error[:500]
	}
	switch err := s.rt.Devices().Answer(r.PathValue("id"), req.Data, req.Error); {
	case errors.Is(err, session.ErrNoRequest):
		return &apiError{http.StatusConflict, "not_waiting", "no request with this id is waiting: it was answered, or its command gave up"}
	case err != nil:
		return err
	}
	return reply.JSON(w, http.StatusOK, map[string]bool{"ok": true})
}
