package hostsvc

import (
	"context"
	"strings"
	"testing"
)

// fakeAgents records what den-agent asked for.
type fakeAgents struct {
	got      []string
	deadline bool // Wait saw a deadline
}

func (f *fakeAgents) rec(s ...string) { f.got = append(f.got, strings.Join(s, "|")) }

func (f *fakeAgents) Run(ctx context.Context, session string, r SpawnRequest) (Subagent, error) {
	f.rec("run", session, r.Task, r.Profile, r.Agent)
	return Subagent{ID: "k1", Answer: "42", Done: true}, nil
}
func (f *fakeAgents) Spawn(ctx context.Context, session string, r SpawnRequest) (Subagent, error) {
	f.rec("spawn", session, r.Task, r.Profile, r.Agent)
	return Subagent{}, &AgentError{Code: CodeLimit, Message: "3 run already"}
}
func (f *fakeAgents) Status(ctx context.Context, session, id string) (Subagent, error) {
	f.rec("status", session, id)
	return Subagent{ID: id}, nil
}
func (f *fakeAgents) Wait(ctx context.Context, session, id string) (Subagent, error) {
	_, f.deadline = ctx.Deadline()
	f.rec("wait", session, id)
	<-ctx.Done()
	return Subagent{ID: id}, ctx.Err()
}
func (f *fakeAgents) Steer(ctx context.Context, session, id, msg string) (Subagent, error) {
	f.rec("steer", session, id, msg)
	return Subagent{ID: id}, nil
}
func (f *fakeAgents) Cancel(ctx context.Context, session, id string) (Subagent, error) {
	f.rec("cancel", session, id)
	return Subagent{ID: id}, nil
}
func (f *fakeAgents) List(ctx context.Context, session string) ([]Subagent, error) {
	f.rec("list", session)
	return nil, nil
}
func (f *fakeAgents) Send(ctx context.Context, fromAgent, fromSession, to, msg string) (string, error) {
	f.rec("send", fromAgent, fromSession, to, msg)
	return "inbox1", nil
}

// TestAgentCommand: den-agent's arguments are read strictly; run and
// spawn name another agent as their subject; a wait that times out is
// "timeout"; the runtime's codes reach the envelope.
func TestAgentCommand(t *testing.T) {
	for _, args := range [][]string{
		{}, {"frob"}, {"wait"}, {"wait", "a/b"}, {"status", "a", "b"}, {"status", "k1", "--timeout", "1s"},
		{"steer", "k1"}, {"list", "x"}, {"send", "bob"}, {"send", "../bob", "hi"}, {"run", "--profile", "../x", "t"},
		{"run", "--profile", "a", "--profile", "b", "t"}, {"wait", "k1", "--timeout", "2h"}, {"wait", "k1", "--timeout", "soon"},
	} {
		_, bad := parse(t, &Service{Agents: &fakeAgents{}}, "den-agent", args, "")
		if bad == nil || bad.Code != CodeInvalidArgs {
			t.Errorf("den-agent %q: %+v, want invalid_args", args, bad)
		}
	}
	if _, bad := parse(t, &Service{}, "den-agent", []string{"list"}, ""); bad == nil || bad.Code != CodeNotAvailable {
		t.Errorf("without sub-agents: %+v", bad)
	}

	f := &fakeAgents{}
	s := &Service{Agents: f}
	p, bad := parse(t, s, "den-agent", []string{"run", "--agent", "bob", "--profile", "scout", "look", "--around"}, "")
	if bad != nil || p.Action != "run" || p.Subject != "bob" {
		t.Fatalf("run: %+v %+v", p, bad)
	}
	if r := p.Run(context.Background()); r.Code != "" || r.Data.(Subagent).Answer != "42" {
		t.Errorf("run: %+v", r)
	}
	p, _ = parse(t, s, "den-agent", []string{"run", "--agent", "a", "own computer"}, "")
	if p.Subject != "" {
		t.Errorf("run in the caller's own agent: subject %q", p.Subject)
	}
	if r := run(t, s, "den-agent", []string{"spawn"}, "the task from stdin\n"); r.Code != CodeLimit || !strings.Contains(r.Message, "3 run already") {
		t.Errorf("spawn: %+v", r)
	}
	if r := run(t, s, "den-agent", []string{"spawn"}, "  \n"); r.Code != CodeInvalidArgs {
		t.Errorf("spawn without a task: %+v", r)
	}
	if r := run(t, s, "den-agent", []string{"wait", "k1", "--timeout", "10ms"}, ""); r.Code != CodeTimeout || !f.deadline {
		t.Errorf("wait: %+v", r)
	}
	if r := run(t, s, "den-agent", []string{"steer", "k1", "only", "--direct", "flights"}, ""); r.Code != "" {
		t.Errorf("steer: %+v", r)
	}
	run(t, s, "den-agent", []string{"status", "k1"}, "")
	run(t, s, "den-agent", []string{"cancel", "k1"}, "")
	if r := run(t, s, "den-agent", []string{"list"}, ""); r.Code != "" || r.Data == nil {
		t.Errorf("list: %+v", r)
	}
	p, _ = parse(t, s, "den-agent", []string{"send", "bob", "the", "report"}, "")
	if p.Action != "send" || p.Subject != "bob" {
		t.Errorf("send: %+v", p)
	}
	p.Run(context.Background())
	want := []string{
		"run|s1|look --around|scout|bob", "spawn|s1|the task from stdin\n||", "wait|s1|k1",
		"steer|s1|k1|only --direct flights", "status|s1|k1", "cancel|s1|k1", "list|s1", "send|a|s1|bob|the report",
	}
	if strings.Join(f.got, "\n") != strings.Join(want, "\n") {
		t.Errorf("calls:\n%s\nwant\n%s", strings.Join(f.got, "\n"), strings.Join(want, "\n"))
	}
}
