package server

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResourcesRoute: the route is in the table, behind the token, and
// reads an agent's files by the agent's name through the runtime, with
// its errors mapped: a planted link 403, a bad URL or agent name 400,
// an unknown agent or session 404.
func TestResourcesRoute(t *testing.T) {
	a := newAPI(t, "", nil)
	dataDir := filepath.Dir(a.configPath)
	mem := filepath.Join(dataDir, "agents", "default", "memory")
	if err := os.MkdirAll(mem, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mem, "GLOBAL.md"), []byte("remember this\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/shadow", filepath.Join(mem, "shadow.md")); err != nil {
		t.Fatal(err)
	}
	target := func(kv ...string) string {
		q := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			q.Set(kv[i], kv[i+1])
		}
		return "/api/v1/resources?" + q.Encode()
	}

	ok := target("url", "den://memory/GLOBAL.md", "agent", "default")
	if IsPublic(httptest.NewRequest("GET", ok, nil)) {
		t.Error("the resources route needs no token")
	}
	w := a.serve("GET", ok, "")
	if w.Code != http.StatusOK || w.Body.String() != "remember this\n" || w.Header().Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("GET %s: %d %q %v", ok, w.Code, w.Body.String(), w.Header())
	}
	msg := a.fails("GET", target("url", "den://memory/shadow.md", "agent", "default"), "", http.StatusForbidden, "refused")
	if strings.Contains(msg, dataDir) {
		t.Errorf("the refusal names a host path: %s", msg)
	}
	a.fails("GET", target("url", "den://memory/../../../../etc/shadow", "agent", "default"), "", http.StatusBadRequest, "bad_request")
	a.fails("GET", target("url", "den://memory/%2e%2e/x", "agent", "default"), "", http.StatusBadRequest, "bad_request")
	a.fails("GET", target("url", "den://memory/GLOBAL.md", "agent", "../default"), "", http.StatusBadRequest, "bad_request")
	a.fails("GET", target("url", "den://memory/GLOBAL.md", "agent", "ghost"), "", http.StatusNotFound, "not_found")
	a.fails("GET", target("url", "den://memory/missing.md", "agent", "default"), "", http.StatusNotFound, "not_found")
	a.fails("GET", target("url", "den://workspace/a.txt", "session", "nosuch"), "", http.StatusNotFound, "not_found")
	a.fails("GET", target("url", "den://workspace/a.txt", "agent", "default"), "", http.StatusBadRequest, "bad_request")
	a.fails("GET", target("agent", "default"), "", http.StatusBadRequest, "bad_request")
	a.fails("POST", ok, "", http.StatusNotFound, "not_found")
}
