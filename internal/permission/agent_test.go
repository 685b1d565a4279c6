package permission

import "testing"

// TestAgentDefaults: a sub-agent in the agent's own computer runs
// unasked when trusted and asks when restricted; one in another
// agent's computer, and a message to another agent, ask unless full.
func TestAgentDefaults(t *testing.T) {
	for _, c := range []struct {
		trust           Trust
		action, subject string
		want            Decision
	}{
		{Trusted, "run", "", Allow},
		{Trusted, "spawn", "", Allow},
		{Trusted, "spawn", "bob", Ask},
		{Trusted, "run", "bob", Ask},
		{Trusted, "wait", "", Allow},
		{Trusted, "steer", "", Allow},
		{Trusted, "cancel", "", Allow},
		{Trusted, "send", "bob", Ask},
		{Restricted, "run", "", Ask},
		{Restricted, "spawn", "", Ask},
		{Restricted, "status", "", Allow},
		{Restricted, "list", "", Allow},
		{Restricted, "send", "bob", Ask},
		{Full, "run", "bob", Allow},
		{Full, "send", "bob", Allow},
	} {
		if got := (Policy{Trust: c.trust}).DecideFor(CmdAgent, c.action, c.subject); got != c.want {
			t.Errorf("%s: den-agent %s %q: %s, want %s", c.trust, c.action, c.subject, got, c.want)
		}
	}
	p := Policy{Trust: Trusted, Overrides: map[string]Decision{"den-agent spawn": Deny}}
	if got := p.DecideFor(CmdAgent, "spawn", ""); got != Deny {
		t.Errorf("an override: %s", got)
	}
}
