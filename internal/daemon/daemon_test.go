package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
)

const testToken = "test-token-0123456789abcdef-0123456789"

// testDaemon is a daemon on loopback whose log is kept, with no
// computers (the routes under test start none).
type testDaemon struct {
	*Daemon
	url string
	log *bytes.Buffer // read only after Stop
}

func startDaemon(t *testing.T) *testDaemon {
	t.Helper()
	return startDaemonEnv(t, func(k string) string {
		if k == "DEN_TOKEN" {
			return testToken
		}
		return ""
	})
}

// startDaemonEnv is startDaemon with env as its environment (with no
// DEN_TOKEN, the token is in the data dir's token file).
func startDaemonEnv(t *testing.T, env func(string) string) *testDaemon {
	t.Helper()
	return startDaemonConfig(t, &config.Config{}, env)
}

// startDaemonConfig is startDaemonEnv with cfg as den's config.
func startDaemonConfig(t *testing.T, cfg *config.Config, env func(string) string) *testDaemon {
	t.Helper()
	var log bytes.Buffer
	d, err := New(Options{
		DataDir: t.TempDir(), ConfigPath: t.TempDir() + "/config.toml", Config: cfg,
		Computer: func(context.Context, string) (*computer.Computer, computer.SessionOptions, error) {
			return nil, computer.SessionOptions{}, errors.New("no computers in this test")
		},
		Listen: "127.0.0.1:0", Log: slog.New(slog.NewTextHandler(&syncWriter{w: &log}, nil)),
		Env: env,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return &testDaemon{Daemon: d, url: d.BaseURL(), log: &log}
}

// syncWriter lets the daemon's goroutines log into one buffer.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func (d *testDaemon) do(t *testing.T, method, path string, body string, set func(*http.Request)) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, d.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if set != nil {
		set(req)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, string(b)
}

func bearer(tok string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

// concrete is a route's pattern with its wildcards filled in.
func concrete(pattern string) string {
	var b strings.Builder
	for _, seg := range strings.Split(pattern, "/") {
		if b.Len() > 0 || seg != "" {
			b.WriteString("/")
		}
		if strings.HasPrefix(seg, "{") {
			seg = "x1"
		}
		b.WriteString(seg)
	}
	return b.String()
}

// TestEveryRouteNeedsTheToken walks the route table: without the token
// every route but health answers 401 (so no route can be forgotten), as
// do routes that do not exist; with a wrong one too.
func TestEveryRouteNeedsTheToken(t *testing.T) {
	d := startDaemon(t)
	routes := d.Routes()
	if len(routes) < 10 {
		t.Fatalf("only %d routes", len(routes))
	}
	for _, rt := range routes {
		path := concrete(rt.Pattern)
		resp, body := d.do(t, rt.Method, path, "", nil)
		switch {
		case rt.Public:
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s %s (public): %d %s", rt.Method, path, resp.StatusCode, body)
			}
		case resp.StatusCode != http.StatusUnauthorized:
			t.Errorf("%s %s without the token: %d %s, want 401", rt.Method, path, resp.StatusCode, body)
		}
	}
	// A wrong token is no better (a few routes: wrong tokens are
	// rate-limited after ten).
	for _, rt := range routes[1:6] {
		path := concrete(rt.Pattern)
		if resp, body := d.do(t, rt.Method, path, "", bearer("wrong-token-but-long-enough")); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s with a wrong token: %d %s, want 401", rt.Method, path, resp.StatusCode, body)
		}
	}
	// The settings page's routes, the skill drafts' and the MCP server's
	// are in the table, so the walk above covered them.
	have := map[string]bool{}
	for _, rt := range routes {
		have[rt.Method+" "+rt.Pattern] = true
	}
	for _, r := range []string{"GET /api/v1/agents", "GET /api/v1/models", "GET /api/v1/usage", "PATCH /api/v1/config",
		"GET /api/v1/rules", "DELETE /api/v1/rules", "POST /api/v1/token/rotate",
		"POST /api/v1/sessions/{id}/distill", "POST /api/v1/skills/drafts/{agent}/{name}/install", "DELETE /api/v1/skills/drafts/{agent}/{name}",
		"POST /mcp", "GET /mcp", "DELETE /mcp"} {
		if !have[r] {
			t.Errorf("no route %s", r)
		}
	}
	publics := 0
	for _, rt := range routes {
		if rt.Public {
			publics++
			if rt.Pattern != "/api/v1/health" {
				t.Errorf("public route %s", rt.Pattern)
			}
		}
	}
	if publics != 1 {
		t.Errorf("%d public routes, want only health", publics)
	}
	for _, p := range []string{"/api/v1/nosuch", "/", "/api/v1/sessions/x/nosuch"} {
		if resp, _ := d.do(t, "GET", p, "", nil); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET %s without the token: %d, want 401", p, resp.StatusCode)
		}
	}
	// With the token, an unknown route is a JSON 404, an unknown session
	// too.
	resp, body := d.do(t, "GET", "/api/v1/nosuch", "", bearer(testToken))
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, `"code":"not_found"`) {
		t.Errorf("unknown route: %d %s", resp.StatusCode, body)
	}
	resp, body = d.do(t, "GET", "/api/v1/sessions/nosuch", "", bearer(testToken))
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, `"code":"not_found"`) {
		t.Errorf("unknown session: %d %s", resp.StatusCode, body)
	}
}

