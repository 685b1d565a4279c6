package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"den.dev/den/internal/resource"
)

// ListedSessions is how many of the agent's latest sessions
// resources/list lists.
const ListedSessions = 100

// addResources registers den://sessions/ID, a template per den:// kind
// of folder, and the listing of sessions.
func (s *Server) addResources() {
	s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{Name: "session", Title: "A den session",
		URITemplate: sessionsPrefix + "{id}", MIMEType: "text/markdown",
		Description: "A session's latest messages as text: what was asked, what den's agent answered, the tools it ran."},
		s.readSessionResource)
	for _, k := range resource.Kinds() {
		s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{Name: string(k), Title: "den's " + k.Guest(),
			URITemplate: resource.Scheme + string(k) + "/{+path}",
			Description: "A file (or folder) of " + k.Guest() + " in den's computer, in the session this connection used last " +
				"(else the one named after the client)."},
			s.readFileResource)
	}
	s.mcp.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			r, ok := req.(*mcp.ListResourcesRequest)
			if method != "resources/list" || !ok {
				return next(ctx, method, req)
			}
			return s.listResources(ctx, r)
		}
	})
}

// listResources lists the default agent's latest sessions, as a
// sessions_list call.
func (s *Server) listResources(ctx context.Context, req *mcp.ListResourcesRequest) (*mcp.ListResourcesResult, error) {
	c := &call{client: s.clientName(req.ClientInfo()), tool: "sessions_list", ss: req.Session}
	out, err := s.sessions(ctx, c, SessionsIn{Limit: ListedSessions})
	if err != nil {
		return nil, s.toolError("resources/list", err)
	}
	res := &mcp.ListResourcesResult{Resources: []*mcp.Resource{}}
	for _, sess := range out.Sessions {
		title := sess.Title
		if title == "" {
			title = "(untitled)"
		}
		res.Resources = append(res.Resources, &mcp.Resource{URI: sess.URI, Name: sess.ID, Title: title, MIMEType: "text/markdown",
			Description: "den session of agent " + out.Agent + ", " + sess.Status})
	}
	return res, nil
}

// readSessionResource reads den://sessions/ID, as a session_read call.
func (s *Server) readSessionResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id := strings.TrimPrefix(uri, sessionsPrefix)
	if id == "" || strings.ContainsAny(id, "/?#") {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	c := &call{client: s.clientName(req.ClientInfo()), tool: "session_read", ss: req.Session}
	out, err := s.readSession(ctx, c, "", id, MessagesDefault)
	if err != nil {
		return nil, s.toolError("session_read", err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: transcript(out)}}}, nil
}

// readFileResource reads a den:// URL in the connection's current
// session, as a read_file call: a file whole (up to ReadMax bytes), a
// folder as list_files lists it (JSON).
func (s *Server) readFileResource(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	u, err := resource.Parse(uri)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	c := &call{client: s.clientName(req.ClientInfo()), tool: "read_file", ss: req.Session}
	p, ok := s.placeOf(req.Session)
	if !ok {
		if p, err = s.locate(ctx, c.client, "", ""); err != nil {
			return nil, s.toolError("read_file", err)
		}
	}
	pc, err := s.allow(ctx, c, p, "in session "+p.label(), u.Guest())
	if err != nil {
		return nil, s.toolError("read_file", err)
	}
	contents, err := s.resourceContents(ctx, p, u)
	s.done(ctx, pc, exitOf(err))
	if err != nil {
		return nil, s.toolError("read_file", err)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{contents}}, nil
}

// resourceContents is the file or folder u names, as a resource's
// contents.
func (s *Server) resourceContents(ctx context.Context, p place, u resource.URL) (*mcp.ResourceContents, error) {
	listing := func() (*mcp.ResourceContents, error) {
		l, err := s.list(ctx, p, u)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(l)
		if err != nil {
			return nil, err
		}
		return &mcp.ResourceContents{URI: u.String(), MIMEType: "application/json", Text: string(b)}, nil
	}
	if u.Path == "" {
		return listing()
	}
	data, size, err := s.readAt(ctx, p, u, 0, ReadMax)
	var r *refusal
	switch {
	case errors.As(err, &r) && r.folder:
		return listing()
	case err != nil:
		return nil, err
	case size > int64(len(data)):
		return nil, refusedf("%s is %d bytes, more than a resource holds (%d): read it in parts with read_file", u.Guest(), size, ReadMax)
	}
	mt := mime.TypeByExtension(path.Ext(u.Path))
	if !utf8.Valid(data) {
		if mt == "" {
			mt = "application/octet-stream"
		}
		return &mcp.ResourceContents{URI: u.String(), MIMEType: mt, Blob: data}, nil
	}
	if mt == "" {
		mt = "text/plain; charset=utf-8"
	}
	return &mcp.ResourceContents{URI: u.String(), MIMEType: mt, Text: string(data)}, nil
}
