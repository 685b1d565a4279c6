package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const settingsConfig = `# den
[agents.default]
model = "anthropic/claude-sonnet-5-5"
permissions = { den-notify = "allow" }

[agents.writer]
model = "fast"
trust = "restricted"

[agents.writer.permissions]
den-notify = "deny"
den-open = "allow"

[groups.fast]
members = ["anthropic/claude-haiku-5-5", "openai/gpt-6-luna"]

[providers.local]
type = "openai"
base_url = "http://127.0.0.1:9/v1"
api_key = "sk-local-secret-0123456789"
`

func strp(s string) *string { return &s }

// TestPatchConfigUnset: unset removes keys and whole tables before set
// sets keys; the answer lists each change, secrets masked, and the
// runtime runs on the new file.
func TestPatchConfigUnset(t *testing.T) {
	a := newAPI(t, settingsConfig, nil)
	var got struct {
		Changed []configChange `json:"changed"`
	}
	a.call("PATCH", "/api/v1/config", `{
		"unset": ["groups.fast", "agents.writer.permissions.den-open", "providers.local"],
		"set": {"agents.writer.model": "anthropic/claude-opus-5", "groups.fast.members": ["openai/gpt-6-sol"]}
	}`, http.StatusOK, &got)
	want := []configChange{
		{Key: "groups.fast", Old: `groups.fast.members = ["anthropic/claude-haiku-5-5", "openai/gpt-6-luna"]` + "\n", Removed: true},
		{Key: "agents.writer.permissions.den-open", Old: `"allow"`, Removed: true},
		{Key: "providers.local", Old: "providers.local.api_key = \"********\"\nproviders.local.base_url = \"http://127.0.0.1:9/v1\"\nproviders.local.type = \"openai\"\n", Removed: true},
		{Key: "agents.writer.model", Old: `"fast"`, New: strp("anthropic/claude-opus-5")},
		{Key: "groups.fast.members", Old: "", New: strp(`["openai/gpt-6-sol"]`)},
	}
	if d := cmp.Diff(want, got.Changed); d != "" {
		t.Errorf("changed (-want +got):\n%s", d)
	}
	file := a.file()
	for _, gone := range []string{"den-open", "providers.local", "sk-local", "gpt-6-luna"} {
		if strings.Contains(file, gone) {
			t.Errorf("%s is still in the file:\n%s", gone, file)
		}
	}
	cfg := a.rt.Config()
	if _, ok := cfg.Providers["local"]; ok || cfg.Agent("writer").Model != "anthropic/claude-opus-5" ||
		cfg.Agent("writer").Permissions["den-notify"] != "deny" || len(cfg.Groups["fast"].Members) != 1 {
		t.Errorf("the runtime's config was not reloaded: %+v", cfg)
	}

	// The removed answer's "new" is null, and there is no "removed" on
	// a set.
	_, body := a.do("PATCH", "/api/v1/config", `{"unset": ["agents.writer.trust"], "set": {"agents.default.trust": "full"}}`)
	if !strings.Contains(body, `{"key":"agents.writer.trust","old":"\"restricted\"","new":null,"removed":true}`) ||
		!strings.Contains(body, `{"key":"agents.default.trust","old":"","new":"full"}`) {
		t.Errorf("answer %s", body)
	}
	// A secret removed alone is masked too.
	a.call("PATCH", "/api/v1/config", `{"set": {"providers.x.type": "openai", "providers.x.api_key": "sk-x-secret-0123456789"}}`, http.StatusOK, nil)
	if _, body := a.do("PATCH", "/api/v1/config", `{"unset": ["providers.x.api_key"]}`); strings.Contains(body, "sk-x-secret") || !strings.Contains(body, `"old":"********"`) {
		t.Errorf("unset of a key: %s", body)
	}
}

// TestPatchConfigRefuses: what cannot be changed is an error with its
// status, and nothing of the refused change is written; changes before
// it stay made and the runtime has them.
func TestPatchConfigRefuses(t *testing.T) {
	a := newAPI(t, settingsConfig, nil)
	before := a.file()
	for _, c := range []struct {
		body   string
		status int
		code   string
	}{
		{`{"unset": ["agents.default.colour"]}`, http.StatusBadRequest, "bad_request"}, // no such setting
		{`{"unset": ["nosuch.table"]}`, http.StatusBadRequest, "bad_request"},
		{`{"unset": ["agents"]}`, http.StatusBadRequest, "bad_request"},              // not inside a table
		{`{"unset": ["agents.default]\n[x"]}`, http.StatusBadRequest, "bad_request"}, // unreadable
		{`{"unset": ["agents.default.rootfs"]}`, http.StatusNotFound, "not_found"},   // not set
		{`{"unset": ["groups.slow"]}`, http.StatusNotFound, "not_found"},
		{`{"unset": ["agents.default.permissions.den-notify"]}`, http.StatusConflict, "not_editable"}, // in an inline table
		{`{"set": {"agents.default.permissions.den-open": "allow"}}`, http.StatusConflict, "not_editable"},
		{`{"unset": ["providers.local.type"]}`, http.StatusBadRequest, "bad_request"}, // the file would not load
		{`{"unset": ["agents.writer.trust"], "set": {"agents.writer.trust": "full"}}`, http.StatusBadRequest, "bad_request"},
		{`{"unset": ["agents.writer.trust", "agents.writer.trust"]}`, http.StatusBadRequest, "bad_request"},
		{`{"unset": "agents.writer.trust"}`, http.StatusBadRequest, "bad_request"},
		{`{"unset": []}`, http.StatusBadRequest, "bad_request"},
		{`{"remove": ["agents.writer.trust"]}`, http.StatusBadRequest, "bad_request"},
		{`unset agents.writer.trust`, http.StatusBadRequest, "bad_request"},
		{`{"set": {"agents.default.model": {"a": 1}}}`, http.StatusBadRequest, "bad_request"},
	} {
		a.fails("PATCH", "/api/v1/config", c.body, c.status, c.code)
		if got := a.file(); got != before {
			t.Fatalf("%s changed the file:\n%s", c.body, got)
		}
	}

	// The first change is made, the second refused: the answer says so,
	// and the runtime runs on what the file now says.
	msg := a.fails("PATCH", "/api/v1/config", `{"unset": ["agents.writer.trust", "agents.writer.rootfs"]}`, http.StatusNotFound, "not_found")
	if !strings.Contains(msg, "changes before it were made: 1") {
		t.Errorf("message %q", msg)
	}
	if strings.Contains(a.file(), "restricted") || a.rt.Config().Agent("writer").Trust != "" {
		t.Errorf("the change before the refused one: file\n%s\nruntime trust %q", a.file(), a.rt.Config().Agent("writer").Trust)
	}
}