// TestEdge: a cookie session must carry a matching Origin to change
// anything, a foreign Host is refused, a spoofed X-Forwarded-For does not
// reset the rate limit, bad bodies are clear errors, and the token shows
// in no response and no log line.
func TestEdge(t *testing.T) {
	d := startDaemon(t)
	var seen strings.Builder
	keep := func(resp *http.Response, body string) {
		seen.WriteString(body)
		for k, v := range resp.Header {
			seen.WriteString(k + ": " + strings.Join(v, ",") + "\n")
		}
	}

	// Log in with ?token=: a cookie, and a redirect without the token.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(d.url + "/?token=" + testToken)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || strings.Contains(resp.Header.Get("Location"), testToken) {
		t.Fatalf("login: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	cookies := resp.Cookies()
	if len(cookies) != 1 || !cookies[0].HttpOnly || cookies[0].SameSite != http.SameSiteStrictMode {
		t.Fatalf("login cookie %+v", cookies)
	}
	withCookie := func(origin string) func(*http.Request) {
		return func(r *http.Request) {
			r.AddCookie(cookies[0])
			if origin != "" {
				r.Header.Set("Origin", origin)
			}
		}
	}
	resp, body := d.do(t, "GET", "/api/v1/sessions", "", withCookie(""))
	keep(resp, body)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET with the cookie: %d %s", resp.StatusCode, body)
	}
	resp, body = d.do(t, "POST", "/api/v1/sessions", `{"agent":"default"}`, withCookie(""))
	keep(resp, body)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST with the cookie, no Origin: %d %s", resp.StatusCode, body)
	}
	resp, body = d.do(t, "POST", "/api/v1/sessions", `{"agent":"default"}`, withCookie("https://evil.example"))
	keep(resp, body)
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("POST with the cookie, a foreign Origin: %d %s", resp.StatusCode, body)
	}
	resp, body = d.do(t, "POST", "/api/v1/sessions", `{"agnt":"default"}`, withCookie(d.url))
	keep(resp, body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "unknown field") {
		t.Errorf("POST with the cookie and its Origin, a misspelt field: %d %s", resp.StatusCode, body)
	}

	// A foreign Host (DNS rebinding) is refused, with the token too.
	resp, body = d.do(t, "GET", "/api/v1/sessions", "", func(r *http.Request) {
		r.Host = "evil.example:7700"
		bearer(testToken)(r)
	})
	keep(resp, body)
	if resp.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("foreign Host: %d %s", resp.StatusCode, body)
	}

	// Bad bodies.
	for _, tc := range []struct {
		body string
		want int
	}{
		{`{"agent":`, http.StatusBadRequest},
		{`{"agent":"default"} {"agent":"x"}`, http.StatusBadRequest},
		{`{"agent":"../../etc"}`, http.StatusBadRequest},
		{`{"agent":"` + strings.Repeat("a", 2<<20) + `"}`, http.StatusRequestEntityTooLarge},
	} {
		resp, body := d.do(t, "POST", "/api/v1/sessions", tc.body, bearer(testToken))
		keep(resp, body)
		if resp.StatusCode != tc.want || !strings.Contains(body, `"error":{"code"`) {
			t.Errorf("body %.40q: %d %s, want %d", tc.body, resp.StatusCode, body, tc.want)
		}
	}

	// Guessing, with a new X-Forwarded-For each time: still limited.
	limited := false
	for i := range 15 {
		resp, body := d.do(t, "GET", "/api/v1/sessions", "", func(r *http.Request) {
			r.Header.Set("X-Forwarded-For", "10.0.0."+string(rune('1'+i%9)))
			bearer("guess-guess-guess-guess-" + string(rune('a'+i)))(r)
		})
		keep(resp, body)
		if resp.StatusCode == http.StatusTooManyRequests {
			limited = true
		}
	}
	if !limited {
		t.Error("15 wrong tokens with spoofed X-Forwarded-For were never rate-limited")
	}
	if strings.Contains(seen.String(), testToken) {
		t.Error("a response carried the token")
	}
	d.Stop()
	if strings.Contains(d.log.String(), testToken) {
		t.Error("the log holds the token")
	}
	if !strings.Contains(d.log.String(), "path=/api/v1/sessions") {
		t.Errorf("requests not logged: %s", d.log.String())
	}
}

