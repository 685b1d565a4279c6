package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/egress"
	"den.dev/den/internal/hostsvc"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/mcpclient"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/store"
)

// mcpPath is the MCP servers' file: Options.MCP, else mcp.json beside
// the config file.
func (r *Runtime) mcpPath() string {
	if r.o.MCP != "" {
		return r.o.MCP
	}
	return mcpclient.PathBeside(firstNonEmpty(r.Config().Path(), config.DefaultPath()))
}

// mcpServers are the agent's enabled MCP servers, read from the file
// now (a server added with den mcp add is there for the next session);
// a file den cannot read is a warning, and no servers.
func (r *Runtime) mcpServers(sessionID, agentName string) []*mcpclient.Server {
	f, err := mcpclient.Load(r.mcpPath())
	if err != nil {
		r.emit(sessionID, &agent.WarningEvent{Message: "MCP servers not started: " + err.Error()})
		return nil
	}
	return f.For(agentName)
}

// mcpSet makes the session's MCP servers: none runs until it is used.
// Stdio servers run in the session's computer, as processes of their
// own with the session's folders, mounts and network, and no host
// commands.
func (r *Runtime) mcpSet(comp *computer.Computer, sess store.Session, o computer.SessionOptions, gate *permission.Gate, policy permission.Policy, pkg string) *mcpclient.Set {
	start, hostNet := MCPStarts(comp, sess.ID, o, r.mcpPolicies.now(r.mcpPath))
	return mcpclient.NewSet(mcpclient.Options{Agent: sess.Agent, Session: sess.ID, Servers: r.mcpServers(sess.ID, sess.Agent),
		Computer: start, HostNet: hostNet, PackageManager: pkg, DataDir: r.o.DataDir, Gate: gate, Policy: policy, Version: r.o.Version, Log: r.log})
}

// MCPStarts are how the stdio MCP servers of a session start: in comp,
// as processes of their own with the session's folders, mounts and
// network (o's) and no host commands, under the server's own egress
// policy when it has one; and on the host, confined to the server's
// policy when it has one. now, when set, gives a server's policy as
// the user changes it (the policy it started with otherwise).
func MCPStarts(comp *computer.Computer, session string, o computer.SessionOptions, now func(server string, start egress.Policy) func() egress.Policy) (mcpclient.StartFunc, mcpclient.HostNetFunc) {
	o.Host = nil
	current := func(srv string, pol egress.Policy) func() egress.Policy {
		if now == nil {
			return nil
		}
		return now(srv, pol)
	}
	start := func(ctx context.Context, srv *mcpclient.Server, cmd *sandbox.Cmd) (sandbox.Process, func(), error) {
		so := o
		pol, own, err := srv.EgressPolicy()
		if err != nil {
			return nil, nil, err
		}
		if own {
			so.Network = pol.Mode != egress.Off
			so.Egress.Policy, so.Egress.Current = pol, current(srv.Name, pol)
		}
		c := *cmd
		c.Env = append(computer.BaseEnv(session), cmd.Env...)
		return comp.StartRaw(ctx, session, so, &c)
	}
	hostNet := func(ctx context.Context, srv *mcpclient.Server, cmd *exec.Cmd) (func(), error) {
		pol, _, err := srv.EgressPolicy()
		if err != nil {
			return nil, err
		}
		sc := egress.Scope{Session: session, Policy: pol, Current: current(srv.Name, pol), Record: o.Egress.Record, Ask: o.Egress.Ask}
		return comp.StartOnHost(ctx, sc, cmd)
	}
	return start, hostNet
}

// mcpPolicies reads MCP servers' egress policies from mcp.json as it
// changes, for their running processes' connections: the file is read
// again only when it changed.
type mcpPolicies struct {
	mu    sync.Mutex
	path  string
	stamp string // size and modification time of what file holds
	file  *mcpclient.File
}

