package session

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/config"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/memory"
)

// anthropicRequest is what a test reads of a request den sent.
type anthropicRequest struct {
	System []struct {
		Text string `json:"text"`
	} `json:"system"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

func readRequest(t *testing.T, body []byte) (system string, tools []string) {
	t.Helper()
	var r anthropicRequest
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	for _, s := range r.System {
		system += s.Text
	}
	for _, tl := range r.Tools {
		tools = append(tools, tl.Name)
	}
	return system, tools
}

// waitSent waits for the outcome of what a Send, Regenerate or Edit
// started: waitSent(t)(tr.Send(...)).
func waitSent(t *testing.T) func(Sent, error) {
	return func(sent Sent, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		select {
		case out := <-sent.Done:
			if out.Err != nil {
				t.Fatal(out.Err)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("no outcome")
		}
	}
}

// TestMemoryEndToEnd: what the model saves with memory_write lands in
// today's log of the agent's memory, is in the next request's system
// prompt, and memory_get finds it; regenerating the answer that wrote it
// takes it back; with memory off for the session, the model has neither
// the tools nor the memory.
func TestMemoryEndToEnd(t *testing.T) {
	tr := newTestRuntime(t, nil,
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "memory_write", Input: `{"content":"The user's dog is named Pixel."}`}}},
		llmtest.Turn{Text: "Noted."},
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_2", Name: "memory_get", Input: `{"query":"dog"}`}}},
		llmtest.Turn{Text: "Your dog is Pixel."},
		llmtest.Turn{Text: "Another answer."},
		llmtest.Turn{Text: "No memory here."})
	s := tr.session(t)
	ctx := context.Background()
	waitSent(t)(tr.Send(ctx, s.ID, Message{Text: "remember that my dog is Pixel"}, TurnOptions{}))
	log := filepath.Join(tr.dir, "agents", "default", "memory", memory.LogName(time.Now(), time.Local))
	text, err := os.ReadFile(log)
	if err != nil || !strings.Contains(string(text), "The user's dog is named Pixel.") || !strings.Contains(string(text), "session="+s.ID) {
		t.Fatalf("the log: %q %v", text, err)
	}
	path, _ := tr.st.Path(ctx, s.ID)
	wrote := path[1] // the answer that called memory_write
	if !strings.Contains(string(text), "message="+wrote.ID) {
		t.Errorf("the entry does not name the message that wrote it (%s):\n%s", wrote.ID, text)
	}

	waitSent(t)(tr.Send(ctx, s.ID, Message{Text: "what is my dog called?"}, TurnOptions{}))
	reqs := tr.fake.Requests()
	system, tools := readRequest(t, reqs[2].Body)
	if !strings.Contains(system, "# Your memory") || !strings.Contains(system, "The user's dog is named Pixel.") {
		t.Errorf("the memory is not in the next request's system prompt:\n%s", system)
	}
	if !strings.Contains(strings.Join(tools, " "), "memory_write") || !strings.Contains(strings.Join(tools, " "), "memory_get") {
		t.Errorf("tools %v", tools)
	}
	if body := string(reqs[3].Body); !strings.Contains(body, "Pixel") || !strings.Contains(body, "/den/memory/") {
		t.Errorf("memory_get's result: %s", body)
	}

	// Another answer to the first question: what the first one saved
	// is taken back.
	waitSent(t)(tr.Regenerate(ctx, s.ID, wrote.ID, TurnOptions{}))
	if text, _ := os.ReadFile(log); strings.Contains(string(text), "Pixel") {
		t.Errorf("the regenerated answer's entry is still in the log:\n%s", text)
	}

	off := false
	if err := tr.st.SetSessionMemory(ctx, s.ID, &off); err != nil {
		t.Fatal(err)
	}
	waitSent(t)(tr.Send(ctx, s.ID, Message{Text: "anything?"}, TurnOptions{}))
	reqs = tr.fake.Requests()
	system, tools = readRequest(t, reqs[len(reqs)-1].Body)
	if strings.Contains(system, "# Your memory") || strings.Contains(strings.Join(tools, " "), "memory_") || strings.Contains(system, "/den/memory") {
		t.Errorf("memory off, the request still has it: tools %v\n%s", tools, system)
	}
}

// TestMemoryOffByConfig: an agent with remember = false has no memory
// unless a session turns it on.
func TestMemoryOffByConfig(t *testing.T) {
	no := false
	cfg := &config.Config{Agents: map[string]config.Agent{"default": {Remember: &no}}}
	tr := newTestRuntime(t, cfg, llmtest.Turn{Text: "one"}, llmtest.Turn{Text: "two"})
	s := tr.session(t)
	ctx := context.Background()
	waitSent(t)(tr.Send(ctx, s.ID, Message{Text: "hi"}, TurnOptions{}))
	if system, tools := readRequest(t, tr.fake.Requests()[0].Body); strings.Contains(system, "# Your memory") || strings.Contains(strings.Join(tools, " "), "memory_") {
		t.Errorf("remember = false, the request has memory")
	}
	on := true
	tr.st.SetSessionMemory(ctx, s.ID, &on)
	waitSent(t)(tr.Send(ctx, s.ID, Message{Text: "again"}, TurnOptions{}))
	if system, _ := readRequest(t, tr.fake.Requests()[1].Body); !strings.Contains(system, "# Your memory") {
		t.Errorf("the session turned memory on, the request has none")
	}
}

// TestMemorySurvivesCompaction: a fact the user gave at turn 3 of a
// 300-turn session is still known at its end, after the conversation was
// compacted twice by a summarizer that dropped it the second time and
// although the model never chose to write it to memory: den keeps each
// compaction's summary in the day's log, which every request carries.
func TestMemorySurvivesCompaction(t *testing.T) {
	window := 16000
	cfg := &config.Config{Models: map[string]config.Model{"anthropic/claude-tiny": {ContextWindow: window, MaxOutput: 1000}}}
	tr := newTestRuntime(t, cfg)
	summaries := 0
	tr.fake.Respond(func(body []byte) llmtest.Turn {
		if strings.Contains(string(body), "You are compacting the context") {
			summaries++
			if summaries == 1 {
				return llmtest.Turn{Text: "The user chats about the weather. They said their locker code is 4711."}
			}
			return llmtest.Turn{Text: "The user chats about the weather."} // a summarizer that loses the fact
		}
		return llmtest.Turn{Text: "Noted."}
	})
	ctx := context.Background()
	if err := tr.st.EnsureAgent(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	s, err := tr.st.CreateSession(ctx, "default", "anthropic/claude-tiny")
	if err != nil {
		t.Fatal(err)
	}
	filler := strings.Repeat("The weather today is grey and mild, with a little wind from the west. ", 5)
	for i := 1; i <= 300; i++ {
		text := fmt.Sprintf("Turn %d. %s", i, filler)
		if i == 3 {
			text = "Turn 3. My locker code is 4711."
		}
		waitSent(t)(tr.Send(ctx, s.ID, Message{Text: text}, TurnOptions{}))
	}
	if summaries < 2 {
		t.Fatalf("the conversation was compacted %d times, want at least 2", summaries)
	}
	reqs := tr.fake.Requests()
	last := reqs[len(reqs)-1].Body
	var r struct {
		System   json.RawMessage `json:"system"`
		Messages json.RawMessage `json:"messages"`
	}
	json.Unmarshal(last, &r)
	if strings.Contains(string(r.Messages), "4711") {
		t.Fatalf("the last request's conversation still holds the fact itself; the test proves nothing")
	}
	if !strings.Contains(string(r.System), "4711") {
		t.Errorf("after %d compactions the fact from turn 3 is lost: the last request's system prompt:\n%s", summaries, r.System)
	}
}

// TestContextFiles: AGENTS.md at the root of /workspace is in the
// system prompt; CLAUDE.md where there is no AGENTS.md; a link planted
// in its place is not followed.
func TestContextFiles(t *testing.T) {
	tr := newTestRuntime(t, nil, llmtest.Turn{Text: "one"}, llmtest.Turn{Text: "two"}, llmtest.Turn{Text: "three"}, llmtest.Turn{Text: "four"})
	s := tr.session(t)
	ctx := context.Background()
	waitSent(t)(tr.Send(ctx, s.ID, Message{Text: "hi"}, TurnOptions{}))
	ws := filepath.Join(tr.dir, "agents", "default", "sessions", s.ID, "workspace")
	system := func() string {
		t.Helper()
		reqs := tr.fake.Requests()
		sys, _ := readRequest(t, reqs[len(reqs)-1].Body)
		return sys
	}
	if strings.Contains(system(), "# Project instructions") {
		t.Errorf("project instructions without any file")
	}
	os.WriteFile(filepath.Join(ws, "CLAUDE.md"), []byte("Use tabs, never spaces."), 0o644)
	waitSent(t)(tr.Send(ctx, s.ID, Message{Text: "again"}, TurnOptions{}))
	if sys := system(); !strings.Contains(sys, "## /workspace/CLAUDE.md\nUse tabs, never spaces.") {
		t.Errorf("CLAUDE.md is not in the system prompt:\n%s", sys)
	}
	os.WriteFile(filepath.Join(ws, "AGENTS.md"), []byte("Run make test before you say done."), 0o644)
	waitSent(t)(tr.Send(ctx, s.ID, Message{Text: "again"}, TurnOptions{}))
	if sys := system(); !strings.Contains(sys, "Run make test") || strings.Contains(sys, "Use tabs") {
		t.Errorf("AGENTS.md should win over CLAUDE.md:\n%s", sys)
	}
	os.Remove(filepath.Join(ws, "AGENTS.md"))
	os.Symlink("/etc/passwd", filepath.Join(ws, "AGENTS.md"))
	waitSent(t)(tr.Send(ctx, s.ID, Message{Text: "again"}, TurnOptions{}))
	if sys := system(); strings.Contains(sys, "root:x:0:0") || !strings.Contains(sys, "den could not read it") {
		t.Errorf("a planted link as AGENTS.md:\n%s", sys)
	}
}

// TestSessionsSearchEveryMessage: den-sessions search in the computer
// finds another session by a word of any of its messages, with a
// snippet around it.
func TestSessionsSearchEveryMessage(t *testing.T) {
	tr := newTestRuntime(t, nil,
		llmtest.Turn{Text: "A zebra called Ziggy, noted."},
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "shell_execute", Input: `{"command":"den-sessions search ziggy --compact"}`}}},
		llmtest.Turn{Text: "Found it."})
	ctx := context.Background()
	a := tr.session(t)
	waitSent(t)(tr.Send(ctx, a.ID, Message{Text: "my daughter's plush is a zebra"}, TurnOptions{}))
	b := tr.session(t)
	waitSent(t)(tr.Send(ctx, b.ID, Message{Text: "what was the zebra's name?"}, TurnOptions{}))
	result := string(tr.fake.Requests()[2].Body)
	if !strings.Contains(result, a.ID) || !strings.Contains(result, "[Ziggy]") {
		t.Errorf("den-sessions search: %s", result)
	}
}

// TestRequestBreakdown: each usage event says how the request was made
// up (den's prompt, memory, tools, history, images), the parts adding up
// to exactly the input tokens the provider reported; the store keeps it
// for the session.
func TestRequestBreakdown(t *testing.T) {
	tr := newTestRuntime(t, nil, llmtest.Turn{Text: "Hello.", InputTokens: 1000, CacheReadTokens: 234, CacheWriteTokens: 11, OutputTokens: 5})
	s := tr.session(t)
	sub := tr.Subscribe(s.ID, 0, nil)
	defer sub.Close()
	waitSent(t)(tr.Send(context.Background(), s.ID, Message{Text: "hi", Parts: nil}, TurnOptions{}))
	var usage map[string]any
	for _, e := range collect(t, sub, "status", "idle") {
		if e.Type == "usage" {
			json.Unmarshal(e.Data, &usage)
		}
	}
	b, _ := usage["breakdown"].(map[string]any)
	sum := 0.0
	for _, v := range b {
		sum += v.(float64)
	}
	for _, part := range []string{"system", "memory", "tools", "history"} {
		if b[part] == nil || b[part].(float64) <= 0 {
			t.Errorf("no %s in the breakdown %v", part, b)
		}
	}
	if sum != 1245 {
		t.Errorf("the parts add up to %v, the provider counted 1245: %v", sum, b)
	}
	total, last, _, err := tr.st.SessionBreakdown(context.Background(), s.ID)
	if err != nil || total["system"] != int64(b["system"].(float64)) || last["history"] != int64(b["history"].(float64)) {
		t.Errorf("stored breakdown %v %v (%v)", total, last, err)
	}
}

// TestSkillsInTheLoop: the agent's skills are listed in the system
// prompt; "/NAME rest" puts that skill's SKILL.md in front of the
// model with the rest of the message; reading a SKILL.md with
// file_read counts as a use.
func TestSkillsInTheLoop(t *testing.T) {
	tr := newTestRuntime(t, nil,
		llmtest.Turn{Text: "Hello."},
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "file_read", Input: `{"path":"/den/skills/haiku-writer/SKILL.md"}`}}},
		llmtest.Turn{Text: "An old pond."})
	ctx := context.Background()
	s := tr.session(t)
	waitSent(t)(tr.Send(ctx, s.ID, Message{Text: "hi"}, TurnOptions{}))
	dir := filepath.Join(tr.dir, "agents", "default", "skills", "haiku-writer")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: haiku-writer\ndescription: Writes haiku about anything the user names.\n---\n\nCount 5-7-5 syllables. Never rhyme.\n"), 0o644)
	waitSent(t)(tr.Send(ctx, s.ID, Message{Text: "/haiku-writer about a frog"}, TurnOptions{}))
	reqs := tr.fake.Requests()
	system, _ := readRequest(t, reqs[1].Body)
	if !strings.Contains(system, "haiku-writer") || !strings.Contains(system, "/den/skills/haiku-writer/SKILL.md") {
		t.Errorf("the skill is not in the system prompt:\n%s", system)
	}
	if body := string(reqs[1].Body); !strings.Contains(body, "about a frog") || !strings.Contains(body, "Count 5-7-5 syllables. Never rhyme.") ||
		!strings.Contains(body, `\u003cskill name=\"haiku-writer\"`) {
		t.Errorf("/haiku-writer did not put the skill in the message: %s", body)
	}
	cat, err := tr.Skills(ctx, "default")
	if err != nil {
		t.Fatal(err)
	}
	e, err := cat.Get("haiku-writer", s.ID, time.Now())
	if err != nil || e.Record == nil || e.Record.Uses != 2 {
		t.Errorf("uses of the skill (the /name and the file_read): %+v %v", e.Record, err)
	}
	// A message that only looks like a command is sent as it is.
	waitSent(t)(tr.Send(ctx, s.ID, Message{Text: "/etc/hosts is broken"}, TurnOptions{}))
	if body := string(tr.fake.Requests()[len(tr.fake.Requests())-1].Body); !strings.Contains(body, "/etc/hosts is broken") {
		t.Errorf("a path was taken for a skill: %s", body)
	}
}