// TestRotateToken: POST /api/v1/token/rotate from a browser signs out
// every other browser and script, keeps that browser signed in with a
// new cookie and gives it the new token once; a token from DEN_TOKEN is
// not den's to rotate.
func TestRotateToken(t *testing.T) {
	d := startDaemonEnv(t, func(string) string { return "" })
	oldURL, err := d.LoginURL(d.url)
	if err != nil {
		t.Fatal(err)
	}
	oldToken := oldURL[strings.Index(oldURL, "?token=")+len("?token="):]
	login := func() *http.Cookie {
		t.Helper()
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Get(d.url + "/?token=" + oldToken)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if len(resp.Cookies()) != 1 {
			t.Fatalf("login: %d %v", resp.StatusCode, resp.Cookies())
		}
		return resp.Cookies()[0]
	}
	withCookie := func(c *http.Cookie) func(*http.Request) {
		return func(r *http.Request) {
			r.AddCookie(c)
			r.Header.Set("Origin", d.url)
		}
	}
	phone, laptop := login(), login()
	resp, body := d.do(t, "POST", "/api/v1/token/rotate", "", withCookie(laptop))
	var got struct {
		Token string `json:"token"`
	}
	if err := json.Unmarshal([]byte(body), &got); resp.StatusCode != http.StatusOK || err != nil || got.Token == "" || got.Token == oldToken {
		t.Fatalf("rotate: %d %s", resp.StatusCode, body)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("the answer with the token may be cached: Cache-Control %q", resp.Header.Get("Cache-Control"))
	}
	if len(resp.Cookies()) != 1 || resp.Cookies()[0].MaxAge <= 0 {
		t.Fatalf("rotate set the cookies %v", resp.Cookies())
	}
	fresh := resp.Cookies()[0]
	if newURL, err := d.LoginURL(d.url); err != nil || !strings.HasSuffix(newURL, "?token="+got.Token) {
		t.Errorf("the login URL after rotation does not hold the new token (%v)", err)
	}
	for _, c := range []struct {
		what string
		set  func(*http.Request)
		want int
	}{
		{"the old token", bearer(oldToken), http.StatusUnauthorized},
		{"another browser's cookie", withCookie(phone), http.StatusUnauthorized},
		{"the rotating browser's old cookie", withCookie(laptop), http.StatusUnauthorized},
		{"the new token", bearer(got.Token), http.StatusOK},
		{"the new cookie", withCookie(fresh), http.StatusOK},
	} {
		if resp, body := d.do(t, "GET", "/api/v1/sessions", "", c.set); resp.StatusCode != c.want {
			t.Errorf("%s after the rotation: %d %s, want %d", c.what, resp.StatusCode, body, c.want)
		}
	}
	// A rotation by cookie needs den's own Origin, as every change does.
	if resp, body := d.do(t, "POST", "/api/v1/token/rotate", "", func(r *http.Request) { r.AddCookie(fresh) }); resp.StatusCode != http.StatusForbidden {
		t.Errorf("rotate by cookie without Origin: %d %s", resp.StatusCode, body)
	}

	env := startDaemon(t)
	resp, body = env.do(t, "POST", "/api/v1/token/rotate", "", bearer(testToken))
	if resp.StatusCode != http.StatusConflict || !strings.Contains(body, `"code":"token_from_env"`) || !strings.Contains(body, "DEN_TOKEN") {
		t.Errorf("rotate with DEN_TOKEN: %d %s", resp.StatusCode, body)
	}
	if resp, _ := env.do(t, "GET", "/api/v1/sessions", "", bearer(testToken)); resp.StatusCode != http.StatusOK {
		t.Errorf("DEN_TOKEN after a refused rotation: %d", resp.StatusCode)
	}
}
