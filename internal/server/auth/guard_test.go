package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestBearer(t *testing.T) {
	h := newHarness(t, false, nil)
	for _, tc := range []struct {
		name string
		set  func(*http.Request)
		want int
	}{
		{"right", withBearer(h.token), http.StatusOK},
		{"lower-case scheme", withHeader("Authorization", "bearer "+h.token), http.StatusOK},
		{"wrong", withBearer(h.token[:42] + "x"), http.StatusUnauthorized},
		{"prefix", withBearer(h.token[:20]), http.StatusUnauthorized},
		{"empty", withBearer(""), http.StatusUnauthorized},
		{"none", func(*http.Request) {}, http.StatusUnauthorized},
		{"basic scheme", withHeader("Authorization", "Basic "+h.token), http.StatusUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.do(nil, "GET", "/api/v1/sessions", tc.set)
			if r.code != tc.want {
				t.Fatalf("status %d, want %d; body %s", r.code, tc.want, r.body)
			}
			if tc.want == http.StatusOK {
				return
			}
			if c := r.errCode(t); c != "unauthorized" {
				t.Errorf("code %q, want unauthorized", c)
			}
			if got := r.header.Get("WWW-Authenticate"); got != `Bearer realm="den"` {
				t.Errorf("WWW-Authenticate = %q", got)
			}
		})
	}
}

func TestPublicRoute(t *testing.T) {
	h := newHarness(t, false, nil)
	if r := h.do(nil, "GET", "/api/v1/health"); r.code != http.StatusOK {
		t.Errorf("health without credentials: %d %s", r.code, r.body)
	}
	if r := h.do(nil, "POST", "/api/v1/health"); r.code != http.StatusUnauthorized {
		t.Errorf("POST to the health path is not public, got %d", r.code)
	}
}

// TestHandlerSeesNoCredentials checks that the app behind the guard
// never sees the bearer header or the session cookie, only the other
// cookies.
func TestHandlerSeesNoCredentials(t *testing.T) {
	h := newHarness(t, false, nil)
	c := h.login(nil, h.token)
	other := func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "theme", Value: "dark"}) }
	h.do(nil, "GET", "/a", withBearer(h.token), other)
	h.do(nil, "GET", "/b", withCookie(c), other)
	if h.served() != 2 {
		t.Fatalf("app served %d requests, want 2", h.served())
	}
	for _, hd := range h.seen {
		if a := hd.Get("Authorization"); a != "" {
			t.Errorf("app saw Authorization %q", a)
		}
		if got := hd.Get("Cookie"); got != "theme=dark" {
			t.Errorf("app saw Cookie %q, want theme=dark", got)
		}
	}
}

func TestLogin(t *testing.T) {
	for _, tls := range []bool{false, true} {
		h := newHarness(t, tls, nil)
		for _, tc := range []struct{ target, location string }{
			{"/?token=" + h.token, "/"},
			{"/?a=1&token=" + h.token + "&b=x%20y&b=2", "/?a=1&b=x%20y&b=2"},
			{"/sessions/42?%74oken=" + h.token + "&view=full", "/sessions/42?view=full"},
			{"//evil.example/x?token=" + h.token, "/evil.example/x"},
		} {
			r := h.do(nil, "GET", tc.target)
			if r.code != http.StatusSeeOther {
				t.Fatalf("GET %s: status %d, want 303", tc.target, r.code)
			}
			if loc := r.header.Get("Location"); loc != tc.location {
				t.Errorf("GET %s: Location %q, want %q", tc.target, loc, tc.location)
			}
			cookies := (&http.Response{Header: r.header}).Cookies()
			if len(cookies) != 1 {
				t.Fatalf("GET %s: cookies %v, want one", tc.target, cookies)
			}
			ck := cookies[0]
			if ck.Name != cookieName || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode ||
				ck.Path != "/" || ck.MaxAge != 400*24*3600 || ck.Secure != tls {
				t.Errorf("tls=%v: cookie %s, want HttpOnly, SameSite=Strict, Path=/, Max-Age=400 days, Secure=%v", tls, r.header.Get("Set-Cookie"), tls)
			}
			if r := h.do(nil, "GET", "/api/v1/sessions", withCookie(ck.Value)); r.code != http.StatusOK {
				t.Errorf("the login's cookie does not authenticate: %d %s", r.code, r.body)
			}
		}
	}
}

