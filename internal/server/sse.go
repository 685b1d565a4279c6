package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"den.dev/den/internal/event"
	"den.dev/den/internal/store"
)

// Heartbeat is how often an event stream with nothing to say sends a
// comment line, so that proxies and phones keep the connection.
const Heartbeat = 15 * time.Second

// sseClients counts the open event streams.
type sseClients struct{ n atomic.Int64 }

func (s *Server) sessionEvents(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if _, err := s.st.GetSession(r.Context(), id); err != nil {
		return err
	}
	return s.stream(w, r, id, nil, false)
}

// allEvents streams what a sidebar needs of every session: their
// status, messages, approvals, notifications and errors, not the text
// as it streams. With ?device=1 the client is also a device: host
// commands' requests (den-location) come on the same stream, so that a
// page needs no third connection (a browser opens at most six to a
// host over HTTP/1.1, for all its tabs); &client=ID names the page for
// POST /api/v1/device/presence.
func (s *Server) allEvents(w http.ResponseWriter, r *http.Request) error {
	if c := r.URL.Query().Get("client"); c != "" && !clientRE.MatchString(c) {
		return badRequest("client %q: want 8 to 64 letters, digits, '-' and '_'", c)
	}
	return s.stream(w, r, "", func(e store.Event) bool {
		switch e.Type {
		case "text", "thinking", "tool_call", "tool_result", "usage", "retry", "model", "compaction":
			return false
		}
		return true
	}, r.URL.Query().Get("device") == "1")
}

// stream answers r with the events of session ("" for every session)
// after Last-Event-ID (or ?after=), each once and in order, then live
// ones, until the client goes. Without either, a session's stream
// starts at its first event, and the stream of every session at the
// next one.
//
// A device stream also carries "device_request" events, without an id
// (they are not stored: a request lives as long as its command waits),
// and "device_done" ({"id"}) when a request ended.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, sessionID string, keep func(store.Event) bool, device bool) error {
	after, err := lastEventID(r)
	if err != nil {
		return err
	}
	if after < 0 {
		after = 0
		if sessionID == "" {
			if after, err = s.rt.LastEventID(r.Context()); err != nil {
				return err
			}
		}
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		return errors.New("server: the response writer cannot stream")
	}
	// An event stream lives as long as its client: no write deadline.
	rc := http.NewResponseController(w)
	rc.SetWriteDeadline(time.Time{})
	sub := s.rt.Subscribe(sessionID, after, keep)
	defer sub.Close()
	s.sse.n.Add(1)
	defer s.sse.n.Add(-1)

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, ": den event stream\n\n")
	flusher.Flush()
	var dev *deviceFeed
	if device {
		dev = s.feedDevice(r.Context(), r.URL.Query().Get("client"))
		defer dev.stop()
	}
	for {
		ctx, cancel := context.WithTimeout(r.Context(), Heartbeat)
		if dev != nil {
			if !dev.send(w, cancel) {
				cancel()
				return nil
			}
		}
		e, err := sub.Next(ctx)
		cancel()
		switch {
		case errors.Is(err, context.Canceled) && r.Context().Err() == nil:
			continue // a device request woke the stream
		case errors.Is(err, context.DeadlineExceeded) && r.Context().Err() == nil:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return nil
			}
			flusher.Flush()
			continue
		case err != nil:
			return nil // the client went, or den is stopping
		}
		data, err := event.Marshal(e)
		if err != nil {
			s.log.Error("event not sent", "id", e.ID, "err", err)
			continue
		}
		if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.ID, e.Type, data); err != nil {
			return nil
		}
		// Send what is ready together, then flush once.
		for {
			e, ok, err := sub.Poll(r.Context())
			if err != nil || !ok {
				break
			}
			if data, err := event.Marshal(e); err == nil {
				fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", e.ID, e.Type, data)
			}
		}
		flusher.Flush()
	}
}

// lastEventID is where a stream resumes: the Last-Event-ID header a
// reconnecting EventSource sends, else ?after=, else -1 (not said).
func lastEventID(r *http.Request) (int64, error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("after")
	}
	if v == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, badRequest("event id %q: want a number", v)
	}
	return n, nil
}
