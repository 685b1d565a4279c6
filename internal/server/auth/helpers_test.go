package auth

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// noEnv is an environment without DEN_TOKEN.
func noEnv(string) string { return "" }

// env is an environment with DEN_TOKEN set to token.
func env(token string) func(string) string {
	return func(k string) string {
		if k == envToken {
			return token
		}
		return ""
	}
}

// health is den's public route.
func health(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Path == "/api/v1/health"
}

// clock is a settable Options.Now.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// harness is a guard in front of a small app, served over loopback. The
// app answers "ok CLIENTIP" on every path, reads the body (the default
// limit) on /, raises the limit to 4096 on /upload, and records the
// headers it saw. Every response a harness client gets is checked for
// every token the test has seen.
type harness struct {
	t      *testing.T
	g      *Guard
	srv    *httptest.Server
	dir    string
	token  string
	clock  *clock
	client *http.Client // from 127.0.0.1

	mu     sync.Mutex
	tokens []string      // every token seen, none of which may leak
	seen   []http.Header // headers of the requests the app served
}

// newHarness starts a guard on a fresh data dir; opt may change its
// Options, tls serves https.
func newHarness(t *testing.T, tls bool, opt func(*Options)) *harness {
	t.Helper()
	h := &harness{t: t, dir: t.TempDir(), clock: &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}}
	o := Options{DataDir: h.dir, Env: noEnv, TLS: tls, Public: health, Now: h.clock.now,
		Report: func(err error) { t.Logf("report: %v", err) }}
	if opt != nil {
		opt(&o)
	}
	g, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	h.g = g
	h.token, err = LoadToken(h.dir, o.Env)
	if err != nil {
		t.Fatal(err)
	}
	h.addToken(h.token)

	app := http.NewServeMux()
	app.HandleFunc("/upload", func(w http.ResponseWriter, r *http.Request) {
		LimitBody(w, r, 4096)
		h.serve(w, r)
	})
	app.HandleFunc("/", h.serve)
	if tls {
		h.srv = httptest.NewTLSServer(g.Wrap(app))
	} else {
		h.srv = httptest.NewServer(g.Wrap(app))
	}
	t.Cleanup(h.srv.Close)
	h.client = h.clientFrom("")
	return h
}

func (h *harness) serve(w http.ResponseWriter, r *http.Request) {
	if _, err := io.ReadAll(r.Body); err != nil {
		if !BodyError(w, err) {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
		return
	}
	h.mu.Lock()
	h.seen = append(h.seen, r.Header.Clone())
	h.mu.Unlock()
	io.WriteString(w, "ok "+h.g.ClientIP(r).String())
}

// served is how many requests reached the app.
func (h *harness) served() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.seen)
}

func (h *harness) addToken(tok string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tokens = append(h.tokens, tok)
}

// clientFrom is a client whose connections come from the loopback
// address local ("" for the default), that follows no redirects and
// keeps no cookies.
func (h *harness) clientFrom(local string) *http.Client {
	tr := h.srv.Client().Transport.(*http.Transport).Clone()
	if local != "" {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		}
	}
	h.t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{
		Transport:     leakCheck{h: h, base: tr},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// leakCheck fails the test when a response has a token in a header or
// its body.
type leakCheck struct {
	h    *harness
	base http.RoundTripper
}

func (l leakCheck) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	l.h.mu.Lock()
	defer l.h.mu.Unlock()
	for _, tok := range l.h.tokens {
		if bytes.Contains(body, []byte(tok)) {
			l.h.t.Errorf("%s %s: the token is in the response body: %s", req.Method, req.URL, body)
		}
		for k, vs := range resp.Header {
			for _, v := range vs {
				if strings.Contains(v, tok) {
					l.h.t.Errorf("%s %s: the token is in response header %s: %s", req.Method, req.URL, k, v)
				}
			}
		}
	}
	return resp, nil
}

// result is a response read whole.
type result struct {
	code   int
	header http.Header
	body   string
}

// errorBody is the JSON of an error response.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// errCode is the error code of r's JSON body, checking that it is one.
func (r result) errCode(t *testing.T) string {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q, want application/json", ct)
	}
	var e errorBody
	if err := json.Unmarshal([]byte(r.body), &e); err != nil {
		t.Fatalf("error body %q: %v", r.body, err)
	}
	return e.Error.Code
}

// do sends a request through c (the default client if nil), after the
// edits in set.
func (h *harness) do(c *http.Client, method, target string, set ...func(*http.Request)) result {
	h.t.Helper()
	return h.send(c, method, target, nil, set...)
}

func (h *harness) send(c *http.Client, method, target string, body io.Reader, set ...func(*http.Request)) result {
	h.t.Helper()
	if c == nil {
		c = h.client
	}
	req, err := http.NewRequest(method, h.srv.URL+target, body)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, s := range set {
		s(req)
	}
	resp, err := c.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return result{code: resp.StatusCode, header: resp.Header, body: string(b)}
}

// login opens /?token=token and returns the session cookie's value.
func (h *harness) login(c *http.Client, token string) string {
	h.t.Helper()
	r := h.do(c, "GET", "/?token="+token)
	if r.code != http.StatusSeeOther {
		h.t.Fatalf("login: status %d, body %s", r.code, r.body)
	}
	for _, ck := range (&http.Response{Header: r.header}).Cookies() {
		if ck.Name == cookieName {
			return ck.Value
		}
	}
	h.t.Fatalf("login: no %s cookie in %v", cookieName, r.header)
	return ""
}

func withBearer(tok string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok) }
}

func withCookie(v string) func(*http.Request) {
	return func(r *http.Request) { r.AddCookie(&http.Cookie{Name: cookieName, Value: v}) }
}

func withHeader(k, v string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Add(k, v) }
}

func withHost(host string) func(*http.Request) {
	return func(r *http.Request) { r.Host = host }
}
