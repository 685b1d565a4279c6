package agent

import (
	"strings"
	"testing"
	"time"
)

// TestPromptEgress: the prompt tells the policy and the secrets'
// variables (names and hosts, never values), and nothing of them when
// the network is off.
func TestPromptEgress(t *testing.T) {
	c := Computer{Distro: "debian", Network: true, Egress: "It reaches only pypi.org.", Secrets: []string{"$GH: to api.github.com (header Authorization: Bearer {{value}})"}}
	p := SystemPrompt(c, "", time.Now())
	for _, want := range []string{"leaves through den", "It reaches only pypi.org.", "placeholders (den-secret:NAME)", "$GH: to api.github.com"} {
		if !strings.Contains(p, want) {
			t.Errorf("the prompt lacks %q:\n%s", want, p)
		}
	}
	c.Network = false
	if p := SystemPrompt(c, "", time.Now()); strings.Contains(p, "pypi.org") || strings.Contains(p, "$GH") {
		t.Errorf("network off, the prompt still tells the policy:\n%s", p)
	}
}
