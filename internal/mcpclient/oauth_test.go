package mcpclient

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"den.dev/den/internal/permission"
)

// authServer is an OAuth 2.1 authorization server as MCP servers use
// them: metadata, dynamic client registration, authorization with PKCE
// (S256, verified at the token endpoint), tokens, and refresh tokens
// that rotate.
type authServer struct {
	*httptest.Server
	t        *testing.T
	mu       sync.Mutex
	clients  map[string][]string // client_id → redirect URIs
	codes    map[string]codeGrant
	access   map[string]bool
	refresh  map[string]bool
	n        int
	expires  int // expires_in of the tokens it issues
	log      []string
	resource string // what the authorization must be for
}

type codeGrant struct{ client, redirect, challenge, resource string }

func newAuthServer(t *testing.T) *authServer {
	a := &authServer{t: t, clients: map[string][]string{"pre-1": nil}, codes: map[string]codeGrant{}, access: map[string]bool{}, refresh: map[string]bool{}, expires: 3600}
	a.Server = httptest.NewServer(http.HandlerFunc(a.serve))
	t.Cleanup(a.Close)
	return a
}

func (a *authServer) note(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.log = append(a.log, s)
}

func (a *authServer) notes() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.log, "\n")
}

func (a *authServer) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fail := func(code int, e string) {
		a.log = append(a.log, "refused: "+e)
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error": %q}`, e)
	}
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		json.NewEncoder(w).Encode(map[string]any{
			"issuer": a.URL, "authorization_endpoint": a.URL + "/authorize", "token_endpoint": a.URL + "/token",
			"registration_endpoint": a.URL + "/register", "response_types_supported": []string{"code"},
			"grant_types_supported": []string{"authorization_code", "refresh_token"}, "code_challenge_methods_supported": []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"none"},
		})
	case "/register":
		var m struct {
			RedirectURIs []string `json:"redirect_uris"`
			GrantTypes   []string `json:"grant_types"`
		}
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil || len(m.RedirectURIs) != 1 || !strings.HasPrefix(m.RedirectURIs[0], "http://127.0.0.1:") {
			fail(400, "invalid_redirect_uri")
			return
		}
		a.n++
		id := fmt.Sprintf("dyn-%d", a.n)
		a.clients[id] = m.RedirectURIs
		a.log = append(a.log, "registered "+id+" "+strings.Join(m.GrantTypes, ","))
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"client_id": id, "redirect_uris": m.RedirectURIs, "token_endpoint_auth_method": "none"})
	case "/authorize":
		q := r.URL.Query()
		redirects, ok := a.clients[q.Get("client_id")]
		switch {
		case !ok:
			fail(400, "unknown client")
			return
		case redirects != nil && redirects[0] != q.Get("redirect_uri"):
			fail(400, "wrong redirect_uri")
			return
		case q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "":
			fail(400, "PKCE required")
			return
		case q.Get("resource") != a.resource:
			fail(400, "wrong resource "+q.Get("resource"))
			return
		}
		a.n++
		code := fmt.Sprintf("code-%d", a.n)
		a.codes[code] = codeGrant{q.Get("client_id"), q.Get("redirect_uri"), q.Get("code_challenge"), q.Get("resource")}
		a.log = append(a.log, "authorized "+q.Get("client_id"))
		http.Redirect(w, r, q.Get("redirect_uri")+"?code="+code+"&state="+url.QueryEscape(q.Get("state")), http.StatusFound)
	case "/token":
		r.ParseForm()
		switch r.Form.Get("grant_type") {
		case "authorization_code":
			client := r.Form.Get("client_id")
			if id, _, ok := r.BasicAuth(); ok && client == "" {
				client = id // client_secret_basic, as clients try first
			}
			g, ok := a.codes[r.Form.Get("code")]
			delete(a.codes, r.Form.Get("code"))
			sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
			switch {
			case !ok:
				fail(400, "invalid_grant")
				return
			case base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge:
				fail(400, "invalid_grant: PKCE verification failed")
				return
			case client != g.client || r.Form.Get("redirect_uri") != g.redirect:
				fail(400, "invalid_grant: another client or redirect")
				return
			}
		case "refresh_token":
			if !a.refresh[r.Form.Get("refresh_token")] {
				fail(400, "invalid_grant: unknown refresh token")
				return
			}
			delete(a.refresh, r.Form.Get("refresh_token")) // they rotate
			a.log = append(a.log, "refreshed")
		default:
			fail(400, "unsupported_grant_type")
			return
		}
		a.n++
		at, rt := fmt.Sprintf("at-%d", a.n), fmt.Sprintf("rt-%d", a.n)
		a.access[at], a.refresh[rt] = true, true
		json.NewEncoder(w).Encode(map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": a.expires, "refresh_token": rt})
	default:
		http.NotFound(w, r)
	}
}

func (a *authServer) valid(token string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.access[token]
}

// protectedServer is an MCP server over streamable HTTP that wants a
// token from a: its 401 names its protected resource metadata.
func protectedServer(t *testing.T, a *authServer) string {
	s := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *mcp.CallToolRequest, in struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "you are authorized"}}}, nil, nil
		})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/oauth-protected-resource/mcp" {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"resource": srv.URL + "/mcp", "authorization_servers": []string{a.URL}})
			return
		}
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); !ok || !a.valid(tok) {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	a.resource = srv.URL + "/mcp"
	return srv.URL + "/mcp"
}

