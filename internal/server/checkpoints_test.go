package server

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// The undo routes of a session without checkpoints: an empty list, and
// 404 or 400 for what names none, without making its computer.
func TestCheckpointRoutesWithoutCheckpoints(t *testing.T) {
	a := newAPI(t, "", nil)
	ctx := context.Background()
	if err := a.st.EnsureAgent(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	s, err := a.st.CreateSession(ctx, "default", "")
	if err != nil {
		t.Fatal(err)
	}
	base := "/api/v1/sessions/" + s.ID + "/checkpoints"
	for _, c := range []struct {
		method, path string
		status       int
		want         string
	}{
		{"GET", base, http.StatusOK, `{"checkpoints":[]}`},
		{"GET", base + "/1/changes", http.StatusNotFound, "no checkpoint 1"},
		{"POST", base + "/1/restore", http.StatusNotFound, "no checkpoint 1"},
		{"GET", base + "/x/changes", http.StatusBadRequest, "checkpoint"},
		{"POST", base + "/0/restore", http.StatusBadRequest, "checkpoint"},
		{"GET", "/api/v1/sessions/nosuch/checkpoints", http.StatusNotFound, "not_found"},
	} {
		status, body := a.do(c.method, c.path, "")
		if status != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%s %s: %d %s, want %d and %q", c.method, c.path, status, body, c.status, c.want)
		}
	}
}
