package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"den.dev/den/internal/egress"
	"den.dev/den/internal/event"
	"den.dev/den/internal/secret"
	"den.dev/den/internal/store"
)

// TestNetwork: GET /api/v1/network lists egress events newest first,
// by agent, session (a store session or a computer's session name) and
// refusal, a page at a time; bad parameters are 400.
func TestNetwork(t *testing.T) {
	a := newAPI(t, "", nil)
	ctx := context.Background()
	sess, err := a.st.CreateSession(ctx, "ada", "m")
	if err != nil {
		t.Fatal(err)
	}
	var evs []store.Event
	for _, r := range []egress.Record{
		{Agent: "ada", Session: sess.ID, Host: "a.example", Port: 443, Allowed: true, By: "policy"},
		{Agent: "ada", Session: sess.ID, Host: "b.example", Port: 80, By: "policy", Mode: egress.Allowlist},
		{Agent: "bob", Session: "default", Host: "c.example", Port: 443, Allowed: true, By: "policy"},
	} {
		typ, data, _ := event.Encode(&r)
		e := store.Event{Type: typ, Data: data}
		if r.Agent == "ada" {
			e.Session = sess.ID
		}
		evs = append(evs, e)
	}
	if _, err := a.st.AddEvents(ctx, evs); err != nil {
		t.Fatal(err)
	}
	type conn struct {
		EventID int64  `json:"event_id"`
		Host    string `json:"host"`
		Allowed bool   `json:"allowed"`
		Message string `json:"message"`
	}
	var got struct {
		Connections []conn `json:"connections"`
		More        bool   `json:"more"`
	}
	hosts := func() (out []string) {
		for _, c := range got.Connections {
			out = append(out, c.Host)
		}
		return out
	}
	for _, tc := range []struct {
		query string
		want  []string
		more  bool
	}{
		{"", []string{"c.example", "b.example", "a.example"}, false},
		{"?agent=ada", []string{"b.example", "a.example"}, false},
		{"?session=" + sess.ID, []string{"b.example", "a.example"}, false},
		{"?session=default", []string{"c.example"}, false},
		{"?denied=1", []string{"b.example"}, false},
		{"?limit=1", []string{"c.example"}, true},
	} {
		got.Connections, got.More = nil, false
		a.call("GET", "/api/v1/network"+tc.query, "", http.StatusOK, &got)
		if h := hosts(); len(h) != len(tc.want) || got.More != tc.more || (len(h) > 0 && h[0] != tc.want[0]) || (len(h) > 1 && h[1] != tc.want[1]) {
			t.Errorf("%s: %v (more %v), want %v (more %v)", tc.query, h, got.More, tc.want, tc.more)
		}
	}
	a.call("GET", "/api/v1/network?limit=1", "", http.StatusOK, &got)
	first := got.Connections[0].EventID
	a.call("GET", "/api/v1/network?before="+strconv.FormatInt(first, 10), "", http.StatusOK, &got)
	if h := hosts(); len(h) != 2 || h[0] != "b.example" || got.Connections[0].Message == "" {
		t.Errorf("the next page: %+v", got)
	}
	for _, q := range []string{"?limit=0", "?limit=501", "?before=x"} {
		a.call("GET", "/api/v1/network"+q, "", http.StatusBadRequest, nil)
	}
}

// TestSecretsRoutes: the secrets routes set, list and remove secrets,
// and no answer ever holds a value; a binding changes without the value
// being sent again.
func TestSecretsRoutes(t *testing.T) {
	dir := t.TempDir()
	st := secret.Open(dir)
	a := newAPI(t, "", func(o *Options) { o.Secrets = st })
	const value = "tok-route-value-31337"
	code, body := a.do("PUT", "/api/v1/secrets/GH", `{"value":"`+value+`","hosts":["api.github.com"]}`)
	if code != http.StatusOK || strings.Contains(body, value) || !strings.Contains(body, `"header":"Authorization: Bearer {{value}}"`) {
		t.Fatalf("PUT: %d %s", code, body)
	}
	code, body = a.do("PUT", "/api/v1/secrets/GH", `{"hosts":["github.com"],"basic":"x-access-token"}`)
	if code != http.StatusOK || strings.Contains(body, value) {
		t.Fatalf("PUT without a value: %d %s", code, body)
	}
	if list, _ := st.List(); len(list) != 1 || list[0].Value != value || list[0].Basic != "x-access-token" || list[0].Hosts[0] != "github.com" {
		t.Errorf("the store after the rebinding: %+v", list)
	}
	code, body = a.do("GET", "/api/v1/secrets", "")
	if code != http.StatusOK || strings.Contains(body, value) || !strings.Contains(body, `"name":"GH"`) {
		t.Errorf("GET: %d %s", code, body)
	}
	for _, bad := range []struct{ path, body string }{
		{"/api/v1/secrets/lower", `{"value":"v","hosts":["a.b"]}`},
		{"/api/v1/secrets/NEW", `{"hosts":["a.b"]}`},
		{"/api/v1/secrets/NEW", `{"value":"v"}`},
	} {
		if code, body := a.do("PUT", bad.path, bad.body); code != http.StatusBadRequest {
			t.Errorf("PUT %s %s: %d %s", bad.path, bad.body, code, body)
		}
	}
	if code, _ := a.do("DELETE", "/api/v1/secrets/GH", ""); code != http.StatusNoContent {
		t.Errorf("DELETE: %d", code)
	}
	if code, _ := a.do("DELETE", "/api/v1/secrets/GH", ""); code != http.StatusNotFound {
		t.Errorf("DELETE again: %d", code)
	}
}