// browser follows the authorization page's redirects as a browser
// would, to den's loopback redirect URI.
func browser(t *testing.T, opened *[]string) func(string) error {
	return func(u string) error {
		*opened = append(*opened, u)
		go func() {
			resp, err := http.Get(u)
			if err != nil {
				t.Errorf("the browser: %v", err)
				return
			}
			resp.Body.Close()
		}()
		return nil
	}
}

// TestOAuth: a server that wants a token is unavailable until den mcp
// login; login finds the authorization server, registers den
// dynamically, has the person authorize it (PKCE verified by the
// server), receives the code on loopback and keeps the token private;
// calls then carry it, and an expired token is renewed with its
// refresh token and saved again.
func TestOAuth(t *testing.T) {
	a := newAuthServer(t)
	u := protectedServer(t, a)
	data := t.TempDir()
	srv := &Server{Name: "prot", Type: HTTP, URL: u, Enabled: true}
	set := NewSet(Options{Agent: "a", Session: "s1", Servers: []*Server{srv}, DataDir: data, Gate: newGate(t, permission.Policy{})})
	if _, err := set.Tools(context.Background(), "prot"); !errors.Is(err, ErrNeedsLogin) || !strings.Contains(err.Error(), "run den mcp login prot") {
		t.Errorf("without a token: %v", err)
	}
	set.Close()

	tokens := &Tokens{Dir: TokenDir(data)}
	var opened, said []string
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := Login(ctx, srv, tokens, LoginOptions{Open: browser(t, &opened), Say: func(s string) { said = append(said, s) }})
	if err != nil {
		t.Fatalf("login: %v\n%s", err, a.notes())
	}
	if len(opened) != 1 || !strings.Contains(opened[0], "code_challenge_method=S256") || !strings.Contains(opened[0], "redirect_uri=http%3A%2F%2F127.0.0.1%3A") {
		t.Errorf("opened %v", opened)
	}
	if !strings.Contains(strings.Join(said, "\n"), "A browser opened to authorize den") {
		t.Errorf("said %q", said)
	}
	if n := a.notes(); !strings.Contains(n, "registered dyn-1 authorization_code,refresh_token") || !strings.Contains(n, "authorized dyn-1") {
		t.Errorf("the authorization server saw:\n%s", n)
	}
	path := tokens.path("prot")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 || !tokens.Has(srv) {
		t.Fatalf("the token file: %v %v", fi, err)
	}

	set = NewSet(Options{Agent: "a", Session: "s1", Servers: []*Server{srv}, DataDir: data, Gate: newGate(t, permission.Policy{})})
	res, err := set.Call(context.Background(), "prot", "whoami", json.RawMessage(`{}`))
	if err != nil || res.IsError {
		t.Fatalf("call with the token: %+v %v\n%s", res, err, a.notes())
	}
	if l := set.Log("prot"); strings.Contains(l, "at-") || strings.Contains(l, "rt-") {
		t.Errorf("a token in the server's log:\n%s", l)
	}
	set.Close()

	// The token expires: the next connection renews it and saves the
	// new one (the old refresh token no longer works).
	var g grant
	b, _ := os.ReadFile(path)
	json.Unmarshal(b, &g)
	old := g.Token.AccessToken
	g.Token.Expiry = time.Now().Add(-time.Minute)
	tokens.save(&g)
	set = NewSet(Options{Agent: "a", Session: "s1", Servers: []*Server{srv}, DataDir: data, Gate: newGate(t, permission.Policy{})})
	defer set.Close()
	if res, err := set.Call(context.Background(), "prot", "whoami", json.RawMessage(`{}`)); err != nil || res.IsError {
		t.Fatalf("call with an expired token: %v\n%s", err, a.notes())
	}
	b, _ = os.ReadFile(path)
	json.Unmarshal(b, &g)
	if g.Token.AccessToken == old || !strings.Contains(a.notes(), "refreshed") || !g.Token.Valid() {
		t.Errorf("not renewed: %s → %s\n%s", old, g.Token.AccessToken, a.notes())
	}
}

// TestOAuthPreregistered: a server with a configured client_id is
// authorized as that client, without registration; a server that asks
// for no authorization is said so; a stdio server has none.
func TestOAuthPreregistered(t *testing.T) {
	a := newAuthServer(t)
	u := protectedServer(t, a)
	srv := &Server{Name: "pre", Type: HTTP, URL: u, Enabled: true, OAuth: &OAuth{ClientID: "pre-1"}}
	tokens := &Tokens{Dir: t.TempDir()}
	var opened []string
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := Login(ctx, srv, tokens, LoginOptions{Open: browser(t, &opened)}); err != nil {
		t.Fatalf("login: %v\n%s", err, a.notes())
	}
	if n := a.notes(); strings.Contains(n, "registered") || !strings.Contains(n, "authorized pre-1") {
		t.Errorf("the authorization server saw:\n%s", n)
	}
	open := listen(t, "http")
	if err := Login(ctx, &Server{Name: "open", Type: HTTP, URL: open, Enabled: true}, tokens, LoginOptions{}); err == nil || !strings.Contains(err.Error(), "does not ask for an authorization") {
		t.Errorf("a server without authorization: %v", err)
	}
	if err := Login(ctx, &Server{Name: "s", Type: Stdio, Command: "x"}, tokens, LoginOptions{}); !errors.Is(err, ErrConfig) {
		t.Errorf("a stdio server: %v", err)
	}
}
