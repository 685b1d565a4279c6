package server

import "net/http"

// browserState answers GET /api/v1/sessions/{id}/browser: whether the
// session's browser runs here, and its tabs (see browserview).
func (s *Server) browserState(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.st.GetSession(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	return s.view.State(w, r)
}

// browserScreencast answers GET /api/v1/sessions/{id}/browser/screencast:
// the WebSocket that streams the session's current tab and lets the
// user take it over.
func (s *Server) browserScreencast(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.st.GetSession(r.Context(), r.PathValue("id")); err != nil {
		return err
	}
	return s.view.Serve(w, r)
}