// now returns a function giving a server's policy as the file at
// path() says now; the policy it started with when the file cannot be
// read or no longer gives one.
func (m *mcpPolicies) now(path func() string) func(server string, start egress.Policy) func() egress.Policy {
	return func(server string, start egress.Policy) func() egress.Policy {
		return func() egress.Policy {
			f := m.load(path())
			if f == nil {
				return start
			}
			s := f.Get(server)
			if s == nil {
				return start
			}
			if pol, ok, err := s.EgressPolicy(); ok && err == nil {
				return pol
			}
			return start
		}
	}
}

func (m *mcpPolicies) load(p string) *mcpclient.File {
	fi, err := os.Stat(p)
	if err != nil {
		return nil
	}
	stamp := fmt.Sprint(fi.Size(), fi.ModTime().UnixNano())
	m.mu.Lock()
	defer m.mu.Unlock()
	if p == m.path && stamp == m.stamp {
		return m.file
	}
	f, err := mcpclient.Load(p)
	if err != nil {
		f = nil
	}
	m.path, m.stamp, m.file = p, stamp, f
	return f
}

// mcpOffer is what the model gets of the session's MCP servers this
// turn: their tools (in a registry of their own) and the system
// prompt's section. Each warning is told once per computer start.
func (r *Runtime) mcpOffer(ctx context.Context, e *engine, sessionID string, window int) (*mcpTools, string) {
	if e.mcp == nil || len(e.mcp.Servers()) == 0 {
		return nil, ""
	}
	offer := e.mcp.Offer(ctx, window)
	for _, w := range offer.Warnings {
		if !e.warned["mcp:"+w] {
			e.warned["mcp:"+w] = true
			r.emit(sessionID, &agent.WarningEvent{Message: w})
		}
	}
	if len(offer.Tools) == 0 {
		return nil, offer.Prompt
	}
	reg, err := newToolRegistry(offer.Tools)
	if err != nil {
		r.emit(sessionID, &agent.WarningEvent{Message: "MCP tools left out: " + err.Error()})
		return nil, offer.Prompt
	}
	return &mcpTools{reg: reg}, offer.Prompt
}

// mcpPromptRef reads a message that asks for an MCP server's prompt:
// "/SERVER:PROMPT [args]".
func mcpPromptRef(text string) (server, name, rest string, ok bool) {
	text = strings.TrimSpace(text)
	head, rest, _ := strings.Cut(strings.TrimPrefix(text, "/"), " ")
	server, name, found := strings.Cut(head, ":")
	if !strings.HasPrefix(text, "/") || !found || mcpclient.ValidName(server) != nil || name == "" || strings.ContainsFunc(name, unicode.IsSpace) {
		return "", "", "", false
	}
	return server, name, strings.TrimSpace(rest), true
}

// withMCPPrompt is m with the MCP prompt it names in its place:
// "/SERVER:PROMPT name=value …" (or, for a prompt of one argument,
// "/SERVER:PROMPT the value") becomes the prompt's messages, text and
// images. The session's own servers are used when they run; else the
// server is reached for this and stopped. Any other message, or one
// naming no server of the agent, is m as it is; a prompt that cannot be
// had is said in a warning, and m kept.
func (r *Runtime) withMCPPrompt(ctx context.Context, sess store.Session, m Message) Message {
	server, name, rest, ok := mcpPromptRef(m.Text)
	if !ok {
		return m
	}
	set, done := r.liveMCP(sess.ID)
	if set == nil {
		var known bool
		for _, s := range r.mcpServers(sess.ID, sess.Agent) {
			known = known || s.Name == server
		}
		if !known {
			return m
		}
		comp, o, err := r.computer(ctx, sess.Agent)
		if err != nil {
			r.emit(sess.ID, &agent.WarningEvent{Message: fmt.Sprintf("the prompt %s:%s was not read: %v", server, name, err)})
			return m
		}
		info, _, _ := comp.Info()
		set = r.mcpSet(comp, sess, o, nil, permission.Policy{}, string(info.PackageManager))
		done = set.Close
	}
	defer done()
	if !hasServer(set, server) {
		return m
	}
	args, err := promptArgs(ctx, set, server, name, rest)
	if err == nil {
		var res *mcp.GetPromptResult
		if res, err = set.Prompt(ctx, server, name, args); err == nil {
			return promptMessage(server, name, res)
		}
	}
	r.emit(sess.ID, &agent.WarningEvent{Message: fmt.Sprintf("the prompt %s:%s was not used: %v", server, name, err)})
	return m
}

