package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"den.dev/den/internal/privfile"
)

// Tokens keeps servers' OAuth tokens as secrets: one file a server in
// Dir (mode 0600, the folder 0700), read only when still private. A
// token is for the URL it was granted for: a server whose URL changed
// has none. Tokens never leave den: they are not in logs, events, the
// computer or anything the model sees.
type Tokens struct{ Dir string }

// grant is what a token file holds.
type grant struct {
	Server       string        `json:"server"`
	URL          string        `json:"url"`
	ClientID     string        `json:"client_id"`
	ClientSecret string        `json:"client_secret,omitempty"`
	AuthURL      string        `json:"auth_url"`
	TokenURL     string        `json:"token_url"`
	AuthStyle    int           `json:"auth_style,omitempty"`
	Scopes       []string      `json:"scopes,omitempty"`
	Token        *oauth2.Token `json:"token"`
}

func (t *Tokens) path(server string) string { return filepath.Join(t.Dir, server+".json") }

// load reads the server's grant; nil when there is none for its URL.
func (t *Tokens) load(s *Server) (*grant, error) {
	data, _, err := privfile.Read(t.path(s.Name), 1<<20)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mcp: the token of %s: %w", s.Name, err)
	}
	var g grant
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, fmt.Errorf("mcp: the token of %s is damaged (den mcp login %s makes a new one): %w", s.Name, s.Name, err)
	}
	if g.URL != s.URL || g.Token == nil {
		return nil, nil
	}
	return &g, nil
}

func (t *Tokens) save(g *grant) error {
	data, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		return err
	}
	if err := privfile.Replace(t.path(g.Server), data); err != nil {
		return fmt.Errorf("mcp: save the token of %s: %w", g.Server, err)
	}
	return nil
}

// Has reports whether den holds a token for the server.
func (t *Tokens) Has(s *Server) bool {
	g, err := t.load(s)
	return err == nil && g != nil
}

// Expiry is when the server's access token expires (zero: unknown, or
// no token); refreshed says a refresh token renews it.
func (t *Tokens) Expiry(s *Server) (expiry time.Time, refreshed bool) {
	g, err := t.load(s)
	if err != nil || g == nil {
		return time.Time{}, false
	}
	return g.Token.Expiry, g.Token.RefreshToken != ""
}

// Remove forgets the server's token.
func (t *Tokens) Remove(server string) error {
	err := os.Remove(t.path(server))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// source is the server's token, refreshed when it expires and saved
// again when it changes; nil when den holds none.
func (t *Tokens) source(s *Server, hc *http.Client) (oauth2.TokenSource, error) {
	g, err := t.load(s)
	if err != nil || g == nil {
		return nil, err
	}
	return &savedSource{t: t, srv: s, hc: hc, g: g}, nil
}

func (g *grant) config() *oauth2.Config {
	return &oauth2.Config{ClientID: g.ClientID, ClientSecret: g.ClientSecret, Scopes: g.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: g.AuthURL, TokenURL: g.TokenURL, AuthStyle: oauth2.AuthStyle(g.AuthStyle)}}
}

// savedSource hands out the grant's token, refreshing it when it has
// expired. A refresh that fails reads the file again first: another
// den process may have refreshed it meanwhile (servers that rotate
// refresh tokens take each one once).
type savedSource struct {
	t   *Tokens
	srv *Server
	hc  *http.Client
	mu  sync.Mutex
	g   *grant
}

func (s *savedSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.g.Token.Valid() {
		return s.g.Token, nil
	}
	tok, err := s.refresh()
	if err != nil {
		if g, lerr := s.t.load(s.srv); lerr == nil && g != nil && g.Token.AccessToken != s.g.Token.AccessToken {
			s.g = g
			if g.Token.Valid() {
				return g.Token, nil
			}
			tok, err = s.refresh()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: the token of %s expired and could not be renewed (run den mcp login %s): %v", ErrNeedsLogin, s.srv.Name, s.srv.Name, err)
	}
	s.g.Token = tok
	if err := s.t.save(s.g); err != nil {
		return nil, err
	}
	return tok, nil
}

func (s *savedSource) refresh() (*oauth2.Token, error) {
	if s.g.Token.RefreshToken == "" {
		return nil, errors.New("no refresh token")
	}
	hc := s.hc
	if hc == nil {
		hc = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), oauth2.HTTPClient, hc), 30*time.Second)
	defer cancel()
	return s.g.config().TokenSource(ctx, &oauth2.Token{RefreshToken: s.g.Token.RefreshToken}).Token()
}

// LoginOptions are how den mcp login talks to the person.
type LoginOptions struct {
	// Open opens the authorization page in a browser; nil, or an
	// error, leaves it to Say.
	Open func(url string) error
	// Say tells the person something (the page to open, what
	// happened).
	Say func(msg string)
	// HTTPClient reaches the server and its authorization server (nil:
	// http.DefaultClient).
	HTTPClient *http.Client
}

