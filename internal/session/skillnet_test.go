package session

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"den.dev/den/internal/config"
	"den.dev/den/internal/event"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/store"
)

// tokenServer is an HTTP server on the host's loopback that answers
// every request with its token, counting them: a host the computer
// reaches only through den, by a name [network] hosts pins.
type tokenServer struct {
	addr, token string
	hits        atomic.Int64
}

func newTokenServer(t *testing.T, name string) *tokenServer {
	t.Helper()
	s := &tokenServer{token: name + "-" + rand.Text()[:8]}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		fmt.Fprintln(w, s.token)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return s
}

// egressEvents are the "egress" events among evs for host.
func egressEvents(evs []store.Event, host string) []store.Event {
	var out []store.Event
	for _, e := range evs {
		if e.Type == "egress" && field(e, "host") == host {
			out = append(out, e)
		}
	}
	return out
}

// TestEgressSkillInUse: a skill's hosts ([agents.NAME.skills.SKILL]
// allow) are out of the computer's reach until the session uses the
// skill, and within it from then on (after den restarts too), recorded
// as the skill's; another session, which has not used it, still cannot
// reach them.
func TestEgressSkillInUse(t *testing.T) {
	weather := newTokenServer(t, "weather")
	cfg := &config.Config{
		Network: config.Network{Hosts: map[string]string{"weather.example:80": weather.addr}},
		Agents: map[string]config.Agent{"default": {Egress: "allowlist", Allow: []string{"allowed.example"},
			Skills: map[string]config.SkillSettings{"weather": {Allow: []string{"weather.example"}}}}},
	}
	tr := newTestRuntimeWith(t, cfg, withNetwork,
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute", Input: get("weather.example")}}},
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_2", Name: "file_read", Input: `{"path":"/den/skills/weather/SKILL.md"}`}}},
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_3", Name: "shell_execute", Input: get("weather.example")}}},
		llmtest.Turn{Text: "Sunny."},
		// The second session.
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_4", Name: "shell_execute", Input: get("weather.example")}}},
		llmtest.Turn{Text: "Blocked."},
		// The first session again, after den restarted.
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_5", Name: "shell_execute", Input: get("weather.example")}}},
		llmtest.Turn{Text: "Still sunny."})
	dir := filepath.Join(tr.dir, "agents", "default", "skills", "weather")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: weather\ndescription: Tells the weather.\n---\n\nGET http://weather.example/.\n"), 0o644)

	s := tr.session(t)
	sub := tr.Subscribe(s.ID, 0, nil)
	defer sub.Close()
	sent, err := tr.Send(context.Background(), s.ID, Message{Text: "weather?"}, TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, sub, "status", event.Idle)
	<-sent.Done
	got := egressEvents(evs, "weather.example")
	if len(got) != 2 {
		t.Fatalf("egress events for weather.example: %d, want 2 (events %s)", len(got), types(evs))
	}
	if before := got[0]; strings.Contains(string(before.Data), `"allowed":true`) || field(before, "via") != "" {
		t.Errorf("before the skill was used: %s", before.Data)
	}
	if after := got[1]; !strings.Contains(string(after.Data), `"allowed":true`) || field(after, "via") != "skill:weather" {
		t.Errorf("once the skill was used: %s", after.Data)
	}
	if weather.hits.Load() != 1 {
		t.Errorf("the skill's host got %d requests, want 1", weather.hits.Load())
	}
	reqs := tr.fake.Requests()
	if out := requestText(t, reqs[3].Body); !strings.Contains(out, weather.token) {
		t.Errorf("the command's result lacks the skill host's answer:\n%s", out)
	}
	if system, _ := readRequest(t, reqs[0].Body); !strings.Contains(system, "weather (weather.example)") {
		t.Errorf("the system prompt does not say which hosts the skill brings:\n%s", system)
	}

	other, err := tr.st.CreateSession(context.Background(), "default", "anthropic/claude-sonnet-5-5")
	if err != nil {
		t.Fatal(err)
	}
	waitSent(t)(tr.Send(context.Background(), other.ID, Message{Text: "weather?"}, TurnOptions{}))
	if weather.hits.Load() != 1 {
		t.Errorf("a session that did not use the skill reached its host")
	}

	// den restarts: the session still uses the skill.
	again := tr.reopen(t, cfg, withNetwork)
	waitSent(t)(again.Send(context.Background(), s.ID, Message{Text: "and now?"}, TurnOptions{}))
	if weather.hits.Load() != 2 {
		t.Errorf("after a restart, the session that used the skill got %d requests to its host through, want 1", weather.hits.Load()-1)
	}
}

