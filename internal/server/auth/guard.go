package auth

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Defaults of Options and the rate limit's parameters.
const (
	defaultMaxBody = 1 << 20
	maxFailures    = 10          // failed attempts allowed per client...
	failWindow     = time.Minute // ...in this sliding window
	maxClients     = 4096        // clients the rate limit tracks at once
)

// Options configure a Guard. Only DataDir (or DEN_TOKEN) is required.
type Options struct {
	// DataDir holds the token file, DataDir/token.
	DataDir string
	// Env reads DEN_TOKEN; os.Getenv if nil.
	Env func(string) string
	// TLS says the server itself serves https: session cookies are
	// Secure and the expected Origin scheme is https.
	TLS bool
	// AllowedHosts are host names the guard answers besides loopback
	// names, IP literals and the machine's hostname (config key
	// server.allowed_hosts). "*.example.ts.net" allows every name below
	// example.ts.net. Ports are ignored.
	AllowedHosts []string
	// TrustedProxies are the peers whose X-Forwarded-For and
	// X-Forwarded-Proto are believed.
	TrustedProxies []netip.Prefix
	// MaxBody limits every request body, in bytes (1 MiB if 0 or less);
	// LimitBody changes it for one request.
	MaxBody int64
	// Public reports the requests that need no credentials (den's health
	// route). They still pass the Host check and the body limit.
	Public func(*http.Request) bool
	// Now is the rate limit's clock; time.Now if nil.
	Now func() time.Time
	// Report, if set, is told why the token file became unusable each
	// time a re-read of a changed file fails; until the file is fixed
	// the guard answers credentials with 503. The error never contains a
	// token.
	Report func(error)
}

// Guard authenticates requests to den's daemon; see the package doc.
type Guard struct {
	src     *source
	hosts   hosts
	proxies []netip.Prefix
	tls     bool
	maxBody int64
	public  func(*http.Request) bool
	now     func() time.Time
	limit   *limiter
}

// New loads (or creates) the token as LoadToken does and returns a
// guard that uses it. A token from the file is watched: the guard
// stats the file on every authenticated request and re-reads it when it
// was replaced or changed, so a rotation by another process takes effect
// on the next request.
func New(o Options) (*Guard, error) {
	g := &Guard{tls: o.TLS, maxBody: o.MaxBody, public: o.Public, now: o.Now,
		limit: newLimiter(maxFailures, failWindow, maxClients)}
	if o.Env == nil {
		o.Env = os.Getenv
	}
	if g.maxBody <= 0 {
		g.maxBody = defaultMaxBody
	}
	if g.public == nil {
		g.public = func(*http.Request) bool { return false }
	}
	if g.now == nil {
		g.now = time.Now
	}
	for _, p := range o.TrustedProxies {
		g.proxies = append(g.proxies, p.Masked())
	}
	var err error
	if g.hosts, err = newHosts(o.AllowedHosts); err != nil {
		return nil, err
	}
	if o.Env(envToken) != "" {
		t, err := LoadToken(o.DataDir, o.Env)
		if err != nil {
			return nil, err
		}
		g.src = staticSource(t)
		return g, nil
	}
	if o.DataDir == "" {
		return nil, errors.New("auth: no data dir for the token file, and DEN_TOKEN is not set")
	}
	t, fi, err := loadFile(o.DataDir)
	if err != nil {
		return nil, err
	}
	g.src = fileSource(filepath.Join(o.DataDir, tokenFile), t, fi, o.Report)
	return g, nil
}

// LoginURL is base (such as "http://192.168.1.5:7700") followed by
// "/?token=" and the current token: the URL den serve prints for the
// user to open once on each device.
func (g *Guard) LoginURL(base string) (string, error) {
	sec, err := g.src.get()
	if err != nil {
		return "", err
	}
	return strings.TrimRight(base, "/") + "/?token=" + url.QueryEscape(sec.token), nil
}

// Rotate replaces the token with a new one, as den token --rotate does,
// and the guard uses it from the next request on: the old token and
// every session cookie made with it are refused (in this process at
// once, without waiting to notice the file's change). It sets on w a new
// session cookie for r's client, made with the new token, so that the
// browser that asked stays signed in, and returns the new token, for
// the caller to show once to whoever asked. A token from DEN_TOKEN is
// not den's to change: Rotate then fails with ErrTokenFromEnv and
// changes nothing.
func (g *Guard) Rotate(w http.ResponseWriter, r *http.Request) (string, error) {
	sec, err := g.src.rotate()
	if err != nil {
		return "", err
	}
	http.SetCookie(w, g.cookie(r, newSession(sec), cookieMaxAge))
	return sec.token, nil
}

// credential kinds, in the order the guard looks for them.
const (
	none = iota
	query
	bearer
	cookie
)

// credential finds what r authenticates with: a ?token= on a GET or
// HEAD (a login), else a Bearer header, else the session cookie.
func credential(r *http.Request) (kind int, value string) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		if q := r.URL.Query(); q.Has("token") {
			return query, q.Get("token")
		}
	}
	if t, ok := bearerToken(r); ok {
		return bearer, t
	}
	if c, err := r.Cookie(cookieName); err == nil {
		return cookie, c.Value
	}
	return none, ""
}

