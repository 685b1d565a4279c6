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
)

// State is where a server's connection stands.
type State string

// The states.
const (
	Idle     State = "idle"     // not started (or stopped after the session's last use)
	Starting State = "starting" // being started and initialized
	Ready    State = "ready"    // connected
	Failed   State = "failed"   // the last start or call failed; the next use starts it again
)

// client is one server's connection for one session: started at its
// first use, kept, and started again at the use after it broke (the
// program ended, a call timed out, the server sent what is not MCP).
type client struct {
	srv   *Server
	env   *clientEnv
	log   *serverLog
	dial  sync.Mutex // one start at a time; callers wait for it
	mu    sync.Mutex
	cur   *conn
	state State
	err   error     // why the last start or call failed
	at    time.Time // when it failed
	stale bool      // the server said its tools changed
}

// clientEnv is what every client of a Set shares.
type clientEnv struct {
	computer StartFunc
	hostNet  HostNetFunc
	home     string // host servers' homes are folders in it
	tokens   *Tokens
	pkg      string // the computer's package manager ("apt", "apk"), for hints
	version  string
	log      *slog.Logger
	http     *http.Client
	closing  context.Context // done once the set closes
}

// conn is one live connection.
type conn struct {
	cs     *mcp.ClientSession
	proc   *process // stdio servers
	end    func()   // ends the connection's context (HTTP servers)
	closed chan struct{}
}

func newClient(s *Server, env *clientEnv) *client {
	return &client{srv: s, env: env, log: newServerLog(), state: Idle}
}

// status is the connection's state and why it failed.
func (c *client) status() (State, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.state, c.err
}

// failedSince is when the last failure happened (zero when the
// connection is not failed).
func (c *client) failedSince() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state != Failed {
		return time.Time{}
	}
	return c.at
}

// session returns the live connection, starting one when there is none.
func (c *client) session(ctx context.Context) (*conn, error) {
	c.dial.Lock()
	defer c.dial.Unlock()
	c.mu.Lock()
	cur := c.cur
	c.mu.Unlock()
	if cur != nil {
		select {
		case <-cur.closed:
			c.drop(cur, "the connection ended")
		default:
			return cur, nil
		}
	}
	c.setState(Starting, nil)
	dctx, cancel := context.WithTimeout(ctx, c.srv.StartTimeout())
	defer cancel()
	// The set's Close ends a start under way.
	defer context.AfterFunc(c.env.closing, cancel)()
	cn, err := c.connect(dctx)
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		c.setState(Failed, err)
		c.log.note("start failed: " + err.Error())
		return nil, err
	}
	if c.env.closing.Err() != nil {
		// The set closed while this started: nothing would stop it.
		cn.close()
		c.setState(Idle, nil)
		return nil, fmt.Errorf("%w: the session's servers are stopped", ErrUnavailable)
	}
	c.mu.Lock()
	c.cur, c.state, c.err, c.stale = cn, Ready, nil, false
	c.mu.Unlock()
	return cn, nil
}

func (c *client) setState(s State, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.state, c.err = s, err
	if err != nil {
		c.at = time.Now()
	}
}

// drop closes cn if it is still the current connection: the next use
// starts another.
func (c *client) drop(cn *conn, why string) {
	c.mu.Lock()
	if c.cur != cn {
		c.mu.Unlock()
		return
	}
	c.cur = nil
	c.mu.Unlock()
	c.log.note("stopped: " + why)
	cn.close()
}

func (cn *conn) close() {
	cn.cs.Close()
	if cn.proc != nil {
		cn.proc.stop()
	}
	if cn.end != nil {
		cn.end()
	}
}

// close ends the connection, for good or until the next use.
func (c *client) close() {
	c.dial.Lock()
	defer c.dial.Unlock()
	c.mu.Lock()
	cn := c.cur
	c.cur, c.state, c.err = nil, Idle, nil
	c.mu.Unlock()
	if cn != nil {
		cn.close()
	}
}

// connect starts or reaches the server and initializes the session.
func (c *client) connect(ctx context.Context) (*conn, error) {
	cl := mcp.NewClient(&mcp.Implementation{Name: "den", Version: c.env.version}, &mcp.ClientOptions{
		// No roots: den decides what a server may reach by where it
		// runs, and a filesystem server would take an empty list of
		// roots for "nothing".
		Capabilities: &mcp.ClientCapabilities{},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			c.mu.Lock()
			c.stale = true
			c.mu.Unlock()
		},
		Logger: c.env.log,
	})
	c.log.note("starting " + c.srv.Where())
	if c.srv.Type == Stdio {
		return c.connectStdio(ctx, cl)
	}
	return c.connectHTTP(ctx, cl)
}

