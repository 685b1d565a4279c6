package server

import (
	"encoding/json"
	"errors"
	"net/http"

	"den.dev/den/internal/server/reply"
	"den.dev/den/internal/store"
	"den.dev/den/internal/webpush"
)

// maxPushBody bounds the push routes' bodies: a subscription is a few
// hundred bytes.
const maxPushBody = 16 << 10

// pushOff is the answer of the push routes when Web Push is off.
func pushOff() error { return notFound("Web Push is off ([server] push = false)") }

// pushInfo answers GET /api/v1/push: the key browsers subscribe with
// and how many are subscribed.
func (s *Server) pushInfo(w http.ResponseWriter, r *http.Request) error {
	if s.o.Push == nil {
		return pushOff()
	}
	n, err := s.o.Push.Count(r.Context())
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, map[string]any{"public_key": s.o.Push.PublicKey(), "subscriptions": n})
}

// subscribePush answers POST /api/v1/push/subscriptions with a
// browser's PushSubscription.toJSON().
func (s *Server) subscribePush(w http.ResponseWriter, r *http.Request) error {
	if s.o.Push == nil {
		return pushOff()
	}
	var req struct {
		Endpoint       string          `json:"endpoint"`
		ExpirationTime json.RawMessage `json:"expirationTime"` // null or a time; den learns of expiry from the push service
		Keys           struct {
			P256dh string `json:"p256dh"`
			Auth   string `json:"auth"`
		} `json:"keys"`
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxPushBody)
	if err := decode(r, &req); err != nil {
		return err
	}
	sub, err := webpush.ParseSubscription(req.Endpoint, req.Keys.P256dh, req.Keys.Auth)
	if err != nil {
		return err
	}
	if err := s.o.Push.Subscribe(r.Context(), sub, r.UserAgent(), r.Header.Get("Origin")); err != nil {
		return err
	}
	return reply.JSON(w, http.StatusCreated, map[string]any{"ok": true})
}

// unsubscribePush answers DELETE /api/v1/push/subscriptions.
func (s *Server) unsubscribePush(w http.ResponseWriter, r *http.Request) error {
	if s.o.Push == nil {
		return pushOff()
	}
	var req struct {
		Endpoint string `json:"endpoint"`
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxPushBody)
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Endpoint == "" {
		return badRequest("endpoint: the subscription's endpoint is required")
	}
	if err := s.o.Push.Unsubscribe(r.Context(), req.Endpoint); errors.Is(err, store.ErrNotFound) {
		return notFound("no browser is subscribed with this endpoint")
	} else if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// testPush answers POST /api/v1/push/test: a test notification to every
// subscription, and how it went.
func (s *Server) testPush(w http.ResponseWriter, r *http.Request) error {
	if s.o.Push == nil {
		return pushOff()
	}
	sent, failed, err := s.o.Push.Test(r.Context())
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, map[string]any{"sent": sent, "failed": failed})
}
