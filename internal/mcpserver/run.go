package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/session"
	"den.dev/den/internal/store"
)

// RunIn is run's input.
type RunIn struct {
	Prompt string `json:"prompt" jsonschema:"what to ask den's agent: a task or a question, in plain words"`
	Where
}

// RunOut is run's output.
type RunOut struct {
	Session string `json:"session" jsonschema:"the session's id: give it (or the session's name) to go on"`
	Agent   string `json:"agent"`
	Answer  string `json:"answer" jsonschema:"the agent's final answer"`
	Stop    string `json:"stop" jsonschema:"why the turn ended: end_turn when the agent finished, else max_tokens, a limit, refusal"`
}

// run sends the prompt to the agent and follows the session's events,
// told as progress, until the runs it started end. A canceled call
// cancels the turn.
func (s *Server) run(ctx context.Context, c *call, in RunIn) (*mcp.CallToolResult, RunOut, error) {
	if strings.TrimSpace(in.Prompt) == "" {
		return nil, RunOut{}, refusedf("prompt is empty")
	}
	p, err := s.locate(ctx, c.client, in.Agent, in.Session)
	if err != nil {
		return nil, RunOut{}, err
	}
	if p, err = s.makeFor(ctx, c, p); err != nil {
		return nil, RunOut{}, err
	}
	pc, err := s.allow(ctx, c, p, "in session "+p.label(), in.Prompt)
	if err != nil {
		return nil, RunOut{}, err
	}
	out, err := s.follow(ctx, c, p, in.Prompt)
	code := 0
	if err != nil || out.Stop != string(llm.StopEndTurn) {
		code = 1
	}
	s.done(ctx, pc, code)
	if err != nil {
		return nil, out, err
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out.Answer}}}, out, nil
}

// follow makes the place's session if need be, sends it prompt and
// tells the session's events as c's progress until the runs it started
// end.
func (s *Server) follow(ctx context.Context, c *call, p place, prompt string) (RunOut, error) {
	p, err := s.make(ctx, p)
	if err != nil {
		return RunOut{}, err
	}
	s.setPlace(c.ss, p)
	out := RunOut{Session: p.sess.ID, Agent: p.agent}
	after, err := s.rt.LastEventID(ctx)
	if err != nil {
		return out, err
	}
	sub := s.rt.Subscribe(p.sess.ID, after, nil)
	defer sub.Close()
	// Another den process running the session: wait for it, as den run
	// --wait does, rather than queue a message whose answer never
	// comes back here.
	sent, err := s.rt.Send(ctx, p.sess.ID, session.Message{Text: prompt}, session.TurnOptions{IfBusy: session.Wait})
	switch {
	case errors.Is(err, session.ErrBadOptions):
		return out, refusedf("%v", err)
	case err != nil:
		return out, err
	case sent.Done == nil:
		return out, refusedf("den is stopping: the prompt is kept as message %s of session %s and runs when den starts again", sent.MessageID, p.sess.ID)
	}
	ended, stop := context.WithCancel(context.WithoutCancel(ctx))
	var result session.Outcome
	var wg sync.WaitGroup
	wg.Go(func() {
		defer stop()
		select {
		case result = <-sent.Done:
		case <-ctx.Done():
			s.rt.Cancel(p.sess.ID)
			result = <-sent.Done
		}
	})
	t := &teller{p: c.progress, names: map[string]string{}}
	for {
		e, err := sub.Next(ended)
		if err != nil {
			break
		}
		t.tell(e)
	}
	wg.Wait()
	// The run's last events may be on their way still.
	s.rt.Sync()
	for {
		e, ok, err := sub.Poll(context.Background())
		if err != nil || !ok {
			break
		}
		t.tell(e)
	}
	t.flush()
	out.Answer, out.Stop = result.Result.Text, string(result.Result.Stop)
	switch {
	case ctx.Err() != nil:
		return out, ctx.Err()
	case errors.Is(result.Err, agent.ErrCanceled):
		return out, refusedf("the turn was stopped (session %s)", p.sess.ID)
	case result.Err != nil:
		return out, refusedf("the turn failed: %v (session %s; session_read shows what it did)", result.Err, p.sess.ID)
	}
	return out, nil
}

// teller turns a session's events into progress messages: each tool
// call and result, the answer's text by lines, approvals, retries,
// warnings and errors. Thinking is the model's own and is not told.
type teller struct {
	p     *progress
	names map[string]string // tool call id → tool name
	text  strings.Builder   // text not told yet: told by whole lines
}

func (t *teller) tell(e store.Event) {
	if t.p == nil {
		return
	}
	var d struct {
		Text     string          `json:"text"`
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Input    json.RawMessage `json:"input"`
		IsError  bool            `json:"is_error"`
		ExitCode *int            `json:"exit_code"`
		Message  string          `json:"message"`
		Reason   string          `json:"reason"`
		Question string          `json:"question"`
	}
	if json.Unmarshal(e.Data, &d) != nil {
		return
	}
	if e.Type == "text" {
		t.text.WriteString(d.Text)
		if s := t.text.String(); strings.Contains(s, "\n") || len(s) > maxProgress {
			i := strings.LastIndexByte(s, '\n') + 1
			if i == 0 {
				i = len(s)
			}
			t.p.say(s[:i])
			t.text.Reset()
			t.text.WriteString(s[i:])
		}
		return
	}
	var msg string
	switch e.Type {
	case "tool_call":
		t.names[d.ID] = d.Name
		msg = "→ " + d.Name + " " + callSummary(d.Input)
	case "tool_result":
		msg = "← " + t.names[d.ID]
		switch {
		case d.ExitCode != nil:
			msg += fmt.Sprintf(" (exit %d)", *d.ExitCode)
		case d.IsError:
			msg += " (failed)"
		}
	case "approval_request":
		msg = fmt.Sprintf("waiting for the user's approval in den (den approve %s): %s", d.ID, d.Question)
	case "retry":
		msg = "the model is asked again: " + d.Reason
	case "warning":
		msg = "warning: " + d.Message
	case "error":
		msg = "error: " + d.Message
	case "compaction":
		msg = "the conversation's older part was summarized"
	default:
		return
	}
	t.flush()
	t.p.say(msg)
}

// flush tells the text not told yet.
func (t *teller) flush() {
	if t.p == nil || strings.TrimSpace(t.text.String()) == "" {
		t.text.Reset()
		return
	}
	t.p.say(t.text.String())
	t.text.Reset()
}

// callSummary is a tool call's input in a line: a shell command's
// command, a file tool's path, else the input as JSON.
func callSummary(input json.RawMessage) string {
	var in struct {
		Command string `json:"command"`
		Path    string `json:"path"`
	}
	json.Unmarshal(input, &in)
	switch {
	case in.Command != "":
		return in.Command
	case in.Path != "":
		return in.Path
	}
	return string(input)
}