// IsMCPPrompt reports whether text asks for a prompt of one of the
// agent's MCP servers: "/SERVER:PROMPT …" (Send puts the prompt in
// its place).
func (r *Runtime) IsMCPPrompt(agentName, text string) bool {
	server, _, _, ok := mcpPromptRef(text)
	if !ok {
		return false
	}
	f, err := mcpclient.Load(r.mcpPath())
	if err != nil {
		return false
	}
	for _, s := range f.For(agentName) {
		if s.Name == server {
			return true
		}
	}
	return false
}

// liveMCP is the running session's servers, if it has them.
func (r *Runtime) liveMCP(sessionID string) (*mcpclient.Set, func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if l := r.live[sessionID]; l != nil && l.eng != nil && l.eng.mcp != nil {
		return l.eng.mcp, func() {}
	}
	return nil, nil
}

func hasServer(set *mcpclient.Set, name string) bool {
	for _, s := range set.Servers() {
		if s.Name == name {
			return true
		}
	}
	return false
}

// promptArgs reads a prompt's arguments: name=value words (a value may
// be "quoted"), or, for a prompt of one argument, the rest of the
// message.
func promptArgs(ctx context.Context, set *mcpclient.Set, server, name, rest string) (map[string]string, error) {
	prompts, err := set.Prompts(ctx, server)
	if err != nil {
		return nil, err
	}
	var p *mcp.Prompt
	for _, x := range prompts {
		if x.Name == name {
			p = x
		}
	}
	if p == nil {
		var names []string
		for _, x := range prompts {
			names = append(names, x.Name)
		}
		return nil, fmt.Errorf("%s has no prompt %q (its prompts: %s)", server, name, strings.Join(names, ", "))
	}
	args := map[string]string{}
	words, err := splitWords(rest)
	if err != nil {
		return nil, err
	}
	named := len(words) > 0
	for _, w := range words {
		if k, _, ok := strings.Cut(w, "="); !ok || !argNamed(p, k) {
			named = false
		}
	}
	switch {
	case named:
		for _, w := range words {
			k, v, _ := strings.Cut(w, "=")
			args[k] = v
		}
	case rest != "" && len(p.Arguments) == 1:
		args[p.Arguments[0].Name] = strings.Trim(rest, `"`)
	case rest != "":
		return nil, fmt.Errorf("give its arguments as name=value (%s)", argList(p))
	}
	for _, a := range p.Arguments {
		if _, ok := args[a.Name]; a.Required && !ok {
			return nil, fmt.Errorf("it needs %s (%s)", a.Name, argList(p))
		}
	}
	return args, nil
}

func argNamed(p *mcp.Prompt, k string) bool {
	for _, a := range p.Arguments {
		if a.Name == k {
			return true
		}
	}
	return false
}

func argList(p *mcp.Prompt) string {
	var out []string
	for _, a := range p.Arguments {
		s := a.Name
		if a.Required {
			s += " (required)"
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return "it takes none"
	}
	return strings.Join(out, ", ")
}

// splitWords splits s at spaces, keeping "quoted values" whole.
func splitWords(s string) ([]string, error) {
	var out []string
	var b strings.Builder
	quoted, any := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, any = !quoted, true
		case unicode.IsSpace(r) && !quoted:
			if any {
				out = append(out, b.String())
			}
			b.Reset()
			any = false
		default:
			b.WriteRune(r)
			any = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("a quote is not closed")
	}
	if any {
		out = append(out, b.String())
	}
	return out, nil
}

