package server

import (
	"errors"
	"net/http"
	"time"

	"den.dev/den/internal/secret"
	"den.dev/den/internal/server/reply"
)

// secretJSON is a secret as the API shows it: never its value.
type secretJSON struct {
	Name    string    `json:"name"`
	Hosts   []string  `json:"hosts"`
	Header  string    `json:"header,omitempty"`
	Query   string    `json:"query,omitempty"`
	Basic   string    `json:"basic,omitempty"`
	Agents  []string  `json:"agents"`
	Created time.Time `json:"created"`
}

func secretOf(s secret.Secret) secretJSON {
	out := secretJSON{Name: s.Name, Hosts: s.Hosts, Header: s.Header, Query: s.Query, Basic: s.Basic, Agents: s.Agents, Created: s.Created}
	if out.Agents == nil {
		out.Agents = []string{}
	}
	return out
}

// secrets lists the secrets: names, hosts and forms, never values.
func (s *Server) secrets(w http.ResponseWriter, r *http.Request) error {
	if s.o.Secrets == nil {
		return notFound("secrets are not served here")
	}
	list, err := s.o.Secrets.List()
	if err != nil {
		return err
	}
	out := make([]secretJSON, len(list))
	for i, x := range list {
		out[i] = secretOf(x)
	}
	return reply.JSON(w, http.StatusOK, map[string]any{"secrets": out})
}

// putSecret sets a secret: {"value", "hosts", "header" | "query" |
// "basic", "agents"}. Without a value, an existing secret keeps its
// own (its binding changes). The answer never holds the value.
func (s *Server) putSecret(w http.ResponseWriter, r *http.Request) error {
	if s.o.Secrets == nil {
		return notFound("secrets are not served here")
	}
	var req struct {
		Value  string   `json:"value"`
		Hosts  []string `json:"hosts"`
		Header string   `json:"header"`
		Query  string   `json:"query"`
		Basic  string   `json:"basic"`
		Agents []string `json:"agents"`
	}
	if err := decode(r, &req); err != nil {
		return err
	}
	x := secret.Secret{Name: r.PathValue("name"), Value: req.Value, Hosts: req.Hosts, Header: req.Header, Query: req.Query, Basic: req.Basic, Agents: req.Agents}
	if err := secret.ValidName(x.Name); err != nil {
		return badRequest("%v", err)
	}
	if x.Value == "" {
		list, err := s.o.Secrets.List()
		if err != nil {
			return err
		}
		for _, old := range list {
			if old.Name == x.Name {
				x.Value, x.Created = old.Value, old.Created
			}
		}
	}
	if err := x.Validate(); err != nil {
		return badRequest("%v", err)
	}
	if err := s.o.Secrets.Set(x); err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, secretOf(x))
}

// deleteSecret removes a secret.
func (s *Server) deleteSecret(w http.ResponseWriter, r *http.Request) error {
	if s.o.Secrets == nil {
		return notFound("secrets are not served here")
	}
	if err := s.o.Secrets.Remove(r.PathValue("name")); err != nil {
		if errors.Is(err, secret.ErrNotFound) {
			return notFound("no secret %s", r.PathValue("name"))
		}
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
