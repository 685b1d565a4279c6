package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Where is where a tool acts: the fields every tool takes.
type Where struct {
	Agent   string `json:"agent,omitempty" jsonschema:"the agent whose computer to use (default: the server's, usually default)"`
	Session string `json:"session,omitempty" jsonschema:"a session's id, or a name of your choosing: each session has its own /workspace. Without it, the session named after you"`
}

// addTools registers the tools the server offers.
func (s *Server) addTools() {
	yes, no := true, false
	addTool(s, &mcp.Tool{Name: "run", Title: "Ask den's agent",
		Description: "Send a prompt to den's agent and wait for its answer. The agent works in its own Linux computer with its own tools " +
			"(shell, files, browser, memory) until it is done; progress notifications tell what it does. The session keeps the " +
			"conversation: call again with the same session to go on. Returns the answer and the session's id.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &yes}}, s.run)
	addTool(s, &mcp.Tool{Name: "exec", Title: "Run a command in den's computer",
		Description: "Run a shell command (/bin/sh) in den's persistent, isolated Linux computer, in the session's /workspace, " +
			"and return its output (stdout and stderr together) and exit code. Each call is a fresh shell; files and installed " +
			"packages stay. Output beyond 30000 characters is cut to its beginning and end, and the whole is saved in a file " +
			"named in full_output (read it with read_file). Usually needs the user's approval in den.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &yes}}, s.exec)
	addTool(s, &mcp.Tool{Name: "read_file", Title: "Read a file of den's computer",
		Description: "Read a file of the session's folders in den's computer: /workspace (paths relative to it, or absolute), " +
			"/den/offloads (full outputs), /den/attachments, and the agent's /den/memory, /den/skills and /den/shared; den:// URLs " +
			"name them too. Text comes as UTF-8, anything else as base64. Large files are read in parts (offset, limit).",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}}, s.readFile)
	addTool(s, &mcp.Tool{Name: "write_file", Title: "Write a file in den's computer",
		Description: "Write a file in the session's /workspace in den's computer (the folders on its way are made), " +
			"replacing a file that is there. content is UTF-8 text, or base64 with encoding base64.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes, IdempotentHint: true, OpenWorldHint: &no}}, s.writeFile)
	addTool(s, &mcp.Tool{Name: "list_files", Title: "List a folder of den's computer",
		Description: "List a folder of the session's folders in den's computer (default /workspace): each entry's name, type, " +
			"size, modification time and mode. A symbolic link is listed as a link, with its target.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}}, s.listFiles)
	addTool(s, &mcp.Tool{Name: "sessions_list", Title: "List den's sessions",
		Description: "List an agent's sessions (conversations, each with its own /workspace), the latest first; query searches " +
			"their titles and messages.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}}, s.sessionsList)
	addTool(s, &mcp.Tool{Name: "session_read", Title: "Read a den session",
		Description: "Read a session's latest messages as text: what was asked, what den's agent answered, and the tools it ran.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}}, s.sessionRead)
}

// handler is a tool's work: it gets the call (who, for the gate) and
// its input, and returns its result (nil: the SDK's, from out) and
// output.
type handler[In, Out any] func(ctx context.Context, c *call, in In) (*mcp.CallToolResult, Out, error)

// addTool registers t with h if the server offers it: its schemas come
// from In and Out, its errors are told as toolError tells them.
func addTool[In, Out any](s *Server, t *mcp.Tool, h handler[In, Out]) {
	if !s.offers(t.Name) {
		return
	}
	mcp.AddTool(s.mcp, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		c := &call{client: s.clientName(req.ClientInfo()), tool: t.Name, ss: req.Session,
			progress: newProgress(ctx, req.Session, req.Params.GetProgressToken())}
		res, out, err := h(ctx, c, in)
		if err != nil {
			var zero Out
			return nil, zero, s.toolError(t.Name, err)
		}
		return res, out, nil
	})
}
