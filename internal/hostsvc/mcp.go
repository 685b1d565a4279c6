package hostsvc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"unicode"
)

// MCP is the session's MCP servers, as den-mcp uses them.
type MCP interface {
	Servers() []MCPServer
	Tools(ctx context.Context, server string) ([]MCPTool, error)
	// Call calls a tool, decided by the permission gate as the model's
	// own call of it is; the result is the server's, as MCP words it.
	Call(ctx context.Context, server, tool string, args json.RawMessage) (any, error)
	Resources(ctx context.Context, server string) (any, error)
	Read(ctx context.Context, server, uri string) (any, error)
	Prompts(ctx context.Context, server string) (any, error)
}

// MCPServer is one server for den-mcp list.
type MCPServer struct {
	Name  string `json:"name"`
	Where string `json:"where"` // "computer", "host", or the transport and host
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	Tools int    `json:"tools"` // known tools; -1 before den first listed them
}

// MCPTool is one tool for den-mcp tools.
type MCPTool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	ReadOnly    bool   `json:"read_only"`
	InputSchema any    `json:"input_schema"`
}

// MCPError is a failure of den-mcp with the envelope's code
// (invalid_args for an unknown server, authorization_denied,
// not_available for a server den cannot reach, tool_error for a tool
// that failed).
type MCPError struct{ Code, Message string }

func (e *MCPError) Error() string { return e.Message }

// maxMCPArgs bounds a tool call's JSON arguments.
const maxMCPArgs = 1 << 20

var mcpServerName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,47}$`)

func (s *Service) parseMCP(c *Call) (*Plan, *Result) {
	if s.MCP == nil {
		return nil, unavailable("", "MCP servers are not available here")
	}
	if len(c.Args) == 0 {
		return nil, invalid("", "want list, tools SERVER, call SERVER TOOL [JSON], resources SERVER, read SERVER URI or prompts SERVER")
	}
	action := c.Args[0]
	args, bad := newFlags("den-mcp "+action).parse(action, c.Args[1:])
	if bad != nil {
		return nil, bad
	}
	want := map[string][]int{"list": {0}, "tools": {1}, "call": {2, 3}, "resources": {1}, "read": {2}, "prompts": {1}}
	counts, known := want[action]
	switch {
	case !known:
		return nil, invalid("", "unknown action %q: want list, tools, call, resources, read or prompts", action)
	case !containsInt(counts, len(args)):
		return nil, invalid(action, "wrong number of arguments; usage: den-mcp list | tools SERVER | call SERVER TOOL [JSON] | resources SERVER | read SERVER URI | prompts SERVER")
	}
	server := ""
	if len(args) > 0 {
		server = args[0]
		if !mcpServerName.MatchString(server) {
			return nil, invalid(action, "%q is not a server's name", server)
		}
	}
	run := func(f func(ctx context.Context) (any, error)) func(ctx context.Context) Result {
		return func(ctx context.Context) Result {
			data, err := f(ctx)
			if err != nil {
				var me *MCPError
				if errors.As(err, &me) {
					return fail(action, me.Code, "%s", me.Message)
				}
				return fail(action, CodeInternal, "%v", err)
			}
			return ok(action, data)
		}
	}
	switch action {
	case "list":
		return plan("list", "", "", run(func(ctx context.Context) (any, error) {
			list := s.MCP.Servers()
			if list == nil {
				list = []MCPServer{}
			}
			return list, nil
		}))
	case "tools":
		return plan("tools", server, "", run(func(ctx context.Context) (any, error) { return s.MCP.Tools(ctx, server) }))
	case "resources":
		return plan("resources", server, "", run(func(ctx context.Context) (any, error) { return s.MCP.Resources(ctx, server) }))
	case "prompts":
		return plan("prompts", server, "", run(func(ctx context.Context) (any, error) { return s.MCP.Prompts(ctx, server) }))
	case "read":
		uri := args[1]
		if uri == "" || strings.ContainsFunc(uri, unicode.IsControl) {
			return nil, invalid("read", "the URI is empty or holds control characters")
		}
		if bad := checkText("read", "the URI", uri, maxTarget); bad != nil {
			return nil, bad
		}
		return plan("read", server+" "+uri, "", run(func(ctx context.Context) (any, error) { return s.MCP.Read(ctx, server, uri) }))
	}
	// call SERVER TOOL [JSON]: the arguments from the command line or,
	// without them, standard input; one JSON object either way.
	tool := args[1]
	if tool == "" || len(tool) > 128 || strings.ContainsFunc(tool, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) }) {
		return nil, invalid("call", "%q is not a tool's name", tool)
	}
	var raw []byte
	if len(args) == 3 {
		raw = []byte(args[2])
	} else if c.Stdin != nil {
		var err error
		if raw, err = readAll(c.Stdin, maxMCPArgs); err != nil {
			return nil, invalid("call", "%v", err)
		}
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		raw = []byte("{}")
	}
	if len(raw) > maxMCPArgs {
		return nil, invalid("call", "the arguments are %d bytes: the most den-mcp takes is %d", len(raw), maxMCPArgs)
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&obj); err != nil || obj == nil || dec.More() {
		return nil, invalid("call", "the arguments must be one JSON object, such as '{\"path\": \"/tmp\"}'")
	}
	return plan("call", server+"/"+tool, "", run(func(ctx context.Context) (any, error) {
		return s.MCP.Call(ctx, server, tool, json.RawMessage(raw))
	}))
}

func containsInt(list []int, n int) bool {
	for _, x := range list {
		if x == n {
			return true
		}
	}
	return false
}
