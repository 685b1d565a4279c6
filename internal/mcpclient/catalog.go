package mcpclient

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"den.dev/den/internal/privfile"
)

// catalog remembers, per agent, what each server offered when den last
// asked (its tools and prompts), so that a session can show the model a
// server's tools without starting the server: it starts at the first
// call. An entry is for one fingerprint (how the server is reached);
// a server reached differently is asked again.
type catalog struct{ dir string }

type entry struct {
	Fingerprint string        `json:"fingerprint"`
	Updated     time.Time     `json:"updated"`
	Tools       []*mcp.Tool   `json:"tools"`
	Prompts     []*mcp.Prompt `json:"prompts,omitempty"`
}

func (c *catalog) path(server string) string { return filepath.Join(c.dir, server+".json") }

// get is what the server offered, or nil when den does not know.
func (c *catalog) get(s *Server) *entry {
	if c == nil || c.dir == "" {
		return nil
	}
	data, _, err := privfile.Read(c.path(s.Name), 16<<20)
	if err != nil {
		return nil
	}
	var e entry
	if json.Unmarshal(data, &e) != nil || e.Fingerprint != s.Fingerprint() {
		return nil
	}
	return &e
}

// put records what the server offers.
func (c *catalog) put(s *Server, e *entry) error {
	if c == nil || c.dir == "" {
		return nil
	}
	e.Fingerprint, e.Updated = s.Fingerprint(), time.Now().UTC()
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if err := privfile.Replace(c.path(s.Name), data); err != nil {
		return fmt.Errorf("mcp: remember the tools of %s: %w", s.Name, err)
	}
	return nil
}
