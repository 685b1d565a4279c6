package mcpclient

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"den.dev/den/internal/agent/ctxwin"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/tool"
)

// The budget of MCP tools in a request. A server whose tool
// definitions would take more than ServerShare of the model's context
// window is offered through the one tool ProxyName instead of its
// own tools; so are the largest servers when all servers' tools would
// take more than TotalShare together, or be more than MaxDirectTools
// (OpenAI takes at most 128 tools a request, and den's own come
// first).
const (
	ServerShare    = 0.05
	TotalShare     = 0.15
	MaxDirectTools = 100
	// ProxyName is the tool through which servers over the budget are
	// offered: actions list, describe and call.
	ProxyName = "mcp"
	// minWindow is the window assumed for a model whose window den
	// does not know.
	minWindow = 32000
)

// Offer is what the model gets of the set's servers for one turn.
type Offer struct {
	// Tools are den tools: mcp__SERVER__TOOL for each tool of the
	// servers within the budget, and ProxyName when a server is not.
	Tools []tool.Tool
	// Prompt is the system prompt's section on MCP ("" without
	// servers).
	Prompt string
	// Warnings say what the model is not offered and why (servers den
	// could not list, tools whose schema den cannot use).
	Warnings []string
}

// offered is one server's part of an offer.
type offered struct {
	srv    *Server
	tools  []*modelTool
	tokens int
	err    error
	proxy  bool // through ProxyName
}

// Offer lists what the servers offer (without starting a server den
// has listed before: see the package doc) and makes the tools of the
// turn, within the budget of the model's context window (tokens; 0
// when unknown).
func (s *Set) Offer(ctx context.Context, window int) Offer {
	if len(s.servers) == 0 {
		return Offer{}
	}
	window = max(window, minWindow)
	parts := make([]*offered, len(s.servers))
	var wg sync.WaitGroup
	for i, srv := range s.servers {
		parts[i] = &offered{srv: srv}
		wg.Go(func() {
			e, err := s.offers(ctx, srv.Name, false)
			if err != nil {
				parts[i].err = err
				return
			}
			parts[i].tools = s.convert(srv, e.Tools)
		})
	}
	wg.Wait()

	var out Offer
	var refs []ToolRef
	for _, p := range parts {
		for _, t := range p.tools {
			if t.problem != "" {
				out.Warnings = append(out.Warnings, t.problem)
				continue
			}
			refs = append(refs, ToolRef{p.srv.Name, t.def.Name})
		}
	}
	names := ModelNames(refs)
	for _, p := range parts {
		p.tools = slices.DeleteFunc(p.tools, func(t *modelTool) bool { return t.problem != "" })
		for _, t := range p.tools {
			t.spec.Name = names[ToolRef{p.srv.Name, t.def.Name}]
			p.tokens += ctxwin.EstimateFixed("", []llm.Tool{t.spec})
		}
	}
	budget(parts, window)
	var proxied []*offered
	for _, p := range parts {
		switch {
		case p.err != nil:
			out.Warnings = append(out.Warnings, fmt.Sprintf("MCP server %s is unavailable: %v", p.srv.Name, p.err))
		case p.proxy:
			proxied = append(proxied, p)
		default:
			for _, t := range p.tools {
				out.Tools = append(out.Tools, t)
			}
		}
	}
	if len(proxied) > 0 {
		out.Tools = append(out.Tools, &proxyTool{set: s, parts: parts})
	}
	out.Prompt = prompt(parts)
	return out
}

// budget marks the servers offered through the proxy.
func budget(parts []*offered, window int) {
	per := int(float64(window) * ServerShare)
	total := int(float64(window) * TotalShare)
	var direct []*offered
	for _, p := range parts {
		if p.err != nil || len(p.tools) == 0 {
			continue
		}
		if p.tokens > per {
			p.proxy = true
			continue
		}
		direct = append(direct, p)
	}
	// The largest go first, until the rest fit.
	sort.SliceStable(direct, func(i, j int) bool { return direct[i].tokens > direct[j].tokens })
	sum, count := 0, 0
	for _, p := range direct {
		sum += p.tokens
		count += len(p.tools)
	}
	for _, p := range direct {
		if sum <= total && count <= MaxDirectTools {
			break
		}
		p.proxy = true
		sum -= p.tokens
		count -= len(p.tools)
	}
}

