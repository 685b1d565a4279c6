package session

import (
	"context"
	"strings"
	"testing"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/event"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/store"
)

// withNetwork gives the test runtime's computers the network, under
// their agent's policy in the config (as den's command line does).
func withNetwork(o *Options) {
	open := o.Computer
	o.Computer = func(ctx context.Context, agent string) (*computer.Computer, computer.SessionOptions, error) {
		c, so, err := open(ctx, agent)
		so.Network = true
		so.Egress.Policy, _ = o.Config.Agent(agent).EgressPolicy()
		return c, so, err
	}
}

// get is an HTTP request from inside the computer, by busybox nc.
func get(host string) string {
	return `{"command":"printf 'GET / HTTP/1.0\\r\\nHost: ` + host + `\\r\\n\\r\\n' | nc -w 10 ` + host + ` 80; echo; echo finished"}`
}

// TestEgressRefused: a connection the agent's policy refuses is an
// "egress" event of the session, and the command's result tells the
// model which host den refused and how the user can allow it.
func TestEgressRefused(t *testing.T) {
	cfg := &config.Config{Agents: map[string]config.Agent{"default": {Egress: "allowlist", Allow: []string{"allowed.example"}}}}
	tr := newTestRuntimeWith(t, cfg, withNetwork,
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute", Input: get("blocked.example")}}},
		llmtest.Turn{Text: "Blocked."})
	s := tr.session(t)
	sub := tr.Subscribe(s.ID, 0, nil)
	defer sub.Close()
	sent, err := tr.Send(context.Background(), s.ID, Message{Text: "fetch it"}, TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, sub, "status", event.Idle)
	<-sent.Done
	var eg, res *store.Event
	for i, e := range evs {
		switch e.Type {
		case "egress":
			eg = &evs[i]
		case "tool_result":
			res = &evs[i]
		}
	}
	if eg == nil || field(*eg, "host") != "blocked.example" || strings.Contains(string(eg.Data), `"allowed":true`) ||
		!strings.Contains(field(*eg, "message"), "den network allow --agent default blocked.example") {
		t.Fatalf("egress event: %v (events %s)", eg, types(evs))
	}
	out := field(*res, "output")
	if !strings.Contains(out, "finished") || !strings.Contains(out, "[den refused 1 connection(s) of this command]") ||
		!strings.Contains(out, "den network allow --agent default blocked.example") {
		t.Errorf("the command's result does not say what den refused:\n%s", out)
	}
}

// TestEgressAsk: under egress = "ask", a connection to a host the rules
// do not name raises an approval (command egress, subject the host); a
// "session" answer covers the host's later connections.
func TestEgressAsk(t *testing.T) {
	cfg := &config.Config{Agents: map[string]config.Agent{"default": {Egress: "ask"}}}
	tr := newTestRuntimeWith(t, cfg, withNetwork,
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute", Input: get("asked.example")}}},
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_2", Name: "shell_execute", Input: get("asked.example")}}},
		llmtest.Turn{Text: "Done."})
	s := tr.session(t)
	sub := tr.Subscribe(s.ID, 0, nil)
	defer sub.Close()
	sent, err := tr.Send(context.Background(), s.ID, Message{Text: "fetch it twice"}, TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, sub, "approval_request", "")
	req := evs[len(evs)-1]
	if q := field(req, "question"); q != "agent default wants to connect to asked.example:80" || field(req, "command") != "egress" || field(req, "subject") != "asked.example" {
		t.Fatalf("approval request %s", req.Data)
	}
	if _, err := tr.Answer(context.Background(), field(req, "id"), true, permission.Session, "web"); err != nil {
		t.Fatal(err)
	}
	evs = collect(t, sub, "status", event.Idle)
	<-sent.Done
	var by []string
	for _, e := range evs {
		switch e.Type {
		case "approval_request":
			t.Errorf("asked again: %s", e.Data)
		case "egress":
			if field(e, "host") == "asked.example" {
				by = append(by, field(e, "by"))
			}
		}
	}
	if strings.Join(by, " ") != "web session" {
		t.Errorf("egress events decided by %v, want the person (in the web face), then the session's answer", by)
	}
}
