package server

import (
	"encoding/json"
	"net/http"
	"strconv"

	"den.dev/den/internal/event"
	"den.dev/den/internal/server/reply"
	"den.dev/den/internal/store"
)

// maxConnections bounds one page of GET /api/v1/network.
const maxConnections = 500

// network lists the computers' connections, newest first, as their
// "egress" events: ?agent=, ?session=, ?denied=1, ?limit= (100 by
// default, at most 500) and ?before= (an event id, for the next page).
func (s *Server) network(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	f := store.EgressFilter{Agent: q.Get("agent"), Session: q.Get("session"), Denied: q.Get("denied") == "1", Limit: 100}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxConnections {
			return badRequest("limit %q: want 1 to %d", v, maxConnections)
		}
		f.Limit = n
	}
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return badRequest("before %q: want an event id", v)
		}
		f.Before = n
	}
	f.Limit++ // one more: is there a next page?
	evs, err := s.st.EgressEvents(r.Context(), f)
	if err != nil {
		return err
	}
	more := len(evs) == f.Limit
	if more {
		evs = evs[:len(evs)-1]
	}
	out := make([]json.RawMessage, 0, len(evs))
	for _, e := range evs {
		b, err := event.Marshal(e)
		if err != nil {
			continue
		}
		out = append(out, b)
	}
	return reply.JSON(w, http.StatusOK, map[string]any{"connections": out, "more": more})
}