func TestLoginWrongTokenCounts(t *testing.T) {
	h := newHarness(t, false, nil)
	for i := range maxFailures {
		r := h.do(nil, "GET", "/?token=not-the-token-at-all")
		if r.code != http.StatusUnauthorized || r.errCode(t) != "unauthorized" {
			t.Fatalf("wrong ?token= %d: %d %s", i, r.code, r.body)
		}
		if sc := r.header.Get("Set-Cookie"); sc != "" {
			t.Fatalf("wrong ?token= set a cookie: %s", sc)
		}
	}
	if r := h.do(nil, "GET", "/?token="+h.token); r.code != http.StatusTooManyRequests {
		t.Errorf("after %d wrong logins the right one got %d, want 429", maxFailures, r.code)
	}
}

func TestOrigin(t *testing.T) {
	h := newHarness(t, false, nil)
	c := h.login(nil, h.token)
	own := h.srv.URL // http://127.0.0.1:PORT
	upgrade := func(r *http.Request) {
		r.Header.Set("Connection", "Upgrade")
		r.Header.Set("Upgrade", "websocket")
	}
	for _, tc := range []struct {
		name   string
		method string
		set    []func(*http.Request)
		want   int
	}{
		{"cookie GET, no Origin", "GET", []func(*http.Request){withCookie(c)}, 200},
		{"cookie POST, no Origin", "POST", []func(*http.Request){withCookie(c)}, 403},
		{"cookie POST, foreign Origin", "POST", []func(*http.Request){withCookie(c), withHeader("Origin", "http://evil.example")}, 403},
		{"cookie POST, other port", "POST", []func(*http.Request){withCookie(c), withHeader("Origin", "http://127.0.0.1:1")}, 403},
		{"cookie POST, https Origin", "POST", []func(*http.Request){withCookie(c), withHeader("Origin", strings.Replace(own, "http:", "https:", 1))}, 403},
		{"cookie POST, null Origin", "POST", []func(*http.Request){withCookie(c), withHeader("Origin", "null")}, 403},
		{"cookie POST, Origin with path", "POST", []func(*http.Request){withCookie(c), withHeader("Origin", own+"/x")}, 403},
		{"cookie POST, two Origins", "POST", []func(*http.Request){withCookie(c), withHeader("Origin", own), withHeader("Origin", "http://evil.example")}, 403},
		{"cookie POST, own Origin", "POST", []func(*http.Request){withCookie(c), withHeader("Origin", own)}, 200},
		{"cookie DELETE, own Origin", "DELETE", []func(*http.Request){withCookie(c), withHeader("Origin", own)}, 200},
		{"cookie PUT, own Origin upper case", "PUT", []func(*http.Request){withCookie(c), withHeader("Origin", strings.ToUpper(own))}, 200},
		{"cookie POST, default port", "POST", []func(*http.Request){withCookie(c), withHost("localhost:80"), withHeader("Origin", "http://localhost")}, 200},
		{"cookie WebSocket, no Origin", "GET", []func(*http.Request){withCookie(c), upgrade}, 403},
		{"cookie WebSocket, foreign Origin", "GET", []func(*http.Request){withCookie(c), upgrade, withHeader("Origin", "http://evil.example")}, 403},
		{"cookie WebSocket, own Origin", "GET", []func(*http.Request){withCookie(c), upgrade, withHeader("Origin", own)}, 200},
		{"bearer POST, no Origin", "POST", []func(*http.Request){withBearer(h.token)}, 200},
		{"bearer POST, foreign Origin", "POST", []func(*http.Request){withBearer(h.token), withHeader("Origin", "http://evil.example")}, 200},
		{"bearer WebSocket, no Origin", "GET", []func(*http.Request){withBearer(h.token), upgrade}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.do(nil, tc.method, "/api/v1/sessions", tc.set...)
			if r.code != tc.want {
				t.Fatalf("status %d, want %d; body %s", r.code, tc.want, r.body)
			}
			if tc.want == http.StatusForbidden && r.errCode(t) != "forbidden" {
				t.Errorf("body %s, want code forbidden", r.body)
			}
		})
	}
}

