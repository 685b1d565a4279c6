package server

import (
	"den.dev/den/internal/computer"
	"net/http"

	"den.dev/den/internal/server/reply"
)

// listMCP is a session's MCP servers, for the composer's suggestions
// (/SERVER:PROMPT) and the faces (GET /api/v1/mcp?session=ID): each
// server's name, where it runs ("computer", "host", or the transport
// and host), its state in this process, and its tools (with what the
// gate does with a call) and prompts as den last saw them. Nothing is
// started to answer.
func (s *Server) listMCP(w http.ResponseWriter, r *http.Request) error {
	id := r.URL.Query().Get("session")
	if id == "" {
		name := r.URL.Query().Get("agent")
		if name == "" {
			return badRequest("session or agent is required")
		}
		if err := computer.ValidName("agent", name); err != nil {
			return badRequest("%v", err)
		}
		return reply.JSON(w, http.StatusOK, map[string]any{"agent": name, "servers": s.rt.AgentMCP(name)})
	}
	servers, err := s.rt.MCP(r.Context(), id)
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, map[string]any{"session": id, "servers": servers})
}
