package mcpserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"den.dev/den/internal/config"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/session"
)

// Limits of the server.
const (
	// MaxBody is the most bytes one HTTP request to /mcp may send: a
	// write_file of MaxWrite bytes, base64-encoded, and the rest of the
	// request.
	MaxBody = 12 << 20
	// MaxClientName is the most bytes of a client's name den keeps.
	MaxClientName = 64
	// SessionIdle is how long an HTTP client's MCP session lives
	// without a request; then the client starts a new one.
	SessionIdle = 12 * time.Hour
)

// Options configure a Server.
type Options struct {
	// Runtime runs the turns, the commands and holds the store.
	Runtime *session.Runtime
	// Agent is the agent of calls that name none; "" is "default".
	Agent string
	// Client, when set, is the client's name for the gate, the audit
	// and the [mcp_clients] tables, instead of the name its initialize
	// request gives.
	Client string
	// Tools, when set, are the only tools offered; the others are not
	// listed and cannot be called (den mcp serve --allow-tools).
	Tools []string
	// ApprovalTimeout is how long a call waits for a person's answer
	// before it is denied; 0 is permission.DefaultTimeout.
	ApprovalTimeout time.Duration
	// Told, when set, hears of each approval a call waits for (den mcp
	// serve tells them on its standard error). It must not block.
	Told    func(*permission.ApprovalRequest)
	Version string
	Log     *slog.Logger
}

// Server is den's MCP server. Its methods are safe for concurrent use.
type Server struct {
	o    Options
	rt   *session.Runtime
	mcp  *mcp.Server
	http *mcp.StreamableHTTPHandler
	log  *slog.Logger

	making sync.Mutex // one making of a named session at a time

	mu     sync.Mutex
	places map[*mcp.ServerSession]place // each connection's current session
}

// New builds the server and its tools. It panics when Options.Tools
// names a tool den does not have, as a bad flag must be refused before
// (den mcp serve checks it with CheckTools).
func New(o Options) *Server {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Agent == "" {
		o.Agent = "default"
	}
	if err := CheckTools(o.Tools); err != nil {
		panic(fmt.Sprintf("mcpserver: %v", err))
	}
	s := &Server{o: o, rt: o.Runtime, log: o.Log, places: map[*mcp.ServerSession]place{}}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "den", Title: "den", Version: o.Version}, &mcp.ServerOptions{
		Instructions:       instructions,
		Logger:             o.Log,
		InitializedHandler: func(context.Context, *mcp.InitializedRequest) { s.prune() },
	})
	s.addTools()
	s.addResources()
	s.http = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Logger: o.Log,
		// den's auth guard checks the Host of every request against
		// the names den answers for (server.allowed_hosts), which a
		// proxy on loopback (tailscale serve) needs to pass.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        MaxBody,
		SessionTimeout:             SessionIdle,
	})
	return s
}

const instructions = `den is a self-hosted AI agent with its own persistent, isolated Linux computer (a sandbox the user's machine keeps). These tools use that computer:
exec runs a shell command in a session's /workspace; read_file, write_file and list_files reach its files; run asks den's own agent to do a task in it and returns its answer; sessions_list and session_read show den's conversations.
A session (give its id, or a name of your choosing) has a /workspace of its own; without one, your calls share the session named after you. What is installed in the computer (apk, apt, pip) stays, for every session of the agent.
Some calls need the user's approval in den; a denied call says why, and calling again does not help until the user allows it.`

// CheckTools checks a list of tools to offer: each must be one of den's.
func CheckTools(tools []string) error {
	for _, t := range tools {
		if !slices.Contains(config.MCPTools(), t) {
			return fmt.Errorf("no tool %q: den's MCP server has %s", t, strings.Join(config.MCPTools(), ", "))
		}
	}
	return nil
}

// offers reports whether the server offers tool.
func (s *Server) offers(tool string) bool {
	return len(s.o.Tools) == 0 || slices.Contains(s.o.Tools, tool)
}

// Run serves one client over t (den mcp serve: stdin and stdout) until
// it disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.mcp.Run(ctx, t)
}

// Handler serves clients over the streamable HTTP transport: POST for
// requests, GET for the stream of the server's own messages, DELETE to
// end a session. It checks no credentials: mount it behind den's auth
// guard.
func (s *Server) Handler() http.Handler { return s.http }

// clientName is the name of the calling client: Options.Client, else
// its clientInfo's, cut to MaxClientName bytes; "unknown" when it gave
// none.
func (s *Server) clientName(info *mcp.Implementation) string {
	if s.o.Client != "" {
		return s.o.Client
	}
	name := ""
	if info != nil {
		name = strings.TrimSpace(info.Name)
	}
	name = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, name)
	if len(name) > MaxClientName {
		// A rune cut in two is dropped.
		name = strings.ToValidUTF8(name[:MaxClientName], "")
	}
	if name == "" {
		return "unknown"
	}
	return name
}

// setPlace remembers where the connection's last call was.
func (s *Server) setPlace(ss *mcp.ServerSession, p place) {
	if ss == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.places[ss] = p
}

// placeOf is where the connection's last call was (ok false: none yet).
func (s *Server) placeOf(ss *mcp.ServerSession) (place, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.places[ss]
	return p, ok
}

// prune forgets the places of connections that are gone.
func (s *Server) prune() {
	live := map[*mcp.ServerSession]bool{}
	for ss := range s.mcp.Sessions() {
		live[ss] = true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for ss := range s.places {
		if !live[ss] {
			delete(s.places, ss)
		}
	}
}