func (c *client) connectStdio(ctx context.Context, cl *mcp.Client) (*conn, error) {
	proc, err := startProcess(ctx, c.srv, c.env.computer, c.env.hostNet, filepath.Join(c.env.home, c.srv.Name), c.log)
	if err != nil {
		return nil, err
	}
	cs, err := cl.Connect(ctx, &mcp.IOTransport{Reader: proc.stdout, Writer: proc.stdin}, nil)
	if err != nil {
		err = c.explain(ctx, err, proc)
		proc.stop()
		return nil, err
	}
	cn := &conn{cs: cs, proc: proc, closed: make(chan struct{})}
	go func() {
		select {
		case <-proc.done:
		case <-waitDone(cs):
		}
		close(cn.closed)
	}()
	return cn, nil
}

func waitDone(cs *mcp.ClientSession) <-chan struct{} {
	ch := make(chan struct{})
	go func() {
		cs.Wait()
		close(ch)
	}()
	return ch
}

func (c *client) connectHTTP(ctx context.Context, cl *mcp.Client) (*conn, error) {
	headers, err := expandHeaders(c.srv.Headers)
	if err != nil {
		return nil, err
	}
	endpoint, err := expand(c.srv.URL)
	if err != nil {
		return nil, err
	}
	var base http.RoundTripper
	if c.env.http != nil {
		base = c.env.http.Transport
	}
	ht := &headerTransport{base: base, headers: headers}
	if c.env.tokens != nil {
		if ht.tokens, err = c.env.tokens.source(c.srv, c.env.http); err != nil {
			return nil, err
		}
	}
	hc := &http.Client{Transport: ht}
	// The SSE transport's stream lives on the context its Connect
	// gets: the connection's own, which the start's deadline cancels
	// only while the start goes on.
	life, end := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, end)
	var t mcp.Transport
	if c.srv.Type == SSE {
		t = &lifeTransport{&mcp.SSEClientTransport{Endpoint: endpoint, HTTPClient: hc}, life}
	} else {
		t = &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: 2}
	}
	cs, err := cl.Connect(ctx, t, nil)
	if err != nil && c.srv.urlOnly && ctx.Err() == nil {
		switch ht.lastStatus() {
		case http.StatusBadRequest, http.StatusNotFound, http.StatusMethodNotAllowed:
			// An older server: HTTP with server-sent events.
			c.log.note("no streamable HTTP there; trying server-sent events")
			cs, err = cl.Connect(ctx, &lifeTransport{&mcp.SSEClientTransport{Endpoint: endpoint, HTTPClient: hc}, life}, nil)
		}
	}
	if !stop() || err != nil {
		end()
		if err == nil {
			cs.Close()
			err = ctx.Err()
		}
	}
	if err != nil {
		switch st := ht.lastStatus(); {
		case errors.Is(err, ErrNeedsLogin):
			return nil, err
		case st == http.StatusUnauthorized || st == http.StatusForbidden:
			return nil, fmt.Errorf("%w: %s answered %d: run den mcp login %s", ErrNeedsLogin, c.srv.Name, st, c.srv.Name)
		case ctx.Err() != nil:
			return nil, fmt.Errorf("%w: %s did not answer within %v", ErrUnavailable, c.srv.Name, c.srv.StartTimeout())
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, c.srv.Name, err)
	}
	cn := &conn{cs: cs, closed: make(chan struct{}), end: end}
	go func() {
		<-waitDone(cs)
		close(cn.closed)
	}()
	return cn, nil
}

// lifeTransport connects its transport on the connection's context,
// whatever context Connect is given.
type lifeTransport struct {
	mcp.Transport
	ctx context.Context
}

func (t *lifeTransport) Connect(context.Context) (mcp.Connection, error) {
	return t.Transport.Connect(t.ctx)
}

// explain says why a stdio server could not be initialized, from how
// its program ended and what it wrote.
func (c *client) explain(ctx context.Context, err error, proc *process) error {
	name := c.srv.Name
	if ctx.Err() == nil {
		// The program may be ending: its exit says more than a broken
		// pipe.
		select {
		case <-proc.done:
		case <-time.After(time.Second):
		}
	}
	exit, ended := proc.exited()
	if cmd, ok := c.log.hasLine(notFound); ok && ended {
		return fmt.Errorf("%w: %s is not installed in the agent's computer: %s, or set \"host\": true for %s in mcp.json to run it on the host",
			ErrNotInstalled, cmd, installHint(cmd, c.env.pkg), name)
	}
	var b strings.Builder
	switch {
	case ctx.Err() != nil && !ended:
		fmt.Fprintf(&b, "%s did not answer within %v (den stopped it)", name, c.srv.StartTimeout())
	case ended:
		fmt.Fprintf(&b, "%s ended (%v) before it answered", name, exit)
	default:
		fmt.Fprintf(&b, "%s did not answer as an MCP server: %v", name, err)
	}
	if g := c.log.lastGarbage(); g != "" {
		fmt.Fprintf(&b, "; it wrote on its standard output what is not MCP: %q", g)
	}
	if t := stderrTail(c.log); t != "" {
		fmt.Fprintf(&b, "; the end of its log:\n%s", t)
	}
	return fmt.Errorf("%w: %s", ErrUnavailable, b.String())
}

