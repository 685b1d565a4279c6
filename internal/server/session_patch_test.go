package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestPatchSession: a session's memory is turned off, on, and back to
// its agent's default, and its title changed; bad values are refused.
func TestPatchSession(t *testing.T) {
	a := newAPI(t, "[agents.default]\nremember = false\n", nil)
	ctx := context.Background()
	a.st.EnsureAgent(ctx, "default")
	sess, err := a.st.CreateSession(ctx, "default", "anthropic/claude-sonnet-5-5")
	if err != nil {
		t.Fatal(err)
	}
	path := "/api/v1/sessions/" + sess.ID
	if code, body := a.do("GET", path, ""); code != http.StatusOK || !strings.Contains(body, `"memory":false`) {
		t.Fatalf("GET with remember = false: %d %s", code, body)
	}
	for _, c := range []struct {
		body, want string
	}{
		{`{"memory": true}`, `"memory":true`},
		{`{"memory": false}`, `"memory":false`},
		{`{"memory": null}`, `"memory":false`},
		{`{"title": "Trip to Lisbon"}`, `"title":"Trip to Lisbon"`},
	} {
		if code, body := a.do("PATCH", path, c.body); code != http.StatusOK || !strings.Contains(body, c.want) {
			t.Errorf("PATCH %s: %d %s", c.body, code, body)
		}
	}
	a.do("PATCH", path, `{"memory": true}`)
	if code, body := a.do("GET", path, ""); !strings.Contains(body, `"memory":true`) {
		t.Errorf("GET after turning memory on: %d %s", code, body)
	}
	for _, bad := range []string{`{}`, `{"memory": "yes"}`, `{"title": ""}`, `{"title": "two\nlines"}`, `{"colour": "red"}`} {
		if code, body := a.do("PATCH", path, bad); code != http.StatusBadRequest {
			t.Errorf("PATCH %s: %d %s", bad, code, body)
		}
	}
	if code, _ := a.do("PATCH", "/api/v1/sessions/nosuch", `{"memory": true}`); code != http.StatusNotFound {
		t.Errorf("PATCH of a missing session: %d", code)
	}
}
