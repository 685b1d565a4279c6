package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"den.dev/den/internal/permission"
)

// Gate decides and audits calls: *permission.Gate.
type Gate interface {
	CheckWith(ctx context.Context, r permission.Request, d permission.Decision) (*permission.Call, error)
}

var _ Gate = (*permission.Gate)(nil)

// Options wire a Set.
type Options struct {
	// Agent and Session are whose servers these are.
	Agent, Session string
	// Servers are the agent's enabled servers (File.For).
	Servers []*Server
	// Computer starts stdio servers in the session's computer; nil
	// where the face runs no computer (they are then unavailable).
	Computer StartFunc
	// HostNet starts host servers that have an egress policy of their
	// own, confined to it; nil where den cannot (such servers are
	// then unavailable). Host servers without one are not confined.
	HostNet HostNetFunc
	// PackageManager is the computer's ("apt", "apk"), for the hint
	// when a server's command is missing there.
	PackageManager string
	// DataDir is den's data folder: host servers' homes are in
	// DATA/mcp/home/SERVER, tokens in DATA/mcp/tokens, what servers
	// offered in DATA/mcp/catalog/AGENT.
	DataDir string
	// Gate decides and audits tool calls; Policy is the agent's, for
	// the defaults of MCP tools (permission.Policy.DecideMCP).
	Gate   Gate
	Policy permission.Policy
	// Version is den's, told to servers.
	Version string
	// HTTPClient reaches HTTP servers (nil: http.DefaultClient's
	// transport).
	HTTPClient *http.Client
	Log        *slog.Logger
}

// Set is the MCP servers of one session: each server is started (or
// reached) at its first use and kept until Close; one that breaks is
// started again at its next use. It is safe for concurrent use.
type Set struct {
	o       Options
	env     *clientEnv
	cat     *catalog
	servers []*Server
	clients map[string]*client
	mu      sync.Mutex
	known   map[string]*entry // what each server offers, as last seen
	closed  bool
	close   context.CancelFunc // ends starts under way
}

// NewSet makes the session's set; it starts nothing.
func NewSet(o Options) *Set {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	s := &Set{o: o, clients: map[string]*client{}, known: map[string]*entry{}}
	closing, cancel := context.WithCancel(context.Background())
	s.close = cancel
	s.env = &clientEnv{computer: o.Computer, hostNet: o.HostNet, pkg: o.PackageManager, version: o.Version, log: o.Log, http: o.HTTPClient, closing: closing}
	if o.DataDir != "" {
		s.env.home = filepath.Join(o.DataDir, "mcp", "home")
		s.env.tokens = &Tokens{Dir: TokenDir(o.DataDir)}
		s.cat = &catalog{dir: filepath.Join(o.DataDir, "mcp", "catalog", o.Agent)}
	}
	for _, srv := range o.Servers {
		s.servers = append(s.servers, srv)
		s.clients[srv.Name] = newClient(srv, s.env)
	}
	return s
}

// TokenDir is where den keeps servers' OAuth tokens under its data
// folder.
func TokenDir(dataDir string) string { return filepath.Join(dataDir, "mcp", "tokens") }

// Servers are the set's servers, in file order.
func (s *Set) Servers() []*Server { return append([]*Server(nil), s.servers...) }

// Close stops every server.
func (s *Set) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.close()
	var wg sync.WaitGroup
	for _, c := range s.clients {
		wg.Go(c.close)
	}
	wg.Wait()
}

func (s *Set) client(name string) (*client, error) {
	c, ok := s.clients[name]
	if !ok {
		var names []string
		for _, srv := range s.servers {
			names = append(names, srv.Name)
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("%w %q: this agent has no MCP servers", ErrUnknownServer, name)
		}
		return nil, fmt.Errorf("%w %q: this agent's servers are %s", ErrUnknownServer, name, strings.Join(names, ", "))
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%w: the session's servers are stopped", ErrUnavailable)
	}
	return c, nil
}

// retryAfter is how long a server that failed to start is left alone
// by listings (calls always try again).
const retryAfter = 5 * time.Minute

