package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/push"
	"den.dev/den/internal/session"
	"den.dev/den/internal/store"
	"den.dev/den/internal/webpush"
	"den.dev/den/internal/webpush/webpushtest"
)

// pushServer is the API with Web Push on (sending to svc's fake push
// service) or off (svc nil).
func pushServer(t *testing.T, svc *webpushtest.Service) (http.Handler, *webpush.Keys) {
	t.Helper()
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "den.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rt, err := session.New(session.Options{Store: st, DataDir: dir, Config: &config.Config{}, Holder: "test",
		Computer: func(context.Context, string) (*computer.Computer, computer.SessionOptions, error) {
			return nil, computer.SessionOptions{}, errors.New("no computers in this test")
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rt.Close)
	o := Options{Runtime: rt, Store: st, ConfigPath: filepath.Join(dir, "config.toml")}
	var keys *webpush.Keys
	if svc != nil {
		if keys, err = webpush.LoadKeys(filepath.Join(dir, "push")); err != nil {
			t.Fatal(err)
		}
		o.Push = push.New(push.Options{Store: st, Keys: keys, Client: svc.Client()})
		t.Cleanup(o.Push.Close)
	}
	return New(o).Handler(), keys
}

func call(t *testing.T, h http.Handler, method, path, body string, want int) map[string]any {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Origin", "https://den.example.ts.net")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	if w.Code != want {
		t.Fatalf("%s %s %s: %d %s, want %d", method, path, body, w.Code, w.Body, want)
	}
	var out map[string]any
	if w.Body.Len() > 0 {
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, w.Body)
		}
	}
	return out
}

func subscription(endpoint, p256dh, auth string) string {
	b, _ := json.Marshal(map[string]any{"endpoint": endpoint, "expirationTime": nil, "keys": map[string]string{"p256dh": p256dh, "auth": auth}})
	return string(b)
}

// TestPushRoutes: a browser subscribes with its PushSubscription (twice
// is fine), the key and count are served, the test notification reaches
// it, and it unsubscribes; bad subscriptions are 400 saying what is
// wrong.
func TestPushRoutes(t *testing.T) {
	svc := webpushtest.NewService(t)
	h, keys := pushServer(t, svc)
	info := call(t, h, "GET", "/api/v1/push", "", http.StatusOK)
	if info["public_key"] != keys.PublicKeyString() || info["subscriptions"] != float64(0) || len(info) != 2 {
		t.Errorf("GET /api/v1/push: %v", info)
	}
	b := svc.Subscribe(keys.PublicKey())
	p, a := b.Keys()
	for range 2 {
		if got := call(t, h, "POST", "/api/v1/push/subscriptions", subscription(b.Endpoint, p, a), http.StatusCreated); got["ok"] != true || len(got) != 1 {
			t.Errorf("subscribe: %v", got)
		}
	}
	if got := call(t, h, "GET", "/api/v1/push", "", http.StatusOK); got["subscriptions"] != float64(1) {
		t.Errorf("after subscribing twice: %v", got)
	}

	for _, c := range []struct{ body, want string }{
		{subscription("http://push.example/x", p, a), "https URL"},
		{subscription("https://push.example/"+strings.Repeat("x", 3000), p, a), "bytes long"},
		{subscription("https://push.example/x", "BAAA", a), "P-256"},
		{subscription("https://push.example/x", p, "AAAA"), "not 16"},
		{`{"endpoint":"https://push.example/x","keys":{"p256dh":"` + p + `","auth":"` + a + `"},"extra":1}`, "unknown field"},
		{`{"endpoint":"https://push.example/x"}`, "p256dh"},
	} {
		got := call(t, h, "POST", "/api/v1/push/subscriptions", c.body, http.StatusBadRequest)
		if msg, _ := got["error"].(map[string]any)["message"].(string); !strings.Contains(msg, c.want) {
			t.Errorf("%.60s: %q, want it to say %q", c.body, msg, c.want)
		}
	}

	test := call(t, h, "POST", "/api/v1/push/test", "", http.StatusOK)
	if test["sent"] != float64(1) || len(test["failed"].([]any)) != 0 {
		t.Errorf("test: %v", test)
	}
	r := b.Next(t, 30*time.Second)
	if r.Err != nil || !strings.Contains(string(r.Payload), `"body":"Notifications reach this device."`) {
		t.Errorf("the test notification: %v %s", r.Err, r.Payload)
	}
	if r.Claims.Sub != "https://den.example.ts.net" {
		t.Errorf("subject %q: want the origin the browser subscribed from", r.Claims.Sub)
	}

	call(t, h, "DELETE", "/api/v1/push/subscriptions", `{"endpoint":"`+b.Endpoint+`"}`, http.StatusNoContent)
	call(t, h, "DELETE", "/api/v1/push/subscriptions", `{"endpoint":"`+b.Endpoint+`"}`, http.StatusNotFound)
	if got := call(t, h, "POST", "/api/v1/push/test", "", http.StatusOK); got["sent"] != float64(0) {
		t.Errorf("test with nobody subscribed: %v", got)
	}
}

// TestPushOff: with push = false every push route is 404 saying so.
func TestPushOff(t *testing.T) {
	h, _ := pushServer(t, nil)
	for _, r := range []struct{ method, path, body string }{
		{"GET", "/api/v1/push", ""},
		{"POST", "/api/v1/push/subscriptions", `{}`},
		{"DELETE", "/api/v1/push/subscriptions", `{}`},
		{"POST", "/api/v1/push/test", ""},
	} {
		got := call(t, h, r.method, r.path, r.body, http.StatusNotFound)
		if msg, _ := got["error"].(map[string]any)["message"].(string); !strings.Contains(msg, "push = false") {
			t.Errorf("%s %s: %v", r.method, r.path, got)
		}
	}
}