// Login gets a token for the server by OAuth 2.1's authorization code
// flow with PKCE, as the MCP authorization spec has it (the SDK's
// auth.AuthorizationCodeHandler): it finds the authorization server
// from the server's 401 answer and metadata, registers den as a
// client (the configured client_id when there is one, else dynamic
// client registration), has the person authorize den in a browser, and
// receives the code on a loopback redirect URI
// (http://127.0.0.1:PORT/callback, PORT the server's oauth.callbackPort
// or a free one). The token, with what renews it, is saved in tokens.
// A server that does not ask for authorization is told so.
func Login(ctx context.Context, s *Server, tokens *Tokens, o LoginOptions) error {
	if s.Type == Stdio {
		return fmt.Errorf("%w: %s is a stdio server: den starts it, and OAuth is for servers den reaches at a url", ErrConfig, s.Name)
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	headers, err := expandHeaders(s.Headers)
	if err != nil {
		return err
	}
	probe := &http.Client{Transport: &headerTransport{base: hc.Transport, headers: headers}, Timeout: 30 * time.Second}
	port := 0
	if s.OAuth != nil {
		port = s.OAuth.CallbackPort
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return fmt.Errorf("mcp login: listen for the redirect on 127.0.0.1:%d: %w", port, err)
	}
	defer ln.Close()
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", ln.Addr().(*net.TCPAddr).Port)
	results := make(chan *auth.AuthorizationResult, 1)
	failures := make(chan error, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if e := q.Get("error"); e != "" {
			fmt.Fprintf(w, "<p>den: the authorization failed: %s. You can close this page.</p>", html.EscapeString(e+" "+q.Get("error_description")))
			select {
			case failures <- fmt.Errorf("the authorization server answered %s: %s", e, q.Get("error_description")):
			default:
			}
			return
		}
		fmt.Fprint(w, "<p>den is authorized. You can close this page.</p>")
		select {
		case results <- &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}:
		default:
		}
	})}
	var served sync.WaitGroup
	served.Go(func() { srv.Serve(ln) })
	defer func() {
		srv.Close()
		served.Wait()
	}()
	var saved *grant
	cfg := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:         redirect,
		RequestRefreshToken: true,
		Client:              hc,
		AuthorizationCodeFetcher: func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			opened := o.Open != nil && o.Open(a.URL) == nil
			if o.Say != nil {
				if opened {
					o.Say("A browser opened to authorize den. If it did not, open:\n  " + a.URL)
				} else {
					o.Say("Open this page to authorize den:\n  " + a.URL)
				}
				o.Say("Waiting for the authorization server to send the browser back to " + redirect + " …")
			}
			select {
			case r := <-results:
				return r, nil
			case err := <-failures:
				return nil, err
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			saved = &grant{Server: s.Name, URL: s.URL, ClientID: c.ClientID, ClientSecret: c.ClientSecret, AuthURL: c.Endpoint.AuthURL,
				TokenURL: c.Endpoint.TokenURL, AuthStyle: int(c.Endpoint.AuthStyle), Scopes: c.Scopes, Token: tok}
			return oauth2.StaticTokenSource(tok), nil
		},
	}
	if s.OAuth != nil && s.OAuth.ClientID != "" {
		cfg.PreregisteredClient = &oauthex.ClientCredentials{ClientID: s.OAuth.ClientID}
		if s.OAuth.ClientSecret != "" {
			secret, err := expand(s.OAuth.ClientSecret)
			if err != nil {
				return err
			}
			cfg.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: secret}
		}
	} else {
		cfg.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			RedirectURIs: []string{redirect}, ClientName: "den", TokenEndpointAuthMethod: "none",
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
		}}
	}
	if s.OAuth != nil && len(s.OAuth.Scopes) > 0 {
		scopes := s.OAuth.Scopes
		cfg.ScopeFilter = func([]string) []string { return scopes }
	}
	h, err := auth.NewAuthorizationCodeHandler(cfg)
	if err != nil {
		return fmt.Errorf("mcp login: %w", err)
	}
	req, resp, err := challenge(ctx, probe, s)
	if err != nil {
		return err
	}
	if resp == nil {
		return fmt.Errorf("%s does not ask for an authorization: den reaches it as it is", s.Name)
	}
	if err := h.Authorize(ctx, req, resp); err != nil {
		return fmt.Errorf("mcp login %s: %w", s.Name, err)
	}
	if saved == nil {
		return fmt.Errorf("mcp login %s: the authorization ended without a token", s.Name)
	}
	return tokens.save(saved)
}

// challenge asks the server, without a token, what an MCP client
// first asks, and returns the request and the answer when it is a 401
// or 403 (nil otherwise).
func challenge(ctx context.Context, hc *http.Client, s *Server) (*http.Request, *http.Response, error) {
	u, err := expand(s.URL)
	if err != nil {
		return nil, nil, err
	}
	var req *http.Request
	if s.Type == SSE {
		req, err = http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err == nil {
			req.Header.Set("Accept", "text/event-stream")
		}
	} else {
		body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"den","version":"1"}}}`)
		req, err = http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
		}
	}
	if err != nil {
		return nil, nil, fmt.Errorf("mcp login: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, s.Name, err)
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		return req, resp, nil
	}
	resp.Body.Close()
	return req, nil, nil
}

// headerTransport adds the server's headers and, when den holds one,
// its OAuth token to every request, and remembers the last status an
// answer had (for errors that say what the server wanted).
type headerTransport struct {
	base    http.RoundTripper
	headers []KV
	tokens  oauth2.TokenSource
	mu      sync.Mutex
	status  int
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for _, kv := range t.headers {
		r.Header.Set(kv.Key, kv.Value)
	}
	if t.tokens != nil && r.Header.Get("Authorization") == "" {
		tok, err := t.tokens.Token()
		if err != nil {
			return nil, err
		}
		tok.SetAuthHeader(r)
	}
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(r)
	if err == nil {
		t.mu.Lock()
		t.status = resp.StatusCode
		t.mu.Unlock()
	}
	return resp, err
}

func (t *headerTransport) lastStatus() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status
}

func expandHeaders(hs []KV) ([]KV, error) {
	out := make([]KV, len(hs))
	for i, kv := range hs {
		v, err := expand(kv.Value)
		if err != nil {
			return nil, err
		}
		out[i] = KV{kv.Key, v}
	}
	return out, nil
}