// TestMCPEgress: an MCP server with an egress policy of its own goes by
// it, and not by its agent's: in the computer and on the host (where
// den confines it to a network of its own). The agent's computer keeps
// the agent's policy. Each connection is recorded as the server's, and
// a refused one tells the model how to allow it for that server.
func TestMCPEgress(t *testing.T) {
	agentHost, serverHost := newTokenServer(t, "agent"), newTokenServer(t, "server")
	cfg := &config.Config{
		Network: config.Network{Hosts: map[string]string{"agent.example:80": agentHost.addr, "server.example:80": serverHost.addr}},
		Agents:  map[string]config.Agent{"default": {Egress: "allowlist", Allow: []string{"agent.example"}}},
	}
	fetch := func(id, server, host string) llmtest.Call {
		return llmtest.Call{ID: id, Name: "mcp__" + server + "__fetch", Input: `{"url":"http://` + host + `/"}`}
	}
	own := `"env": {"DEN_TEST_MCP_FETCH": "1"}, "egress": "allowlist", "allow": ["server.example"]`
	tr := mcpRuntimeWith(t, cfg, `{"box": {"command": "den-test-mcp", `+own+`}, "host": {"command": "$SERVER", "host": true, `+own+`}}`,
		func(*permission.ApprovalRequest) permission.Answer { return permission.Answer{Approve: true} }, withNetwork,
		llmtest.Turn{Calls: []llmtest.Call{
			fetch("toolu_1", "box", "server.example"), fetch("toolu_2", "box", "agent.example"),
			fetch("toolu_3", "host", "server.example"), fetch("toolu_4", "host", "agent.example"),
			{ID: "toolu_5", Name: "shell_execute", Input: get("server.example")},
			{ID: "toolu_6", Name: "shell_execute", Input: get("agent.example")},
		}},
		llmtest.Turn{Text: "done"})
	s := tr.session(t)
	sub := tr.Subscribe(s.ID, 0, nil)
	defer sub.Close()
	sent, err := tr.Send(context.Background(), s.ID, Message{Text: "fetch"}, TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evs := collect(t, sub, "status", event.Idle)
	<-sent.Done
	got := requestText(t, tr.fake.Requests()[1].Body)
	for _, want := range []string{
		"fetch 200: " + serverHost.token,
		"fetch 403: den: the connection to agent.example:80 was refused by MCP server box's egress policy (allowlist). The user can allow it with: den network allow --mcp box agent.example",
		"den network allow --mcp host agent.example",
		"den network allow --agent default server.example",
		agentHost.token,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the results lack %q:\n%.3000s", want, got)
		}
	}
	if n := strings.Count(got, "fetch 200: "+serverHost.token); n != 2 {
		t.Errorf("the servers reached their host %d times, want 2 (in the computer and on the host)", n)
	}
	if agentHost.hits.Load() != 1 || serverHost.hits.Load() != 2 {
		t.Errorf("requests: the agent's host %d (want 1: the shell's), the servers' host %d (want 2)", agentHost.hits.Load(), serverHost.hits.Load())
	}
	// A connection is recorded when it ends, which may be just after
	// the turn.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for len(egressEvents(evs, "server.example"))+len(egressEvents(evs, "agent.example")) < 6 {
		e, err := sub.Next(ctx)
		if err != nil {
			break
		}
		evs = append(evs, e)
	}
	vias := map[string]int{}
	for _, e := range evs {
		if e.Type == "egress" {
			vias[field(e, "via")+" "+field(e, "host")]++
		}
	}
	for _, want := range []string{"mcp:box server.example", "mcp:box agent.example", "mcp:host server.example", "mcp:host agent.example", " server.example", " agent.example"} {
		if vias[want] != 1 {
			t.Errorf("egress events by via and host: %v, want one %q", vias, want)
		}
	}
}