// TestOriginTLS checks the expected scheme under TLS.
func TestOriginTLS(t *testing.T) {
	h := newHarness(t, true, nil)
	c := h.login(nil, h.token)
	post := func(origin string) int {
		return h.do(nil, "POST", "/x", withCookie(c), withHost("localhost:443"), withHeader("Origin", origin)).code
	}
	if got := post("https://localhost"); got != http.StatusOK {
		t.Errorf("own https Origin: %d", got)
	}
	if got := post("http://localhost:443"); got != http.StatusForbidden {
		t.Errorf("http Origin on a TLS server: %d, want 403", got)
	}
}

func TestRotateEndsSessions(t *testing.T) {
	h := newHarness(t, false, nil)
	c := h.login(nil, h.token)
	if r := h.do(nil, "GET", "/x", withCookie(c)); r.code != http.StatusOK {
		t.Fatalf("cookie before rotation: %d", r.code)
	}
	tok, err := Rotate(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	h.addToken(tok)
	r := h.do(nil, "GET", "/x", withCookie(c))
	if r.code != http.StatusUnauthorized || r.errCode(t) != "unauthorized" {
		t.Fatalf("cookie after rotation: %d %s, want 401", r.code, r.body)
	}
	var deleted bool
	for _, ck := range (&http.Response{Header: r.header}).Cookies() {
		deleted = deleted || ck.Name == cookieName && ck.MaxAge < 0
	}
	if !deleted {
		t.Errorf("the refused cookie is not deleted: %v", r.header["Set-Cookie"])
	}
	if r := h.do(nil, "GET", "/x", withBearer(h.token)); r.code != http.StatusUnauthorized {
		t.Errorf("old bearer after rotation: %d, want 401", r.code)
	}
	if r := h.do(nil, "GET", "/x", withBearer(tok)); r.code != http.StatusOK {
		t.Errorf("new bearer after rotation: %d %s", r.code, r.body)
	}
	if r := h.do(nil, "GET", "/x", withCookie(h.login(nil, tok))); r.code != http.StatusOK {
		t.Errorf("cookie from a login with the new token: %d", r.code)
	}
	if url, err := h.g.LoginURL("http://den.example:7700/"); err != nil || url != "http://den.example:7700/?token="+tok {
		t.Errorf("LoginURL after rotation: %v", err)
	}
}

// TestGuardRotate: a rotation asked through the guard ends the old
// token and every cookie made with it on the very next request, signs
// the asking browser in with a new cookie, and leaves the new token in
// the file.
func TestGuardRotate(t *testing.T) {
	h := newHarness(t, false, nil)
	other := h.login(nil, h.token)
	w := httptest.NewRecorder()
	tok, err := h.g.Rotate(w, httptest.NewRequest("POST", "/api/v1/token/rotate", nil))
	if err != nil {
		t.Fatal(err)
	}
	h.addToken(tok)
	if tok == h.token || checkToken(tok) != nil {
		t.Fatalf("new token %q", tok)
	}
	if got, err := LoadToken(h.dir, noEnv); err != nil || got != tok {
		t.Errorf("the file holds %q (%v), not the token Rotate returned", got, err)
	}
	var fresh *http.Cookie
	for _, c := range w.Result().Cookies() {
		if c.Name == cookieName {
			fresh = c
		}
	}
	if fresh == nil || !fresh.HttpOnly || fresh.SameSite != http.SameSiteStrictMode || fresh.MaxAge != cookieMaxAge {
		t.Fatalf("cookie of the rotating browser: %+v", fresh)
	}
	for _, c := range []struct {
		what string
		set  func(*http.Request)
		want int
	}{
		{"the old token", withBearer(h.token), http.StatusUnauthorized},
		{"another browser's cookie", withCookie(other), http.StatusUnauthorized},
		{"the new token", withBearer(tok), http.StatusOK},
		{"the new cookie", withCookie(fresh.Value), http.StatusOK},
	} {
		if r := h.do(nil, "GET", "/x", c.set); r.code != c.want {
			t.Errorf("%s after the rotation: %d %s, want %d", c.what, r.code, r.body, c.want)
		}
	}
}

// TestGuardRotateEnvToken: a token from DEN_TOKEN is not den's to
// rotate; nothing changes.
func TestGuardRotateEnvToken(t *testing.T) {
	const tok = "env-token-0123456789-abcdef"
	h := newHarness(t, false, func(o *Options) { o.Env = env(tok) })
	w := httptest.NewRecorder()
	if _, err := h.g.Rotate(w, httptest.NewRequest("POST", "/api/v1/token/rotate", nil)); !errors.Is(err, ErrTokenFromEnv) {
		t.Errorf("Rotate with DEN_TOKEN: %v, want ErrTokenFromEnv", err)
	}
	if len(w.Result().Cookies()) != 0 {
		t.Errorf("a refused rotation set a cookie: %v", w.Result().Cookies())
	}
	if _, err := os.Stat(filepath.Join(h.dir, tokenFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused rotation wrote a token file (stat: %v)", err)
	}
	if r := h.do(nil, "GET", "/x", withBearer(tok)); r.code != http.StatusOK {
		t.Errorf("DEN_TOKEN after a refused rotation: %d", r.code)
	}
}

// TestSessionSurvivesRestart checks that a cookie stays valid for a new
// guard on the same data dir: there is no session table to lose.
func TestSessionSurvivesRestart(t *testing.T) {
	h := newHarness(t, false, nil)
	c := h.login(nil, h.token)
	g, err := New(Options{DataDir: h.dir, Env: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	sec, err := g.src.get()
	if err != nil {
		t.Fatal(err)
	}
	if !validSession(sec, c) {
		t.Error("a new guard on the same token refuses the old guard's cookie")
	}
}

// TestExternalRotation changes the token file behind a running guard,
// as another process would: in place (a person with an editor) and by
// rename (den token --rotate).
func TestExternalRotation(t *testing.T) {
	h := newHarness(t, false, nil)
	path := filepath.Join(h.dir, tokenFile)
	if r := h.do(nil, "GET", "/x", withBearer(h.token)); r.code != http.StatusOK {
		t.Fatal(r.code)
	}
	edited := h.token + "-edited" // another length, so the change shows in the size
	h.addToken(edited)
	writeToken(t, path, edited, 0o600)
	if r := h.do(nil, "GET", "/x", withBearer(h.token)); r.code != http.StatusUnauthorized {
		t.Errorf("old token after an in-place edit: %d, want 401", r.code)
	}
	if r := h.do(nil, "GET", "/x", withBearer(edited)); r.code != http.StatusOK {
		t.Errorf("edited token: %d", r.code)
	}
	tmp := filepath.Join(h.dir, "other-process")
	renamed := newToken() // the same length as the file's, so only the inode tells
	h.addToken(renamed)
	writeToken(t, tmp, renamed, 0o600)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if r := h.do(nil, "GET", "/x", withBearer(renamed)); r.code != http.StatusOK {
		t.Errorf("token renamed into place: %d", r.code)
	}
}

// TestUnusableTokenFile checks that a token file made insecure behind a
// running guard stops all authentication (503) and is reported once,
// and that rotating fixes it.
func TestUnusableTokenFile(t *testing.T) {
	var mu sync.Mutex
	var reports []error
	h := newHarness(t, false, func(o *Options) {
		o.Report = func(err error) {
			mu.Lock()
			defer mu.Unlock()
			reports = append(reports, err)
		}
	})
	path := filepath.Join(h.dir, tokenFile)
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		r := h.do(nil, "GET", "/x", withBearer(h.token))
		if r.code != http.StatusServiceUnavailable || r.errCode(t) != "unavailable" {
			t.Fatalf("right token, group-readable file: %d %s, want 503", r.code, r.body)
		}
		if strings.Contains(r.body, h.dir) {
			t.Errorf("the 503 tells the client the data dir: %s", r.body)
		}
	}
	if r := h.do(nil, "GET", "/api/v1/health"); r.code != http.StatusOK {
		t.Errorf("health with an unusable token file: %d", r.code)
	}
	if _, err := h.g.LoginURL("http://x"); !errors.Is(err, ErrInsecureFile) {
		t.Errorf("LoginURL: %v, want ErrInsecureFile", err)
	}
	mu.Lock()
	if len(reports) != 1 || !errors.Is(reports[0], ErrInsecureFile) {
		t.Errorf("reports %v, want one ErrInsecureFile", reports)
	}
	mu.Unlock()
	tok, err := Rotate(h.dir)
	if err != nil {
		t.Fatal(err)
	}
	h.addToken(tok)
	if r := h.do(nil, "GET", "/x", withBearer(tok)); r.code != http.StatusOK {
		t.Errorf("after rotation: %d %s", r.code, r.body)
	}
}

func TestEnvTokenGuard(t *testing.T) {
	const tok = "script+token&with#odd=chars%20"
	h := newHarness(t, false, func(o *Options) { o.Env = env(tok) })
	if h.token != tok {
		t.Fatalf("harness token %q", h.token)
	}
	if r := h.do(nil, "GET", "/x", withBearer(tok)); r.code != http.StatusOK {
		t.Errorf("DEN_TOKEN bearer: %d", r.code)
	}
	if _, err := os.Stat(filepath.Join(h.dir, tokenFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a guard with DEN_TOKEN wrote a token file (stat: %v)", err)
	}
	url, err := h.g.LoginURL(h.srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	if r := h.do(nil, "GET", strings.TrimPrefix(url, h.srv.URL)); r.code != http.StatusSeeOther || r.header.Get("Location") != "/" {
		t.Errorf("opening LoginURL: %d, Location %q; want 303 to /", r.code, r.header.Get("Location"))
	}
}

// TestSignInPage: a browser that opens the app without a cookie gets a
// page that says how to sign in (still a 401, and nothing of the
// request in it); a script gets the JSON error.
func TestSignInPage(t *testing.T) {
	h := newHarness(t, false, nil)
	r := h.do(nil, "GET", "/?x=<script>", withHeader("Accept", "text/html,application/xhtml+xml"))
	if r.code != http.StatusUnauthorized || !strings.HasPrefix(r.header.Get("Content-Type"), "text/html") {
		t.Fatalf("browser: %d %s", r.code, r.header.Get("Content-Type"))
	}
	if !strings.Contains(r.body, `<form method="get" action="/">`) || !strings.Contains(r.body, `name="token"`) || strings.Contains(r.body, "<script") {
		t.Errorf("sign-in page:\n%s", r.body)
	}
	if csp := r.header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
		t.Errorf("policy %q", csp)
	}
	for _, path := range []string{"/api/v1/sessions", "/app/app.js"} {
		if r := h.do(nil, "GET", path, withHeader("Accept", "text/html")); !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %s", path, r.header.Get("Content-Type"))
		}
	}
}