// offers returns what the server offers: as last seen in this session,
// else as the catalog remembers it (nothing is started), else asked of
// the server now. fresh asks the server whatever is known.
func (s *Set) offers(ctx context.Context, name string, fresh bool) (*entry, error) {
	c, err := s.client(name)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	stale := c.stale
	c.mu.Unlock()
	if !fresh && !stale {
		s.mu.Lock()
		e := s.known[name]
		s.mu.Unlock()
		if e != nil {
			return e, nil
		}
		if e := s.cat.get(c.srv); e != nil {
			s.mu.Lock()
			s.known[name] = e
			s.mu.Unlock()
			return e, nil
		}
		if t := c.failedSince(); !t.IsZero() && time.Since(t) < retryAfter {
			_, err := c.status()
			return nil, err
		}
	}
	tools, err := c.tools(ctx)
	if err != nil {
		return nil, err
	}
	prompts, err := c.prompts(ctx)
	if err != nil {
		s.o.Log.Warn("mcp: prompts not listed", "server", name, "err", err)
	}
	e := &entry{Tools: tools, Prompts: prompts}
	if err := s.cat.put(c.srv, e); err != nil {
		s.o.Log.Warn("mcp: catalog", "err", err)
	}
	s.mu.Lock()
	s.known[name] = e
	s.mu.Unlock()
	return e, nil
}

// Tools lists a server's tools, asking the server.
func (s *Set) Tools(ctx context.Context, server string) ([]*mcp.Tool, error) {
	e, err := s.offers(ctx, server, true)
	if err != nil {
		return nil, err
	}
	return e.Tools, nil
}

// Prompts lists a server's prompts as den knows them (asking the
// server when it knows nothing yet).
func (s *Set) Prompts(ctx context.Context, server string) ([]*mcp.Prompt, error) {
	e, err := s.offers(ctx, server, false)
	if err != nil {
		return nil, err
	}
	return e.Prompts, nil
}

// Prompt gets a prompt's messages.
func (s *Set) Prompt(ctx context.Context, server, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	c, err := s.client(server)
	if err != nil {
		return nil, err
	}
	var res *mcp.GetPromptResult
	err = c.use(ctx, c.srv.CallTimeout(), func(ctx context.Context, cs *mcp.ClientSession) error {
		r, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
		res = r
		return err
	})
	return res, err
}

// Resources lists a server's resources and resource templates.
func (s *Set) Resources(ctx context.Context, server string) ([]*mcp.Resource, []*mcp.ResourceTemplate, error) {
	c, err := s.client(server)
	if err != nil {
		return nil, nil, err
	}
	var res []*mcp.Resource
	var tmpl []*mcp.ResourceTemplate
	err = c.use(ctx, c.srv.CallTimeout(), func(ctx context.Context, cs *mcp.ClientSession) error {
		if r := cs.InitializeResult(); r == nil || r.Capabilities == nil || r.Capabilities.Resources == nil {
			return nil
		}
		for r, err := range cs.Resources(ctx, nil) {
			if err != nil {
				return err
			}
			res = append(res, r)
		}
		for t, err := range cs.ResourceTemplates(ctx, nil) {
			if err != nil {
				var werr *jsonrpc.Error
				if errors.As(err, &werr) {
					return nil // templates are optional
				}
				return err
			}
			tmpl = append(tmpl, t)
		}
		return nil
	})
	return res, tmpl, err
}

// Read reads a resource.
func (s *Set) Read(ctx context.Context, server, uri string) (*mcp.ReadResourceResult, error) {
	c, err := s.client(server)
	if err != nil {
		return nil, err
	}
	var res *mcp.ReadResourceResult
	err = c.use(ctx, c.srv.CallTimeout(), func(ctx context.Context, cs *mcp.ClientSession) error {
		r, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		res = r
		return err
	})
	return res, err
}

// Status is a server as the faces show it.
type Status struct {
	Server *Server
	State  State
	Error  string // why it failed, when it did
	Tools  int    // tools known (-1: none known yet)
}

// Status says where each server stands.
func (s *Set) Status() []Status {
	var out []Status
	for _, srv := range s.servers {
		c := s.clients[srv.Name]
		st, err := c.status()
		x := Status{Server: srv, State: st, Tools: -1}
		if err != nil {
			x.Error = err.Error()
		}
		s.mu.Lock()
		e := s.known[srv.Name]
		s.mu.Unlock()
		if e == nil {
			e = s.cat.get(srv)
		}
		if e != nil {
			x.Tools = len(e.Tools)
		}
		out = append(out, x)
	}
	return out
}

