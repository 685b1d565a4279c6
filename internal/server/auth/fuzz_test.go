package auth

import (
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// FuzzGuard sends requests with fuzzed Host, Origin, Cookie,
// Authorization and X-Forwarded-For headers, method, target and peer
// through a guard. It must never panic; a request may reach the app
// only if it is public or carries the token or a valid session cookie
// (and, for a cookie-authenticated state change, an Origin naming its
// Host), for an allowed Host; the app never sees the credentials; and no
// response contains the token unless the request echoed it in the Host
// or target.
func FuzzGuard(f *testing.F) {
	const tok = "fuzz-token-0123456789abcdef"
	var ticks atomic.Int64
	g, err := New(Options{
		DataDir:        f.TempDir(),
		Env:            env(tok),
		Public:         health,
		AllowedHosts:   []string{"*.example.ts.net"},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		// Seven seconds pass per request, so the limit blocks sometimes
		// but not for good.
		Now: func() time.Time { return time.Unix(ticks.Add(7), 0) },
	})
	if err != nil {
		f.Fatal(err)
	}
	sec, err := g.src.get()
	if err != nil {
		f.Fatal(err)
	}
	// A fixed nonce, so that every fuzzing process has the same cookie.
	const nonce = "ZnV6ei1ub25jZS0wMTIzNA"
	session := nonce + "." + base64.RawURLEncoding.EncodeToString(sessionMAC(sec, nonce))
	name, _ := os.Hostname()
	short, _, _ := strings.Cut(strings.ToLower(name), ".")

	type seed struct{ method, target, host, origin, cookie, auth, xff, remote string }
	for _, s := range []seed{
		{"GET", "/x", "localhost:7700", "", "", "Bearer " + tok, "", "127.0.0.1:1"},
		{"POST", "/x", "localhost:7700", "http://localhost:7700", cookieName + "=" + session, "", "", "192.168.1.9:5"},
		{"POST", "/x", "localhost:7700", "", cookieName + "=" + session, "", "", "192.168.1.9:5"},
		{"GET", "/?token=" + tok + "&a=b", "[::1]:7700", "", "", "", "", "[::1]:9"},
		{"GET", "/api/v1/health", "evil.example", "", "", "", "", "10.0.0.1:2"},
		{"GET", "/x", "a.example.ts.net", "", cookieName + "=forged.mac; theme=dark", "Basic eDp5", "203.0.113.1, 10.0.0.2", "10.0.0.1:2"},
		{"PUT", "//evil.example/?token=x", "192.168.1.5", "null", "", "Bearer " + tok + "x", "garbage", "bad"},
	} {
		f.Add(s.method, s.target, s.host, s.origin, s.cookie, s.auth, s.xff, s.remote)
	}

	f.Fuzz(func(t *testing.T, method, target, host, origin, cookie, auth, xff, remote string) {
		u, err := url.ParseRequestURI(target)
		if err != nil {
			return
		}
		req := &http.Request{Method: method, URL: u, Host: host, RemoteAddr: remote, Header: http.Header{}, Body: http.NoBody}
		for k, v := range map[string]string{"Origin": origin, "Cookie": cookie, "Authorization": auth, "X-Forwarded-For": xff} {
			if v != "" {
				req.Header.Set(k, v)
			}
		}
		reached := false
		app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			reached = true
			if _, ok := bearerToken(r); ok {
				t.Error("the app saw a bearer header")
			}
			if _, err := r.Cookie(cookieName); err == nil {
				t.Error("the app saw the session cookie")
			}
		})
		rec := httptest.NewRecorder()
		g.Wrap(app).ServeHTTP(rec, req)

		if reached {
			lower := strings.ToLower(host)
			literal := strings.Trim(strings.Split(lower, "%")[0], "0123456789abcdef.:[]") == ""
			if !literal && !strings.Contains(lower, "localhost") && !strings.Contains(lower, ".example.ts.net") &&
				(short == "" || !strings.Contains(lower, short)) {
				t.Errorf("served a request for host %q", host)
			}
			bearer := strings.Contains(auth, tok)
			if !health(req) && !bearer && !strings.Contains(cookie, session) {
				t.Errorf("served %s %s without credentials (Authorization %q, Cookie %q)", method, target, auth, cookie)
			}
			if !health(req) && !bearer && needsOrigin(req) && !strings.Contains(strings.ToLower(origin), normalHost(host)) {
				t.Errorf("served a cookie %s with Origin %q for host %q", method, origin, host)
			}
		}
		if !strings.Contains(host, tok) && !strings.Contains(target, tok) {
			if strings.Contains(rec.Body.String(), tok) {
				t.Errorf("the token is in the body: %s", rec.Body)
			}
			for k, vs := range rec.Header() {
				for _, v := range vs {
					if strings.Contains(v, tok) {
						t.Errorf("the token is in header %s: %s", k, v)
					}
				}
			}
		}
	})
}