// promptMessage is a prompt's messages as one message of the user:
// their text, and their images as images.
func promptMessage(server, name string, res *mcp.GetPromptResult) Message {
	var text []string
	var images []llm.Part
	for _, pm := range res.Messages {
		prefix := ""
		if pm.Role == "assistant" {
			prefix = "(assistant) "
		}
		switch c := pm.Content.(type) {
		case *mcp.TextContent:
			text = append(text, prefix+c.Text)
		case *mcp.ImageContent:
			images = append(images, &llm.Image{MediaType: c.MIMEType, Data: c.Data})
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				text = append(text, prefix+c.Resource.Text)
			}
		}
	}
	m := Message{Text: strings.Join(text, "\n\n")}
	if m.Text == "" {
		m.Text = fmt.Sprintf("(the prompt %s:%s has no text)", server, name)
	}
	if len(images) > 0 {
		m.Parts = append([]llm.Part{&llm.Text{Text: m.Text}}, images...)
	}
	return m
}

// hostMCP gives den-mcp the session's servers.
type hostMCP struct{ e *engine }

var _ hostsvc.MCP = hostMCP{}

func (h hostMCP) set() (*mcpclient.Set, error) {
	if h.e.mcp == nil {
		return nil, &hostsvc.MCPError{Code: hostsvc.CodeNotAvailable, Message: "the session's MCP servers are not started"}
	}
	return h.e.mcp, nil
}

// mcpError gives an error of mcpclient den-mcp's code.
func mcpError(err error) error {
	if err == nil {
		return nil
	}
	code := hostsvc.CodeInternal
	switch {
	case errors.Is(err, mcpclient.ErrUnknownServer):
		code = hostsvc.CodeInvalidArgs
	case errors.Is(err, mcpclient.ErrDenied):
		code = hostsvc.CodeDenied
	case errors.Is(err, mcpclient.ErrUnavailable), errors.Is(err, mcpclient.ErrNotInstalled), errors.Is(err, mcpclient.ErrNeedsLogin):
		code = hostsvc.CodeNotAvailable
	}
	return &hostsvc.MCPError{Code: code, Message: err.Error()}
}

func (h hostMCP) Servers() []hostsvc.MCPServer {
	set, err := h.set()
	if err != nil {
		return nil
	}
	var out []hostsvc.MCPServer
	for _, st := range set.Status() {
		out = append(out, hostsvc.MCPServer{Name: st.Server.Name, Where: st.Server.Where(), State: string(st.State), Error: st.Error, Tools: st.Tools})
	}
	return out
}

func (h hostMCP) Tools(ctx context.Context, server string) ([]hostsvc.MCPTool, error) {
	set, err := h.set()
	if err != nil {
		return nil, err
	}
	tools, err := set.Tools(ctx, server)
	if err != nil {
		return nil, mcpError(err)
	}
	out := []hostsvc.MCPTool{}
	for _, t := range tools {
		out = append(out, hostsvc.MCPTool{Name: t.Name, Description: t.Description, ReadOnly: t.Annotations != nil && t.Annotations.ReadOnlyHint, InputSchema: t.InputSchema})
	}
	return out, nil
}

func (h hostMCP) Call(ctx context.Context, server, tool string, args json.RawMessage) (any, error) {
	set, err := h.set()
	if err != nil {
		return nil, err
	}
	res, err := set.Call(ctx, server, tool, args)
	if err != nil {
		return nil, mcpError(err)
	}
	if res.IsError {
		var texts []string
		for _, c := range res.Content {
			if t, ok := c.(*mcp.TextContent); ok {
				texts = append(texts, t.Text)
			}
		}
		return nil, &hostsvc.MCPError{Code: "tool_error", Message: strings.Join(texts, "\n")}
	}
	return res, nil
}

func (h hostMCP) Resources(ctx context.Context, server string) (any, error) {
	set, err := h.set()
	if err != nil {
		return nil, err
	}
	res, tmpl, err := set.Resources(ctx, server)
	if err != nil {
		return nil, mcpError(err)
	}
	if res == nil {
		res = []*mcp.Resource{}
	}
	if tmpl == nil {
		tmpl = []*mcp.ResourceTemplate{}
	}
	return map[string]any{"resources": res, "templates": tmpl}, nil
}