// convert makes the model's tools of a server's tools: those its
// filter shows, each with its schema in den's subset; a tool whose
// schema den cannot use carries a problem instead.
func (s *Set) convert(srv *Server, defs []*mcp.Tool) []*modelTool {
	var out []*modelTool
	for _, d := range defs {
		if d == nil || d.Name == "" || !srv.Shows(d.Name) {
			continue
		}
		t := &modelTool{set: s, srv: srv, def: d, readOnly: d.Annotations != nil && d.Annotations.ReadOnlyHint}
		raw, err := json.Marshal(d.InputSchema)
		if err == nil {
			t.schema, err = convertSchema(raw)
		}
		if err != nil {
			t.problem = fmt.Sprintf("the tool %s of MCP server %s is left out: %v", d.Name, srv.Name, err)
			out = append(out, t)
			continue
		}
		t.spec = llm.Tool{Description: toolDescription(srv, d), Schema: mustJSON(t.schema)}
		out = append(out, t)
	}
	return out
}

// toolDescription is the description the model reads: the server's,
// clipped, after a word on whose tool it is.
func toolDescription(srv *Server, d *mcp.Tool) string {
	desc := strings.TrimSpace(d.Description)
	if desc == "" && d.Annotations != nil {
		desc = d.Annotations.Title
	}
	head := fmt.Sprintf("[MCP server %s, %s] ", srv.Name, placeShort(srv))
	return clip(head+desc, maxDescription)
}

func placeShort(srv *Server) string {
	switch srv.Place() {
	case permission.MCPOnHost:
		return "on the host"
	case permission.MCPRemote:
		return "remote"
	}
	return "in your computer"
}

// prompt is the system prompt's section.
func prompt(parts []*offered) string {
	var b strings.Builder
	b.WriteString("# MCP servers\n")
	b.WriteString("The user connected these MCP servers; their tools are yours, named mcp__SERVER__TOOL.\n")
	var proxied, failed []*offered
	for _, p := range parts {
		switch {
		case p.err != nil:
			failed = append(failed, p)
			continue
		case p.proxy:
			proxied = append(proxied, p)
		}
		fmt.Fprintf(&b, "- %s (%s): %d tools", p.srv.Name, placeWords(p.srv), len(p.tools))
		if p.proxy {
			b.WriteString(", through the mcp tool")
		}
		if p.srv.Note != "" {
			b.WriteString(" — " + p.srv.Note)
		}
		b.WriteByte('\n')
	}
	if len(proxied) > 0 {
		var names []string
		for _, p := range proxied {
			names = append(names, p.srv.Name)
		}
		fmt.Fprintf(&b, "The tools of %s would take too much of your context, so they are not listed as tools: call the tool mcp with action \"list\" (and a server) to see them, \"describe\" for one tool's input, then \"call\" with its arguments.\n", strings.Join(names, ", "))
	}
	for _, p := range failed {
		fmt.Fprintf(&b, "- %s is unavailable right now: %s\n", p.srv.Name, firstLine(p.err.Error()))
	}
	b.WriteString("In your shell, den-mcp lists the servers, their tools, resources and prompts, reads a resource (den-mcp read SERVER URI) and calls a tool (den-mcp call SERVER TOOL JSON); see den-mcp --help.\n")
	return b.String()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return clip(s, 300)
}

// modelTool is one server tool as a den tool.
type modelTool struct {
	set      *Set
	srv      *Server
	def      *mcp.Tool
	schema   *tool.Schema
	spec     llm.Tool
	readOnly bool
	problem  string
}

// Spec implements tool.Tool.
func (t *modelTool) Spec() llm.Tool { return t.spec }

// ReadOnly implements tool.Tool: the tool's readOnlyHint.
func (t *modelTool) ReadOnly(json.RawMessage) bool { return t.readOnly }

// Run implements tool.Tool.
func (t *modelTool) Run(ctx context.Context, env *tool.Env, input json.RawMessage) (tool.Result, error) {
	return t.set.run(ctx, env, t.srv, t.def.Name, t.readOnly, input)
}

// run calls a tool for the model: through the gate, within the call's
// timeout, its result made into den's (capped, offloaded, files saved).
func (s *Set) run(ctx context.Context, env *tool.Env, srv *Server, name string, readOnly bool, input json.RawMessage) (tool.Result, error) {
	c, err := s.client(srv.Name)
	if err != nil {
		return tool.Errorf("%v", err), nil
	}
	pc, err := s.check(ctx, srv, name, readOnly, input)
	if err != nil {
		if ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		return tool.Errorf("not run: %v. Ask the user, or do without it.", err), nil
	}
	res, err := c.call(ctx, name, input)
	if err != nil {
		pc.Finish(context.WithoutCancel(ctx), 1)
		if ctx.Err() != nil {
			return tool.Result{}, ctx.Err()
		}
		return tool.Errorf("%s of MCP server %s failed: %v", name, srv.Name, err), nil
	}
	out, err := s.result(ctx, env, srv, name, res)
	code := 0
	if out.IsError {
		code = 1
	}
	pc.Finish(context.WithoutCancel(ctx), code)
	return out, err
}

