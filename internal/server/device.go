package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"sync"
	"time"

	"den.dev/den/internal/server/reply"
	"den.dev/den/internal/session"
)

// deviceFeed brings a device stream's requests to its loop, waking it
// when one comes.
type deviceFeed struct {
	mu     sync.Mutex
	wake   context.CancelFunc // the loop's current wait
	ready  chan session.DeviceRequest
	cancel func()
}

// feedDevice connects the stream's browser as a device until ctx ends;
// client is the page's id (for presence).
func (s *Server) feedDevice(ctx context.Context, client string) *deviceFeed {
	requests, stop := s.rt.Devices().Connect(client)
	f := &deviceFeed{ready: make(chan session.DeviceRequest, 8)}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	f.cancel = func() {
		cancel()
		wg.Wait()
		stop()
	}
	wg.Go(func() {
		for {
			select {
			case q := <-requests:
				select {
				case f.ready <- q:
				case <-ctx.Done():
					return
				}
				f.mu.Lock()
				if f.wake != nil {
					f.wake()
				}
				f.mu.Unlock()
			case <-ctx.Done():
				return
			}
		}
	})
	return f
}

// send writes the requests that are ready and makes wake the way to end
// the loop's next wait; false when the client is gone.
func (f *deviceFeed) send(w http.ResponseWriter, wake context.CancelFunc) bool {
	f.mu.Lock()
	f.wake = wake
	f.mu.Unlock()
	sent := false
	for {
		select {
		case q := <-f.ready:
			data, err := json.Marshal(q)
			if err != nil {
				continue
			}
			name := "device_request"
			if q.Done {
				name = "device_done"
			}
			if _, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data); err != nil {
				return false
			}
			sent = true
		default:
			if sent {
				if fl, ok := w.(http.Flusher); ok {
					fl.Flush()
				}
			}
			return true
		}
	}
}

func (f *deviceFeed) stop() { f.cancel() }

// deviceClaim makes the asking browser the one that acts on a request
// (POST /api/v1/device/{id}/claim): 200 for the first claim, 409
// "claimed" after it, 409 "not_waiting" when the request ended.
func (s *Server) deviceClaim(w http.ResponseWriter, r *http.Request) error {
	switch err := s.rt.Devices().Claim(r.PathValue("id")); {
	case errors.Is(err, session.ErrClaimed):
		return &apiError{http.StatusConflict, "claimed", "another browser took this request"}
	case errors.Is(err, session.ErrNoRequest):
		return &apiError{http.StatusConflict, "not_waiting", "no request with this id is waiting: it was answered, or its command gave up"}
	case err != nil:
		return err
	}
	return reply.JSON(w, http.StatusOK, map[string]bool{"ok": true})
}

// clientRE is what a page's id may be.
var clientRE = regexp.MustCompile(`^[A-Za-z0-9_-]{8,64}$`)

// devicePresence records whether the user is using den in the page
// (POST /api/v1/device/presence, {"client", "active"}): while someone
// is, Web Push stays quiet. 404 when no device stream has that id.
func (s *Server) devicePresence(w http.ResponseWriter, r *http.Request) error {
	var req struct {
		Client string `json:"client"`
		Active bool   `json:"active"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	if !clientRE.MatchString(req.Client) {
		return badRequest("client %q: want the id the page gave its device stream (8 to 64 letters, digits, '-' and '_')", req.Client)
	}
	if err := s.rt.Devices().Present(req.Client, req.Active, time.Now()); errors.Is(err, session.ErrNoClient) {
		return notFound("no device stream with this client id is open")
	} else if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
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