func (h hostMCP) Read(ctx context.Context, server, uri string) (any, error) {
	set, err := h.set()
	if err != nil {
		return nil, err
	}
	res, err := set.Read(ctx, server, uri)
	return res, mcpError(err)
}

func (h hostMCP) Prompts(ctx context.Context, server string) (any, error) {
	set, err := h.set()
	if err != nil {
		return nil, err
	}
	ps, err := set.Prompts(ctx, server)
	if err != nil {
		return nil, mcpError(err)
	}
	if ps == nil {
		ps = []*mcp.Prompt{}
	}
	return ps, nil
}

// MCPServer is a server as the faces list it: where it runs, how it
// stands in the session, and what it offers as den knows it.
type MCPServer struct {
	Name    string      `json:"name"`
	Where   string      `json:"where"` // "computer", "host", or the transport and host
	Host    bool        `json:"host"`
	State   string      `json:"state"`
	Error   string      `json:"error,omitempty"`
	Tools   []MCPTool   `json:"tools"`
	Prompts []MCPPrompt `json:"prompts"`
}

// MCPTool is one tool of a server.
type MCPTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	ReadOnly    bool   `json:"read_only"`
	Decision    string `json:"decision"` // what the gate does with a call: allow, ask or deny
}

// MCPPrompt is one prompt of a server, as /SERVER:NAME.
type MCPPrompt struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Arguments   []string `json:"arguments"`
	Required    []string `json:"required"`
}

// MCP lists the session's MCP servers: their state in this process
// (idle when the session is not running here) and what they offer as
// den last saw it. Nothing is started.
func (r *Runtime) MCP(ctx context.Context, sessionID string) ([]MCPServer, error) {
	sess, err := r.st.GetSession(ctx, sessionID)
	if err != nil {
		return nil, err
	}
	set, done := r.liveMCP(sessionID)
	if set == nil {
		set = mcpclient.NewSet(mcpclient.Options{Agent: sess.Agent, Session: sess.ID, Servers: r.mcpServers(sess.ID, sess.Agent), DataDir: r.o.DataDir})
		done = set.Close
	}
	defer done()
	return r.describeMCP(set, sess.Agent), nil
}

// AgentMCP is MCP for an agent's sessions to come: its servers as the
// config has them, with what den knows of their tools and prompts,
// starting none.
func (r *Runtime) AgentMCP(agentName string) []MCPServer {
	set := mcpclient.NewSet(mcpclient.Options{Agent: agentName, Servers: r.mcpServers("", agentName), DataDir: r.o.DataDir})
	defer set.Close()
	return r.describeMCP(set, agentName)
}

// describeMCP says what set's servers offer and how the gate decides
// their tools for the agent.
func (r *Runtime) describeMCP(set *mcpclient.Set, agentName string) []MCPServer {
	ac := r.Config().Agent(agentName)
	policy, _ := permission.ParsePolicy(ac.Trust, ac.Permissions, ac.AllowedModels)
	out := []MCPServer{}
	for _, st := range set.Status() {
		s := st.Server
		v := MCPServer{Name: s.Name, Where: s.Where(), Host: s.Type == mcpclient.Stdio && s.Host, State: string(st.State), Error: st.Error,
			Tools: []MCPTool{}, Prompts: []MCPPrompt{}}
		tools, prompts := set.Known(s.Name)
		for _, t := range tools {
			if !s.Shows(t.Name) {
				continue
			}
			ro := t.Annotations != nil && t.Annotations.ReadOnlyHint
			v.Tools = append(v.Tools, MCPTool{Name: t.Name, Description: t.Description, ReadOnly: ro, Decision: string(s.Decide(policy, t.Name, ro))})
		}
		for _, p := range prompts {
			mp := MCPPrompt{Name: p.Name, Description: p.Description, Arguments: []string{}, Required: []string{}}
			for _, a := range p.Arguments {
				mp.Arguments = append(mp.Arguments, a.Name)
				if a.Required {
					mp.Required = append(mp.Required, a.Name)
				}
			}
			v.Prompts = append(v.Prompts, mp)
		}
		out = append(out, v)
	}
	return out
}
