package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAgents: every setting the settings page edits, as the config
// has it, with den's trust and network where the config says nothing;
// no secret of the config.
func TestAgents(t *testing.T) {
	a := newAPI(t, `
[agents.writer]
model = "fast"
trust = "restricted"
instructions = "Write short.\nNo emoji."
instructions_file = "/home/me/writer.md"
network = "off"
rootfs = "debian"
mounts = ["/home/me/notes:/mnt/notes:ro", "/srv/data:/data"]
allowed_models = ["anthropic/claude-haiku-5-5"]
memory = "2GiB"
tmp = "512MiB"
disk = "unlimited"
pids = 512
cpu_weight = 200
remember = false
browser = false

[agents.writer.permissions]
den-notify = "allow"
"den-config set" = "deny"

[groups.fast]
members = ["anthropic/claude-haiku-5-5"]

[providers.local]
type = "openai"
api_key = "sk-agents-secret-0123456789"
`, nil)
	var got struct {
		Agents []agentJSON `json:"agents"`
	}
	code, body := a.do("GET", "/api/v1/agents", "")
	if code != http.StatusOK || strings.Contains(body, "sk-agents-secret") {
		t.Fatalf("%d %s", code, body)
	}
	a.call("GET", "/api/v1/agents", "", http.StatusOK, &got)
	want := []agentJSON{{
		Name: "default", Trust: "trusted", Network: "on", Egress: "open", Allow: []string{},
		Mounts: []string{}, Permissions: map[string]string{}, AllowedModels: []string{}, Remember: true, Browser: true,
	}, {
		Name: "writer", Model: "fast", Trust: "restricted", Instructions: "Write short.\nNo emoji.", InstructionsFile: "/home/me/writer.md",
		Network: "off", Egress: "open", Allow: []string{}, Mounts: []string{"/home/me/notes:/mnt/notes:ro", "/srv/data:/data"}, Rootfs: "debian",
		Permissions:   map[string]string{"den-notify": "allow", "den-config set": "deny"},
		AllowedModels: []string{"anthropic/claude-haiku-5-5"}, Memory: "2GiB", Tmp: "512MiB", Disk: "unlimited", Pids: 512, CPUWeight: 200,
	}}
	if d := cmp.Diff(want, got.Agents); d != "" {
		t.Errorf("agents (-want +got):\n%s", d)
	}
	// Unset fields are empty, not missing or null, so that a form can
	// show them.
	for _, field := range []string{`"mounts":[]`, `"allow":[]`, `"permissions":{}`, `"allowed_models":[]`, `"instructions":""`, `"rootfs":""`} {
		if !strings.Contains(body, field) {
			t.Errorf("no %s in %s", field, body)
		}
	}

	// A change through the config shows at once.
	a.call("PATCH", "/api/v1/config", `{"unset": ["agents.writer.network"], "set": {"agents.default.trust": "full"}}`, http.StatusOK, nil)
	a.call("GET", "/api/v1/agents", "", http.StatusOK, &got)
	if got.Agents[0].Trust != "full" || got.Agents[1].Network != "on" {
		t.Errorf("after the change: %+v", got.Agents)
	}
}