// proxyTool offers the tools of servers over the budget.
type proxyTool struct {
	set   *Set
	parts []*offered
}

// Spec implements tool.Tool.
func (p *proxyTool) Spec() llm.Tool {
	var names []string
	for _, o := range p.parts {
		if o.proxy {
			names = append(names, o.srv.Name)
		}
	}
	return llm.Tool{
		Name: ProxyName,
		Description: fmt.Sprintf("Use the tools of MCP servers whose tools are not listed as tools of their own (%s): "+
			"action \"list\" lists a server's tools (or the servers), \"describe\" gives one tool's description and input schema, "+
			"\"call\" calls it with arguments that follow that schema.", strings.Join(names, ", ")),
		Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "action": {"type": "string", "enum": ["list", "describe", "call"], "description": "What to do."},
    "server": {"type": "string", "description": "The MCP server (list without one lists the servers)."},
    "tool": {"type": "string", "description": "The server's name of the tool, for describe and call."},
    "arguments": {"type": "object", "description": "The tool's input, for call, as describe gives its schema."}
  },
  "required": ["action"],
  "additionalProperties": false
}`),
	}
}

// ReadOnly implements tool.Tool: list and describe read, and so does a
// call of a read-only tool.
func (p *proxyTool) ReadOnly(input json.RawMessage) bool {
	var in proxyInput
	if json.Unmarshal(input, &in) != nil || in.Action != "call" {
		return true
	}
	t, _ := p.find(in.Server, in.Tool)
	return t != nil && t.readOnly
}

type proxyInput struct {
	Action    string          `json:"action"`
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

func (p *proxyTool) find(server, name string) (*modelTool, *offered) {
	for _, o := range p.parts {
		if o.srv.Name != server {
			continue
		}
		for _, t := range o.tools {
			if t.def.Name == name {
				return t, o
			}
		}
		return nil, o
	}
	return nil, nil
}

// Run implements tool.Tool.
func (p *proxyTool) Run(ctx context.Context, env *tool.Env, input json.RawMessage) (tool.Result, error) {
	var in proxyInput
	if err := json.Unmarshal(input, &in); err != nil {
		return tool.Errorf("invalid input: %v", err), nil
	}
	var servers []string
	for _, o := range p.parts {
		if o.err == nil {
			servers = append(servers, o.srv.Name)
		}
	}
	t, o := p.find(in.Server, in.Tool)
	switch {
	case in.Action == "list" && in.Server == "":
		var b strings.Builder
		for _, o := range p.parts {
			if o.err != nil {
				fmt.Fprintf(&b, "%s: unavailable (%s)\n", o.srv.Name, firstLine(o.err.Error()))
				continue
			}
			fmt.Fprintf(&b, "%s (%s): %d tools\n", o.srv.Name, placeWords(o.srv), len(o.tools))
		}
		return tool.Text(b.String()), nil
	case o == nil:
		return tool.Errorf("no MCP server %q; the servers are: %s", in.Server, strings.Join(servers, ", ")), nil
	case o.err != nil:
		return tool.Errorf("MCP server %s is unavailable: %v", o.srv.Name, o.err), nil
	case in.Action == "list":
		var b strings.Builder
		for _, t := range o.tools {
			fmt.Fprintf(&b, "%s: %s\n", t.def.Name, firstLine(t.def.Description))
		}
		if b.Len() == 0 {
			b.WriteString("(no tools)")
		}
		s, err := tool.Capped(ctx, env, "mcp-"+o.srv.Name, b.String())
		return tool.Text(s), err
	case t == nil:
		var names []string
		for _, t := range o.tools {
			names = append(names, t.def.Name)
		}
		return tool.Errorf("MCP server %s has no tool %q; its tools are: %s", o.srv.Name, in.Tool, strings.Join(names, ", ")), nil
	case in.Action == "describe":
		schema, _ := json.MarshalIndent(t.schema, "", "  ")
		return tool.Text(fmt.Sprintf("%s (MCP server %s)\n%s\nInput schema:\n%s", t.def.Name, o.srv.Name, strings.TrimSpace(t.def.Description), schema)), nil
	}
	// call: the arguments checked against the tool's schema first, as
	// the registry checks a tool's own.
	args := in.Arguments
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		args = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return tool.Errorf("arguments: %v", err), nil
	}
	if err := t.schema.Validate(v); err != nil {
		return tool.Errorf("Invalid arguments for %s of %s: %v. Fix them (describe gives the schema) and call again.", t.def.Name, o.srv.Name, err), nil
	}
	return p.set.run(ctx, env, o.srv, t.def.Name, t.readOnly, args)
}