// Wrap returns next behind the guard. In order, a request is refused
// when: its Host is not allowed (421); it is not public and carries no
// credentials (401); its client is rate-limited (429); its credentials
// are wrong (401, counted as a failure; a bad cookie is also deleted);
// it is authenticated by cookie, changes state or opens a WebSocket and
// its Origin is not den's own (403). A right ?token= is answered with
// a session cookie and a 303. next sees the request without the bearer
// header and the session cookie, and with its body limited to MaxBody.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !g.hosts.allow(r.Host) {
			writeError(w, codeMisdirected, fmt.Sprintf("den does not answer for host %q; to allow it, add it to server.allowed_hosts in den's config", truncate(r.Host, 100)))
			return
		}
		if g.public(r) {
			next.ServeHTTP(w, g.inner(w, r))
			return
		}
		kind, value := credential(r)
		if kind == none {
			w.Header().Set("WWW-Authenticate", `Bearer realm="den"`)
			if wantsPage(r) {
				signIn(w)
				return
			}
			writeError(w, codeUnauthorized, "authentication required: send Authorization: Bearer <token>, or open the login URL that den serve prints")
			return
		}
		sec, err := g.src.get()
		if err != nil {
			writeError(w, codeUnavailable, "den cannot use its token file; the daemon's log says why")
			return
		}
		ok, wait := g.limit.try(g.limitKey(r), g.now(), func() bool {
			if kind == cookie {
				return validSession(sec, value)
			}
			return validBearer(sec, value)
		})
		switch {
		case wait > 0:
			w.Header().Set("Retry-After", strconv.FormatInt(int64((wait+time.Second-1)/time.Second), 10))
			writeError(w, codeRateLimited, "too many failed attempts from this address; wait for the time in Retry-After")
		case !ok:
			g.refuse(w, r, kind)
		case kind == cookie && needsOrigin(r) && !sameOrigin(r, g.scheme(r)):
			writeError(w, codeForbidden, "a request authenticated by cookie that changes state or opens a WebSocket must carry den's own Origin")
		case kind == query:
			g.login(w, r, sec)
		default:
			next.ServeHTTP(w, g.inner(w, r))
		}
	})
}

// inner is r as the wrapped handler sees it: a copy without the bearer
// header and the session cookie, so that a handler that logs or forwards
// headers (to a service in a sandbox, say) cannot pass them on, and with
// its body limited to MaxBody.
func (g *Guard) inner(w http.ResponseWriter, r *http.Request) *http.Request {
	r2 := r.WithContext(r.Context())
	_, bearer := bearerToken(r)
	_, err := r.Cookie(cookieName)
	session := err == nil
	if bearer || session {
		r2.Header = r.Header.Clone()
	}
	if bearer {
		r2.Header.Del("Authorization")
	}
	if session {
		r2.Header.Del("Cookie")
		var kept []string
		for _, c := range r.Cookies() {
			if v := c.Value; c.Name != cookieName {
				if c.Quoted {
					v = `"` + v + `"`
				}
				kept = append(kept, c.Name+"="+v)
			}
		}
		if len(kept) > 0 {
			r2.Header.Set("Cookie", strings.Join(kept, "; "))
		}
	}
	if r.Body != nil {
		r2.Body = &body{orig: r.Body, w: w, lim: http.MaxBytesReader(w, r.Body, g.maxBody)}
	}
	return r2
}

// refuse answers wrong credentials with 401, deleting a bad session
// cookie so that the browser stops sending it (each would count as a
// failure).
func (g *Guard) refuse(w http.ResponseWriter, r *http.Request, kind int) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="den"`)
	msg := "invalid token"
	if kind == cookie {
		http.SetCookie(w, g.cookie(r, "", -1))
		msg = "the session has ended (the token was rotated, or the cookie is not den's); open the login URL again"
	}
	writeError(w, codeUnauthorized, msg)
}

// truncate cuts s to at most n bytes, for echoing client input.
func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// wantsPage reports whether r is a browser opening the app's page.
func wantsPage(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.Path == "/" && strings.Contains(r.Header.Get("Accept"), "text/html")
}

// signIn answers a browser that has no cookie yet: a page that says how
// to get in, with a form that sends the token the way the login URL
// does. It is static: nothing of the request is in it.
func signIn(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusUnauthorized)
	io.WriteString(w, signInPage)
}

const signInPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark"><title>Sign in to den</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:28rem;margin:10vh auto;padding:0 1rem}
input,button{font:inherit;min-height:44px;width:100%;box-sizing:border-box;margin:.25rem 0;padding:0 .75rem}</style></head>
<body><h1>Sign in to den</h1>
<p>Open the login URL that <code>den serve</code> printed on its terminal, or paste the token (<code>den token</code> prints it).</p>
<form method="get" action="/"><label for="token">Token</label>
<input id="token" name="token" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button></form></body></html>
`