// Known is what the server offers as den knows it without asking (this
// session's last listing, else the catalog); nil when it knows nothing.
func (s *Set) Known(server string) (tools []*mcp.Tool, prompts []*mcp.Prompt) {
	c, ok := s.clients[server]
	if !ok {
		return nil, nil
	}
	s.mu.Lock()
	e := s.known[server]
	s.mu.Unlock()
	if e == nil {
		e = s.cat.get(c.srv)
	}
	if e == nil {
		return nil, nil
	}
	return e.Tools, e.Prompts
}

// Log is the server's bounded log: the end of its stderr, what it
// wrote on stdout that was not MCP, and den's notes.
func (s *Set) Log(server string) string {
	if c, ok := s.clients[server]; ok {
		return c.log.String()
	}
	return ""
}

// Connect starts (or reaches) the server now and asks what it offers,
// for den mcp test.
func (s *Set) Connect(ctx context.Context, server string) (*mcp.InitializeResult, error) {
	c, err := s.client(server)
	if err != nil {
		return nil, err
	}
	cn, err := c.session(ctx)
	if err != nil {
		return nil, err
	}
	return cn.cs.InitializeResult(), nil
}

// Call calls a tool for den-mcp call: decided by the gate as the
// model's own call of that tool is, audited, and answered as the server
// answered it. The error is for a call that did not run (refused, or
// the server could not be reached); a failure of the tool is the
// result's IsError.
func (s *Set) Call(ctx context.Context, server, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	c, err := s.client(server)
	if err != nil {
		return nil, err
	}
	readOnly := false
	if e, _ := s.offers(ctx, server, false); e != nil {
		for _, t := range e.Tools {
			if t.Name == tool && t.Annotations != nil {
				readOnly = t.Annotations.ReadOnlyHint
			}
		}
	}
	pc, err := s.check(ctx, c.srv, tool, readOnly, args)
	if err != nil {
		return nil, err
	}
	res, err := c.call(ctx, tool, args)
	code := 0
	if err != nil || res.IsError {
		code = 1
	}
	pc.Finish(context.WithoutCancel(ctx), code)
	return res, err
}

// ErrDenied is a call the permission gate refused.
var ErrDenied = errors.New("mcp: the call was denied")

// check puts a call before the gate; the Call it returns is allowed
// and must be finished. A refused call is finished here.
func (s *Set) check(ctx context.Context, srv *Server, tool string, readOnly bool, args json.RawMessage) (*permission.Call, error) {
	if s.o.Gate == nil {
		return nil, fmt.Errorf("%w: no permission gate for MCP calls in this face", ErrUnavailable)
	}
	if !srv.Shows(tool) {
		return nil, fmt.Errorf("%w: %s of %s is hidden by its server's tools filter in mcp.json", ErrDenied, tool, srv.Name)
	}
	d := srv.Decide(s.o.Policy, tool, readOnly)
	req := permission.Request{Session: s.o.Session, Command: permission.MCP, Action: "call", Subject: srv.Name + "/" + tool,
		Detail: fmt.Sprintf("the tool %s of the MCP server %s (%s)", tool, srv.Name, placeWords(srv)),
		Args:   []string{"call", srv.Name + "/" + tool, string(args)}}
	pc, err := s.o.Gate.CheckWith(ctx, req, d)
	if err != nil {
		return nil, err
	}
	if pc.Decision != permission.Allow {
		pc.Finish(context.WithoutCancel(ctx), permission.ExitDenied)
		return nil, fmt.Errorf("%w: %s of %s was denied (%s)", ErrDenied, tool, srv.Name, pc.By)
	}
	return pc, nil
}

// placeWords says where a server runs, for a person asked to approve.
func placeWords(srv *Server) string {
	switch srv.Place() {
	case permission.MCPOnHost:
		return "on the host, with your rights"
	case permission.MCPRemote:
		return "at " + srv.URL
	}
	return "in the agent's computer"
}
