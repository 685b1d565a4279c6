package server

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"den.dev/den/internal/permission"
	"den.dev/den/internal/store"
)

// TestRules: the standing answers are listed (one agent's, or all) with
// their subjects as stored and as shown; a deleted one is gone, and the
// next call it covered asks again.
func TestRules(t *testing.T) {
	a := newAPI(t, "", nil)
	ctx := context.Background()
	odd := "it's\u202egpt" // a quote and a bidirectional override
	for _, r := range []store.Rule{
		{Agent: "default", Command: permission.CmdSessions, Action: "send", Decision: "allow"},
		{Agent: "default", Command: permission.CmdModel, Action: "run", Subject: odd, Decision: "deny"},
		{Agent: "writer", Command: permission.CmdSessions, Action: "send", Decision: "allow"},
	} {
		if err := a.st.AddRule(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	var got struct {
		Rules []ruleJSON `json:"rules"`
	}
	a.call("GET", "/api/v1/rules?agent=default", "", http.StatusOK, &got)
	want := []ruleJSON{
		{Agent: "default", Command: permission.CmdModel, Action: "run", Subject: odd, SubjectShown: `'it'\''s\u202egpt'`, Decision: "deny"},
		{Agent: "default", Command: permission.CmdSessions, Action: "send", Subject: "", SubjectShown: "(none)", Decision: "allow"},
	}
	ignoreTime := cmpopts.IgnoreFields(ruleJSON{}, "Created")
	if d := cmp.Diff(want, got.Rules, ignoreTime); d != "" {
		t.Errorf("rules of default (-want +got):\n%s", d)
	}
	if c := got.Rules[0].Created; c.IsZero() || time.Since(c) < 0 {
		t.Errorf("created %v", c)
	}
	a.call("GET", "/api/v1/rules", "", http.StatusOK, &got)
	if len(got.Rules) != 3 {
		t.Errorf("every agent's rules: %+v", got.Rules)
	}

	// The rule decides the call unasked; once deleted, the call asks (a
	// gate that cannot ask then denies it as unattended).
	gate := permission.New(a.st, "default", permission.Policy{}, permission.Options{Mode: permission.DenyAsks})
	send := permission.Request{Session: "s1", Command: permission.CmdSessions, Action: "send", Args: []string{"send", "x", "hi"}}
	check := func() permission.By {
		t.Helper()
		c, err := gate.Check(ctx, send)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Finish(ctx, 0); err != nil {
			t.Fatal(err)
		}
		return c.By
	}
	if by := check(); by != permission.ByRule {
		t.Fatalf("before the delete the call was decided by %s, want the rule", by)
	}
	a.call("DELETE", "/api/v1/rules", `{"agent": "default", "command": "den-sessions", "action": "send", "subject": ""}`, http.StatusNoContent, nil)
	if by := check(); by != permission.ByUnattended {
		t.Errorf("after the delete the call was decided by %s, want asked (unattended)", by)
	}
	// The subject as stored deletes a rule whose shown subject differs.
	a.call("DELETE", "/api/v1/rules", `{"agent": "default", "command": "den-model", "action": "run", "subject": "it's\u202egpt"}`, http.StatusNoContent, nil)
	a.call("GET", "/api/v1/rules", "", http.StatusOK, &got)
	if len(got.Rules) != 1 || got.Rules[0].Agent != "writer" {
		t.Errorf("left: %+v", got.Rules)
	}

	for _, c := range []struct {
		body   string
		status int
		code   string
	}{
		{`{"agent": "default", "command": "den-sessions", "action": "send", "subject": ""}`, http.StatusNotFound, "not_found"}, // gone
		{`{"agent": "writer", "command": "den-sessions", "action": "send", "subject": "x"}`, http.StatusNotFound, "not_found"}, // another subject
		{`{"agent": "writer", "command": "den-sessions", "subject": ""}`, http.StatusNotFound, "not_found"},                    // another action
		{`{"agent": "", "command": "den-sessions", "action": "send"}`, http.StatusBadRequest, "bad_request"},
		{`{"agent": "writer", "action": "send"}`, http.StatusBadRequest, "bad_request"},
		{`{"agent": "writer", "command": "den-sessions", "action": "send", "subjects": []}`, http.StatusBadRequest, "bad_request"},
		{`agent=writer`, http.StatusBadRequest, "bad_request"},
		{`{"agent": "writer"`, http.StatusBadRequest, "bad_request"},
	} {
		a.fails("DELETE", "/api/v1/rules", c.body, c.status, c.code)
	}
	if code, _ := a.do("DELETE", "/api/v1/rules", ""); code != http.StatusBadRequest {
		t.Errorf("DELETE without a body: %d", code)
	}
	a.call("GET", "/api/v1/rules?agent=writer", "", http.StatusOK, &got)
	if len(got.Rules) != 1 {
		t.Errorf("a refused delete deleted: %+v", got.Rules)
	}
}