// stderrTail is the end of the server's own output (den's notes left
// out), for messages.
func stderrTail(l *serverLog) string {
	var keep []string
	for _, line := range strings.Split(l.tail(4096), "\n") {
		if !strings.HasPrefix(line, "[den] ") {
			keep = append(keep, line)
		}
	}
	s := strings.TrimSpace(strings.Join(keep, "\n"))
	if len(s) > 1500 {
		s = "…" + s[len(s)-1500:]
	}
	return s
}

// installHint says how to install a missing command in the computer.
func installHint(cmd, pkg string) string {
	install := map[string]string{"apt": "apt-get install -y ", "apk": "apk add "}
	pkgs := map[string]string{"npx": "nodejs npm", "node": "nodejs npm", "npm": "nodejs npm",
		"python3": "python3", "python": "python3", "uvx": "uv", "uv": "uv", "pipx": "pipx", "git": "git", "docker": ""}
	p, known := pkgs[filepath.Base(cmd)]
	switch {
	case known && p == "":
		return fmt.Sprintf("%s cannot run in the computer", cmd)
	case !known:
		return fmt.Sprintf("install %s there", cmd)
	case p == "uv" && pkg == "apt":
		return "install it there (apt-get install -y pipx && pipx install uv)"
	case install[pkg] != "":
		return fmt.Sprintf("install it there (%s%s)", install[pkg], p)
	}
	return fmt.Sprintf("install it there (apt-get install -y %s, or apk add %s)", p, p)
}

// tools lists the server's tools.
func (c *client) tools(ctx context.Context) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	err := c.use(ctx, c.srv.StartTimeout(), func(ctx context.Context, cs *mcp.ClientSession) error {
		out = out[:0]
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return nil
	})
	return out, err
}

// prompts lists the server's prompts (none when it has no prompts).
func (c *client) prompts(ctx context.Context) ([]*mcp.Prompt, error) {
	var out []*mcp.Prompt
	err := c.use(ctx, c.srv.StartTimeout(), func(ctx context.Context, cs *mcp.ClientSession) error {
		if r := cs.InitializeResult(); r == nil || r.Capabilities == nil || r.Capabilities.Prompts == nil {
			return nil
		}
		out = out[:0]
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// call calls a tool. A failure of the tool is the result's IsError; the
// error is for everything else: the server could not be reached, broke
// or did not answer in time (it is then stopped, to start again at the
// next use), or refused the call at the protocol level.
func (c *client) call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	var res *mcp.CallToolResult
	err := c.use(ctx, c.srv.CallTimeout(), func(ctx context.Context, cs *mcp.ClientSession) error {
		var err error
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		return err
	})
	return res, err
}

// use runs f on the live session within timeout.
func (c *client) use(ctx context.Context, timeout time.Duration, f func(context.Context, *mcp.ClientSession) error) error {
	cn, err := c.session(ctx)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = f(cctx, cn.cs)
	var werr *jsonrpc.Error
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.As(err, &werr):
		// The server answered, with a protocol error (an unknown tool,
		// invalid arguments): the connection is fine.
		return fmt.Errorf("%s: %s", c.srv.Name, werr.Message)
	case cctx.Err() != nil:
		c.drop(cn, fmt.Sprintf("no answer within %v", timeout))
		c.setState(Failed, fmt.Errorf("%w: %s did not answer within %v", ErrUnavailable, c.srv.Name, timeout))
		msg := fmt.Sprintf("%s did not answer within %v; den stopped it, and starts it again at the next call", c.srv.Name, timeout)
		if t := stderrTail(c.log); t != "" {
			// What a hung server said last is often why it hangs.
			msg += "; the end of its log:\n" + t
		}
		return fmt.Errorf("%w: %s", ErrUnavailable, msg)
	}
	why := err.Error()
	if cn.proc != nil {
		select {
		case <-cn.proc.done:
		case <-time.After(time.Second):
		}
		if exit, ended := cn.proc.exited(); ended {
			why = fmt.Sprintf("the server ended (%v)", exit)
		}
	}
	c.drop(cn, why)
	msg := fmt.Sprintf("%s broke off (%s); den starts it again at the next call", c.srv.Name, why)
	if g := c.log.lastGarbage(); g != "" {
		msg += fmt.Sprintf("; it wrote on its standard output what is not MCP: %q", g)
	}
	if t := stderrTail(c.log); t != "" {
		msg += "; the end of its log:\n" + t
	}
	c.setState(Failed, fmt.Errorf("%w: %s", ErrUnavailable, msg))
	return fmt.Errorf("%w: %s", ErrUnavailable, msg)
}
