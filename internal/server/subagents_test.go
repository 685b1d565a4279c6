package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestSubagentRoutes: a session's sub-agents are started, listed,
// described (waiting for them to be done), steered and canceled
// through the API; sessions show their parent; limits and bad input
// get their status. (The computer cannot start here: the sub-agent's
// run ends with that error, which its description carries.)
func TestSubagentRoutes(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-test")
	a := newAPI(t, "[profiles.helper]\ndescription = \"helps\"\n\n[agents.bob]\n", nil)
	parent, err := a.rt.Create(context.Background(), "default", "anthropic/claude-sonnet-5-5")
	if err != nil {
		t.Fatal(err)
	}
	base := "/api/v1/sessions/" + parent.ID + "/subagents"
	code, body := a.do("POST", base, `{"task": "count the stars", "profile": "helper"}`)
	if code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	var sa struct {
		ID, Parent, Profile, Agent, Title, Ended, Error string
		Done                                            bool
	}
	json.Unmarshal([]byte(body), &sa)
	if sa.ID == "" || sa.Parent != parent.ID || sa.Profile != "helper" || sa.Agent != "default" || sa.Title != "count the stars" {
		t.Errorf("started %s", body)
	}
	code, body = a.do("GET", base+"/"+sa.ID+"?wait=20s", "")
	json.Unmarshal([]byte(body), &sa)
	if code != http.StatusOK || !sa.Done || sa.Ended != "error" || !strings.Contains(sa.Error, "no computers") {
		t.Errorf("wait: %d %s", code, body)
	}
	code, body = a.do("GET", base, "")
	if code != http.StatusOK || !strings.Contains(body, sa.ID) {
		t.Errorf("list: %d %s", code, body)
	}
	code, body = a.do("GET", "/api/v1/sessions", "")
	if code != http.StatusOK || !strings.Contains(body, `"parent":"`+parent.ID+`"`) {
		t.Errorf("sessions: %d %s", code, body)
	}
	if code, body = a.do("POST", base+"/"+sa.ID+"/messages", `{"text": "and the moons"}`); code != http.StatusAccepted {
		t.Errorf("steer: %d %s", code, body)
	}
	if code, body = a.do("POST", base+"/"+sa.ID+"/cancel", ""); code != http.StatusOK || !strings.Contains(body, `"done":true`) {
		t.Errorf("cancel: %d %s", code, body)
	}
	for _, c := range []struct {
		method, target, body string
		want                 int
		code                 string
	}{
		{"POST", base, `{"task": ""}`, http.StatusBadRequest, "bad_request"},
		{"POST", base, `{"task": "x", "profile": "nosuch"}`, http.StatusBadRequest, "bad_request"},
		{"POST", base, `{"task": "x", "agent": "../etc"}`, http.StatusBadRequest, "bad_request"},
		{"POST", "/api/v1/sessions/nosuch/subagents", `{"task": "x"}`, http.StatusNotFound, "not_found"},
		{"GET", base + "/" + parent.ID, "", http.StatusNotFound, "not_found"},
		{"GET", base + "/" + sa.ID + "?wait=forever", "", http.StatusBadRequest, "bad_request"},
		// A sub-agent starts none (max_depth 1).
		{"POST", "/api/v1/sessions/" + sa.ID + "/subagents", `{"task": "x"}`, http.StatusTooManyRequests, "limit_reached"},
		{"POST", "/api/v1/agents/nobody/inbox", `{"text": "hi"}`, http.StatusNotFound, "not_found"},
		{"POST", "/api/v1/agents/bob/inbox", `{"text": "hi", "from": "` + parent.ID + `"}`, http.StatusAccepted, ""},
	} {
		code, body := a.do(c.method, c.target, c.body)
		if code != c.want || !strings.Contains(body, c.code) {
			t.Errorf("%s %s %s: %d %s, want %d %s", c.method, c.target, c.body, code, body, c.want, c.code)
		}
	}
}
