package gemini_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"image"
	"image/color"
	"image/gif"
	"image/png"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/gemini"
	"den.dev/den/internal/llm/llmtest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

const (
	testKey   = "test-key"
	testModel = "gemini-2.5-flash"
)

func newModel(t testing.TB, s *llmtest.Server) *gemini.Model {
	t.Helper()
	m, err := gemini.New(llm.Provider{Name: "g", Type: "gemini", BaseURL: s.URL, APIKey: testKey, Headers: map[string]string{"X-Den": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// collect runs one stream to its end.
func collect(m llm.Model, req *llm.Request) ([]llm.Event, error) {
	var evs []llm.Event
	for ev, err := range m.Stream(context.Background(), req) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// assemble builds the assistant message a turn's events describe, as
// the agent loop does.
func assemble(evs []llm.Event) llm.Message {
	msg := llm.Message{Role: llm.Assistant}
	var text strings.Builder
	for _, ev := range evs {
		switch ev := ev.(type) {
		case *llm.TextDelta:
			text.WriteString(ev.Text)
		case *llm.ThinkingDone:
			msg.Parts = append(msg.Parts, &ev.Thinking)
		case *llm.ToolCallDone:
			msg.Parts = append(msg.Parts, &ev.Call)
		}
	}
	if text.Len() > 0 {
		msg.Parts = append(msg.Parts, &llm.Text{Text: text.String()})
	}
	return msg
}

func userText(s string) llm.Message {
	return llm.Message{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: s}}}
}

// body decodes request i's JSON body.
func body(t *testing.T, s *llmtest.Server, i int) map[string]any {
	t.Helper()
	reqs := s.Requests()
	if len(reqs) <= i {
		t.Fatalf("server saw %d requests, want at least %d", len(reqs), i+1)
	}
	var v map[string]any
	if err := json.Unmarshal(reqs[i].Body, &v); err != nil {
		t.Fatalf("request %d body: %v\n%s", i, err, reqs[i].Body)
	}
	return v
}

// jsonValue parses a JSON literal for comparison with decoded bodies.
func jsonValue(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad literal %s: %v", s, err)
	}
	return v
}

// compact is the JSON s without spaces, as the API sends arguments.
func compact(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestNewNoKey(t *testing.T) {
	_, err := gemini.New(llm.Provider{Name: "g", Type: "gemini"})
	if !errors.Is(err, llm.ErrNoKey) {
		t.Fatalf("New without key: %v, want ErrNoKey", err)
	}
}

func TestText(t *testing.T) {
	s := llmtest.NewGemini(t, llmtest.Turn{Text: "Hello from the fake Gemini.", InputTokens: 12, OutputTokens: 7})
	evs, err := collect(newModel(t, s), &llm.Request{Model: testModel, System: "Be brief.", Messages: []llm.Message{userText("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	var want []llm.Event
	for _, c := range llmtest.Chunks("Hello from the fake Gemini.", 3) {
		want = append(want, &llm.TextDelta{Text: c})
	}
	want = append(want, &llm.Usage{InputTokens: 12, OutputTokens: 7}, &llm.Done{Stop: llm.StopEndTurn})
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}

	r := s.Requests()[0]
	if r.Path != "/v1beta/models/"+testModel+":streamGenerateContent" {
		t.Errorf("path %q", r.Path)
	}
	if got := r.Header.Get("X-Goog-Api-Key"); got != testKey {
		t.Errorf("x-goog-api-key %q, want %q", got, testKey)
	}
	if got := r.Header.Get("X-Den"); got != "1" {
		t.Errorf("provider header X-Den %q, want 1", got)
	}
	b := body(t, s, 0)
	if diff := cmp.Diff(jsonValue(t, `{"parts": [{"text": "Be brief."}]}`), b["systemInstruction"]); diff != "" {
		t.Errorf("systemInstruction (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(jsonValue(t, `[{"role": "user", "parts": [{"text": "hi"}]}]`), b["contents"]); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
}

func TestBaseURLWithVersion(t *testing.T) {
	s := llmtest.NewGemini(t, llmtest.Turn{Text: "ok"})
	m, err := gemini.New(llm.Provider{BaseURL: s.URL + "/v1beta/", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := collect(m, &llm.Request{Model: "models/" + testModel, Messages: []llm.Message{userText("hi")}}); err != nil {
		t.Fatal(err)
	}
	if got := s.Requests()[0].Path; got != "/v1beta/models/"+testModel+":streamGenerateContent" {
		t.Errorf("path %q", got)
	}
}

func TestThinkingReplayed(t *testing.T) {
	const thinking = "The user greets me; I should greet back."
	s := llmtest.NewGemini(t,
		llmtest.Turn{Thinking: thinking, Text: "Hello!", InputTokens: 10, OutputTokens: 40},
		llmtest.Turn{Text: "Fine."},
	)
	m := newModel(t, s)
	req := &llm.Request{Model: testModel, Thinking: llm.ThinkingMedium, Messages: []llm.Message{userText("hi")}}
	evs, err := collect(m, req)
	if err != nil {
		t.Fatal(err)
	}
	var deltas strings.Builder
	var done *llm.ThinkingDone
	for _, ev := range evs {
		switch ev := ev.(type) {
		case *llm.ThinkingDelta:
			deltas.WriteString(ev.Text)
		case *llm.ThinkingDone:
			done = ev
		}
	}
	if deltas.String() != thinking {
		t.Errorf("thinking deltas %q, want %q", deltas.String(), thinking)
	}
	wantDone := &llm.ThinkingDone{Thinking: llm.Thinking{Text: thinking, Signature: llmtest.GeminiSignature(thinking), API: "gemini"}}
	if diff := cmp.Diff(wantDone, done); diff != "" {
		t.Errorf("ThinkingDone (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&llm.Usage{InputTokens: 10, OutputTokens: 40}, evs[len(evs)-2]); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}

	req.Messages = append(req.Messages, assemble(evs), userText("how are you?"))
	if _, err := collect(m, req); err != nil {
		t.Fatal(err)
	}
	b := body(t, s, 1)
	want := jsonValue(t, `{"role": "model", "parts": [
		{"text": "`+thinking+`", "thought": true, "thoughtSignature": "`+llmtest.GeminiSignature(thinking)+`"},
		{"text": "Hello!"}]}`)
	if diff := cmp.Diff(want, b["contents"].([]any)[1]); diff != "" {
		t.Errorf("replayed model content (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(jsonValue(t, `{"thinkingConfig": {"thinkingBudget": 8192, "includeThoughts": true}}`), b["generationConfig"]); diff != "" {
		t.Errorf("generationConfig (-want +got):\n%s", diff)
	}
}

func TestToolCallsWithoutIDs(t *testing.T) {
	calls := []llmtest.Call{
		{Name: "file_read", Input: `{"path": "/etc/hostname"}`},
		{Name: "shell_execute", Input: `{"command": "ls"}`},
	}
	s := llmtest.NewGemini(t, llmtest.Turn{Text: "Looking.", Calls: calls}, llmtest.Turn{Calls: calls}, llmtest.Turn{Text: "Done."})
	m := newModel(t, s)
	req := &llm.Request{Model: testModel, Messages: []llm.Message{userText("look around")},
		Tools: []llm.Tool{{Name: "file_read", Schema: json.RawMessage(`{"type": "object"}`)}, {Name: "shell_execute"}}}

	seen := map[string]bool{}
	var turns [][]llm.Event
	for range 2 {
		evs, err := collect(m, req)
		if err != nil {
			t.Fatal(err)
		}
		turns = append(turns, evs)
		var starts, dones int
		for _, ev := range evs {
			switch ev := ev.(type) {
			case *llm.ToolCallStart:
				starts++
				if !strings.HasPrefix(ev.ID, "gemini_call_") || seen[ev.ID] {
					t.Errorf("call id %q: want a fresh gemini_call_ id", ev.ID)
				}
				seen[ev.ID] = true
			case *llm.ToolCallDelta:
				if want := compact(t, calls[ev.Index].Input); ev.JSON != want {
					t.Errorf("call %d delta %q, want %q", ev.Index, ev.JSON, want)
				}
			case *llm.ToolCallDone:
				dones++
				if !seen[ev.Call.ID] || ev.Call.Name != calls[ev.Index].Name || string(ev.Call.Input) != compact(t, calls[ev.Index].Input) || ev.Call.API != "gemini" {
					t.Errorf("call %d done: %+v", ev.Index, ev.Call)
				}
			}
		}
		if starts != 2 || dones != 2 {
			t.Errorf("%d starts and %d dones, want 2 each", starts, dones)
		}
		if diff := cmp.Diff(&llm.Done{Stop: llm.StopToolUse}, evs[len(evs)-1]); diff != "" {
			t.Errorf("STOP with calls (-want +got):\n%s", diff)
		}
	}

	// Answer the first turn's calls, the second by name only and as an
	// error.
	asst := assemble(turns[0])
	var results []llm.Part
	for i, p := range asst.Parts {
		if c, ok := p.(*llm.ToolCall); ok {
			r := &llm.ToolResult{CallID: c.ID, Name: c.Name, Content: []llm.Part{&llm.Text{Text: "out " + c.Name}}}
			if i == 1 {
				r.Name, r.IsError = "", true // looked up from the call
			}
			results = append(results, r)
		}
	}
	req.Messages = append(req.Messages, asst, llm.Message{Role: llm.User, Parts: results})
	if _, err := collect(m, req); err != nil {
		t.Fatal(err)
	}
	contents := body(t, s, 2)["contents"].([]any)
	want := jsonValue(t, `[
		{"role": "user", "parts": [{"text": "look around"}]},
		{"role": "model", "parts": [
			{"functionCall": {"name": "file_read", "args": {"path": "/etc/hostname"}}},
			{"functionCall": {"name": "shell_execute", "args": {"command": "ls"}}},
			{"text": "Looking."}]},
		{"role": "user", "parts": [
			{"functionResponse": {"name": "file_read", "response": {"output": "out file_read"}}},
			{"functionResponse": {"name": "shell_execute", "response": {"error": "out shell_execute"}}}]}]`)
	if diff := cmp.Diff(want, any(contents)); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
}

func TestToolCallIDsFromAPI(t *testing.T) {
	s := llmtest.NewGemini(t, llmtest.Turn{Calls: []llmtest.Call{{ID: "fc-1", Name: "ls", Input: `{}`}}}, llmtest.Turn{Text: "ok"})
	m := newModel(t, s)
	req := &llm.Request{Model: testModel, Messages: []llm.Message{userText("ls")}}
	evs, err := collect(m, req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(&llm.ToolCallStart{Index: 0, ID: "fc-1", Name: "ls"}, evs[0]); diff != "" {
		t.Errorf("start (-want +got):\n%s", diff)
	}
	req.Messages = append(req.Messages, assemble(evs), llm.Message{Role: llm.User, Parts: []llm.Part{
		&llm.ToolResult{CallID: "fc-1", Name: "ls", Content: []llm.Part{&llm.Text{Text: "a b"}}},
	}})
	if _, err := collect(m, req); err != nil {
		t.Fatal(err)
	}
	contents := body(t, s, 1)["contents"].([]any)
	want := jsonValue(t, `[
		{"role": "model", "parts": [{"functionCall": {"id": "fc-1", "name": "ls", "args": {}}}]},
		{"role": "user", "parts": [{"functionResponse": {"id": "fc-1", "name": "ls", "response": {"output": "a b"}}}]}]`)
	if diff := cmp.Diff(want, any(contents[1:])); diff != "" {
		t.Errorf("contents (-want +got):\n%s", diff)
	}
}

func TestCallSignatureReplayed(t *testing.T) {
	s := llmtest.NewGemini(t,
		llmtest.Turn{Thinking: "I need the date.", Calls: []llmtest.Call{{Name: "date", Input: `{}`}, {Name: "uptime", Input: `{}`}}},
		llmtest.Turn{Text: "ok"},
	)
	m := newModel(t, s)
	req := &llm.Request{Model: testModel, Thinking: llm.ThinkingLow, Messages: []llm.Message{userText("when?")}}
	evs, err := collect(m, req)
	if err != nil {
		t.Fatal(err)
	}
	var sigs []string
	for _, ev := range evs {
		if d, ok := ev.(*llm.ToolCallDone); ok {
			sigs = append(sigs, d.Call.Signature)
		}
	}
	if diff := cmp.Diff([]string{llmtest.GeminiCallSignature("date"), ""}, sigs); diff != "" {
		t.Errorf("call signatures (-want +got):\n%s", diff)
	}
	asst := assemble(evs)
	var results []llm.Part
	for _, p := range asst.Parts {
		if c, ok := p.(*llm.ToolCall); ok {
			results = append(results, &llm.ToolResult{CallID: c.ID, Name: c.Name, Content: []llm.Part{&llm.Text{Text: "x"}}})
		}
	}
	req.Messages = append(req.Messages, asst, llm.Message{Role: llm.User, Parts: results})
	if _, err := collect(m, req); err != nil {
		t.Fatal(err)
	}
	model := body(t, s, 1)["contents"].([]any)[1]
	want := jsonValue(t, `{"role": "model", "parts": [
		{"text": "I need the date.", "thought": true, "thoughtSignature": "`+llmtest.GeminiSignature("I need the date.")+`"},
		{"functionCall": {"name": "date", "args": {}}, "thoughtSignature": "`+llmtest.GeminiCallSignature("date")+`"},
		{"functionCall": {"name": "uptime", "args": {}}}]}`)
	if diff := cmp.Diff(want, model); diff != "" {
		t.Errorf("replayed model content (-want +got):\n%s", diff)
	}
}

func TestStopReasons(t *testing.T) {
	call := []llmtest.Call{{Name: "ls", Input: `{}`}}
	for _, tc := range []struct {
		turn llmtest.Turn
		want llm.StopReason
	}{
		{llmtest.Turn{Text: "a"}, llm.StopEndTurn},
		{llmtest.Turn{Calls: call}, llm.StopToolUse},
		{llmtest.Turn{Text: "a", Stop: "MAX_TOKENS"}, llm.StopMaxTokens},
		{llmtest.Turn{Text: "a", Stop: "SAFETY"}, llm.StopRefusal},
		{llmtest.Turn{Text: "a", Stop: "RECITATION"}, llm.StopRefusal},
		{llmtest.Turn{Stop: "PROHIBITED_CONTENT"}, llm.StopRefusal},
		{llmtest.Turn{Stop: "BLOCKLIST"}, llm.StopRefusal},
		{llmtest.Turn{Stop: "MALFORMED_FUNCTION_CALL"}, llm.StopOther},
		{llmtest.Turn{Stop: "OTHER"}, llm.StopOther},
	} {
		s := llmtest.NewGemini(t, tc.turn)
		evs, err := collect(newModel(t, s), &llm.Request{Model: testModel, Messages: []llm.Message{userText("hi")}})
		if err != nil {
			t.Errorf("%+v: %v", tc.turn, err)
			continue
		}
		if diff := cmp.Diff(&llm.Done{Stop: tc.want}, evs[len(evs)-1]); diff != "" {
			t.Errorf("%+v (-want +got):\n%s", tc.turn, diff)
		}
	}
}

func TestPromptBlocked(t *testing.T) {
	s := llmtest.NewServer(t, []llmtest.Turn{{}}, func(w http.ResponseWriter, r *http.Request, _ llmtest.Turn) {
		llmtest.SSE(w, "", `{"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {"promptTokenCount": 9, "totalTokenCount": 9}}`)
	})
	evs, err := collect(newModel(t, s), &llm.Request{Model: testModel, Messages: []llm.Message{userText("bad")}})
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.Event{&llm.Usage{InputTokens: 9}, &llm.Done{Stop: llm.StopRefusal}}
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestUsage(t *testing.T) {
	s := llmtest.NewGemini(t, llmtest.Turn{Thinking: "hm", Text: "a", InputTokens: 100, CacheReadTokens: 30, OutputTokens: 51})
	evs, err := collect(newModel(t, s), &llm.Request{Model: testModel, Messages: []llm.Message{userText("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Usage{InputTokens: 100, OutputTokens: 51, CacheReadTokens: 30}
	if diff := cmp.Diff(want, evs[len(evs)-2]); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

func TestAPIErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  *llmtest.HTTPError
		want *llm.APIError
	}{
		{"retry info", &llmtest.HTTPError{Status: 429, Body: llmtest.GeminiErrorBody(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", "37s")},
			&llm.APIError{API: "gemini", Status: 429, Type: "RESOURCE_EXHAUSTED", Message: "Quota exceeded.", RetryAfter: 37 * time.Second}},
		{"retry-after header wins", &llmtest.HTTPError{Status: 429, RetryAfter: "5", Body: llmtest.GeminiErrorBody(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", "37s")},
			&llm.APIError{API: "gemini", Status: 429, Type: "RESOURCE_EXHAUSTED", Message: "Quota exceeded.", RetryAfter: 5 * time.Second}},
		{"fractional delay", &llmtest.HTTPError{Status: 503, Body: llmtest.GeminiErrorBody(503, "UNAVAILABLE", "The model is overloaded.", "0.5s")},
			&llm.APIError{API: "gemini", Status: 503, Type: "UNAVAILABLE", Message: "The model is overloaded.", RetryAfter: 500 * time.Millisecond}},
		{"array body", &llmtest.HTTPError{Status: 400, Body: "[" + llmtest.GeminiErrorBody(400, "INVALID_ARGUMENT", "bad", "") + "]"},
			&llm.APIError{API: "gemini", Status: 400, Type: "INVALID_ARGUMENT", Message: "bad"}},
		{"not json", &llmtest.HTTPError{Status: 502, Body: "<html>bad gateway</html>"},
			&llm.APIError{API: "gemini", Status: 502, Message: "<html>bad gateway</html>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := llmtest.NewGemini(t, llmtest.Turn{Error: tc.err})
			evs, err := collect(newModel(t, s), &llm.Request{Model: testModel, Messages: []llm.Message{userText("hi")}})
			var ae *llm.APIError
			if !errors.As(err, &ae) {
				t.Fatalf("err %v (events %v), want *llm.APIError", err, evs)
			}
			if diff := cmp.Diff(tc.want, ae); diff != "" {
				t.Errorf("APIError (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWrongPath(t *testing.T) {
	// A base URL with the wrong API version reaches no endpoint.
	s := llmtest.NewGemini(t, llmtest.Turn{Text: "x"})
	m, _ := gemini.New(llm.Provider{BaseURL: s.URL + "/v1", APIKey: testKey})
	_, err := collect(m, &llm.Request{Model: testModel, Messages: []llm.Message{userText("hi")}})
	var ae *llm.APIError
	if !errors.As(err, &ae) || ae.Status != 404 || ae.Type != "NOT_FOUND" {
		t.Fatalf("err %v, want a 404 NOT_FOUND APIError", err)
	}
}

func TestInStreamError(t *testing.T) {
	s := llmtest.NewServer(t, []llmtest.Turn{{}}, func(w http.ResponseWriter, r *http.Request, _ llmtest.Turn) {
		llmtest.SSE(w, "", `{"candidates": [{"content": {"role": "model", "parts": [{"text": "par"}]}}]}`)
		llmtest.SSE(w, "", `{"error": {"code": 500, "message": "Internal error encountered.", "status": "INTERNAL"}}`)
	})
	evs, err := collect(newModel(t, s), &llm.Request{Model: testModel, Messages: []llm.Message{userText("hi")}})
	want := &llm.APIError{API: "gemini", Type: "INTERNAL", Message: "Internal error encountered."}
	var ae *llm.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err %v, want *llm.APIError", err)
	}
	if diff := cmp.Diff(want, ae); diff != "" {
		t.Errorf("APIError (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]llm.Event{&llm.TextDelta{Text: "par"}}, evs); diff != "" {
		t.Errorf("events before the error (-want +got):\n%s", diff)
	}
}

func TestBrokenStreams(t *testing.T) {
	text := `{"candidates": [{"content": {"role": "model", "parts": [{"text": "partial"}]}}]}`
	for _, tc := range []struct {
		name   string
		write  func(w http.ResponseWriter)
		want   error
		events int
	}{
		{"no finish reason", func(w http.ResponseWriter) { llmtest.SSE(w, "", text) }, llm.ErrStream, 1},
		{"cut mid chunk", func(w http.ResponseWriter) {
			llmtest.SSE(w, "", text)
			w.Write([]byte(`data: {"candidates": [{"content": {"ro`))
		}, llm.ErrStream, 1},
		{"malformed chunk", func(w http.ResponseWriter) { llmtest.SSE(w, "", `{"candidates": 7}`) }, llm.ErrStream, 0},
		{"nothing", func(w http.ResponseWriter) {}, llm.ErrEmpty, 0},
		{"usage only", func(w http.ResponseWriter) {
			llmtest.SSE(w, "", `{"usageMetadata": {"promptTokenCount": 3}}`)
		}, llm.ErrEmpty, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := llmtest.NewServer(t, []llmtest.Turn{{}}, func(w http.ResponseWriter, r *http.Request, _ llmtest.Turn) {
				w.Header().Set("Content-Type", "text/event-stream")
				tc.write(w)
			})
			evs, err := collect(newModel(t, s), &llm.Request{Model: testModel, Messages: []llm.Message{userText("hi")}})
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if len(evs) != tc.events {
				t.Errorf("%d events before the error, want %d: %v", len(evs), tc.events, evs)
			}
		})
	}
}

func TestBreakCancels(t *testing.T) {
	canceled := make(chan struct{})
	s := llmtest.NewServer(t, []llmtest.Turn{{}}, func(w http.ResponseWriter, r *http.Request, _ llmtest.Turn) {
		llmtest.SSE(w, "", `{"candidates": [{"content": {"role": "model", "parts": [{"text": "first"}]}}]}`)
		<-r.Context().Done()
		close(canceled)
	})
	m := newModel(t, s)
	n := 0
	for _, err := range m.Stream(context.Background(), &llm.Request{Model: testModel, Messages: []llm.Message{userText("hi")}}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
		break
	}
	if n != 1 {
		t.Fatalf("got %d events before break", n)
	}
	select {
	case <-canceled:
	case <-time.After(30 * time.Second): // a guard against hanging, not a timing assertion
		t.Fatal("the server never saw the request canceled")
	}
}

func TestContextCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := llmtest.NewServer(t, []llmtest.Turn{{}}, func(w http.ResponseWriter, r *http.Request, _ llmtest.Turn) {
		llmtest.SSE(w, "", `{"candidates": [{"content": {"role": "model", "parts": [{"text": "first"}]}}]}`)
		cancel()
		<-r.Context().Done()
	})
	var err error
	for _, e := range newModel(t, s).Stream(ctx, &llm.Request{Model: testModel, Messages: []llm.Message{userText("hi")}}) {
		if e != nil {
			err = e
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
}

func TestThinkingLevels(t *testing.T) {
	for _, tc := range []struct {
		model string
		level llm.ThinkingLevel
		want  string // generationConfig, "" for none
	}{
		{testModel, "", ""},
		{testModel, llm.ThinkingOff, `{"thinkingConfig": {"thinkingBudget": 0}}`},
		{"gemini-2.5-pro", llm.ThinkingOff, `{"thinkingConfig": {"thinkingBudget": 128}}`},
		{testModel, llm.ThinkingLow, `{"thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": true}}`},
		{testModel, llm.ThinkingHigh, `{"thinkingConfig": {"thinkingBudget": 24576, "includeThoughts": true}}`},
		{testModel, llm.ThinkingMax, `{"thinkingConfig": {"thinkingBudget": -1, "includeThoughts": true}}`},
		// Gemini 3 and later think in levels, not budgets.
		{"gemini-3.8-flash", llm.ThinkingOff, `{"thinkingConfig": {"thinkingLevel": "minimal"}}`},
		{"gemini-3.8-flash", llm.ThinkingMedium, `{"thinkingConfig": {"thinkingLevel": "medium", "includeThoughts": true}}`},
		{"models/gemini-3.1-pro-preview", llm.ThinkingOff, `{"thinkingConfig": {"thinkingLevel": "low"}}`},
		{"gemini-3.1-pro-preview", llm.ThinkingMedium, `{"thinkingConfig": {"thinkingLevel": "medium", "includeThoughts": true}}`},
		{"gemini-3-pro-preview", llm.ThinkingMedium, `{"thinkingConfig": {"thinkingLevel": "high", "includeThoughts": true}}`},
		{"gemini-4-flash", llm.ThinkingMax, `{"thinkingConfig": {"thinkingLevel": "high", "includeThoughts": true}}`},
		{"gemini-3.1-flash-lite", llm.ThinkingLow, `{"thinkingConfig": {"thinkingLevel": "low", "includeThoughts": true}}`},
	} {
		s := llmtest.NewGemini(t, llmtest.Turn{Text: "ok"})
		if _, err := collect(newModel(t, s), &llm.Request{Model: tc.model, Thinking: tc.level, Messages: []llm.Message{userText("hi")}}); err != nil {
			t.Fatal(err)
		}
		got := body(t, s, 0)["generationConfig"]
		var want any
		if tc.want != "" {
			want = jsonValue(t, tc.want)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s %q (-want +got):\n%s", tc.model, tc.level, diff)
		}
	}
}

func TestBadRequests(t *testing.T) {
	s := llmtest.NewGemini(t, llmtest.Turn{Text: "ok"})
	m := newModel(t, s)
	for _, tc := range []struct {
		name string
		req  *llm.Request
		want string
	}{
		{"no model", &llm.Request{Messages: []llm.Message{userText("hi")}}, "no model"},
		{"bad role", &llm.Request{Model: testModel, Messages: []llm.Message{{Role: "system", Parts: []llm.Part{&llm.Text{Text: "x"}}}}}, "unknown role"},
		{"schema not an object", &llm.Request{Model: testModel, Messages: []llm.Message{userText("hi")},
			Tools: []llm.Tool{{Name: "t", Schema: json.RawMessage(`[1]`)}}}, "not a JSON object"},
		{"result without a name", &llm.Request{Model: testModel, Messages: []llm.Message{{Role: llm.User, Parts: []llm.Part{&llm.ToolResult{CallID: "x"}}}}}, "no tool name"},
	} {
		_, err := collect(m, tc.req)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
	if n := len(s.Requests()); n != 0 {
		t.Errorf("%d bad requests reached the server", n)
	}
}

// TestGoldenRequest pins the whole request body for a conversation that
// uses every kind of part.
func TestGoldenRequest(t *testing.T) {
	s := llmtest.NewGemini(t, llmtest.Turn{Text: "ok"})
	png := []byte("\x89PNG fake")
	req := &llm.Request{
		Model:     "gemini-2.5-pro",
		System:    "You are den.",
		MaxTokens: 4096,
		Thinking:  llm.ThinkingHigh,
		CacheKey:  "session-1",
		Tools: []llm.Tool{
			{Name: "file_read", Description: "Read a file.", Schema: json.RawMessage(`{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"], "additionalProperties": false}`)},
			{Name: "now", Description: "The time."},
		},
		Messages: []llm.Message{
			{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "What is in this picture and in /etc/hostname?"}, &llm.Image{MediaType: "image/png", Data: png}}},
			{Role: llm.Assistant, Parts: []llm.Part{
				&llm.Thinking{Text: "Look at the image, then read the file.", Signature: "c2lnLTE=", API: "gemini"},
				&llm.Text{Text: "Reading."},
				&llm.ToolCall{ID: "gemini_call_0_abcdef", Name: "file_read", Input: json.RawMessage(`{"path": "/etc/hostname"}`), Signature: "Y2FsbC0x", API: "gemini"},
				&llm.ToolCall{ID: "fc-7", Name: "now", Input: json.RawMessage(`{}`), API: "gemini"},
			}},
			{Role: llm.User, Parts: []llm.Part{
				&llm.ToolResult{CallID: "gemini_call_0_abcdef", Name: "file_read", Content: []llm.Part{&llm.Text{Text: "den-box"}, &llm.Image{MediaType: "image/jpeg", Data: []byte("jpg")}}},
				&llm.ToolResult{CallID: "fc-7", Content: []llm.Part{&llm.Text{Text: "clock broken"}}, IsError: true},
			}},
			// A turn from another provider: its thinking is dropped and
			// its call gets the documented dummy signature.
			{Role: llm.Assistant, Parts: []llm.Part{
				&llm.Thinking{Text: "anthropic thoughts", Signature: "EqQB", API: "anthropic"},
				&llm.ToolCall{ID: "toolu_01", Name: "now", Input: json.RawMessage(`{}`), API: "anthropic"},
			}},
			{Role: llm.User, Parts: []llm.Part{&llm.ToolResult{CallID: "toolu_01", Name: "now", Content: []llm.Part{&llm.Text{Text: "12:00"}}}}},
			{Role: llm.Assistant, Parts: []llm.Part{&llm.Thinking{Text: "only foreign", API: "openai-responses"}}},
			userText("Thanks."),
		},
	}
	if _, err := collect(newModel(t, s), req); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := json.Indent(&got, s.Requests()[0].Body, "", "  "); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("testdata", "request.golden")
	if *update {
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("request body (-want +got):\n%s", diff)
	}
}

// TestGIFBecomesPNG sends GIF images, which Gemini refuses ("Unsupported
// MIME type: image/gif"; the fake does too): they go as PNG, in a prompt
// and in a tool result alike, and a GIF that cannot be decoded goes as
// a note rather than failing every later request.
func TestGIFBecomesPNG(t *testing.T) {
	var g bytes.Buffer
	frame := image.NewPaletted(image.Rect(0, 0, 2, 1), color.Palette{color.Black, color.White})
	frame.SetColorIndex(1, 0, 1)
	if err := gif.Encode(&g, frame, nil); err != nil {
		t.Fatal(err)
	}
	s := llmtest.NewGemini(t, llmtest.Turn{Text: "ok"})
	req := &llm.Request{Model: testModel, Messages: []llm.Message{
		{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "Look."}, &llm.Image{MediaType: "image/gif", Data: g.Bytes()}}},
		{Role: llm.Assistant, Parts: []llm.Part{&llm.ToolCall{ID: "fc-1", Name: "read_image", Input: json.RawMessage(`{}`), API: "gemini"}}},
		{Role: llm.User, Parts: []llm.Part{&llm.ToolResult{CallID: "fc-1", Name: "read_image", Content: []llm.Part{
			&llm.Text{Text: "two images"},
			&llm.Image{MediaType: "image/gif", Data: g.Bytes()},
			&llm.Image{MediaType: "image/gif", Data: []byte("GIF89a broken")},
		}}}},
	}}
	if _, err := collect(newModel(t, s), req); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Contents []struct {
			Parts []struct {
				Text       *string `json:"text"`
				InlineData *struct {
					MimeType string `json:"mimeType"`
					Data     []byte `json:"data"`
				} `json:"inlineData"`
			} `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(s.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	for _, at := range [][2]int{{0, 1}, {2, 1}} {
		d := body.Contents[at[0]].Parts[at[1]].InlineData
		if d == nil || d.MimeType != "image/png" {
			t.Fatalf("contents[%d].parts[%d] = %+v, want a PNG", at[0], at[1], d)
		}
		img, err := png.Decode(bytes.NewReader(d.Data))
		if err != nil {
			t.Fatalf("contents[%d].parts[%d]: %v", at[0], at[1], err)
		}
		if r, _, _, _ := img.At(1, 0).RGBA(); img.Bounds().Dx() != 2 || r == 0 {
			t.Errorf("contents[%d].parts[%d]: the PNG is not the GIF's frame", at[0], at[1])
		}
	}
	note := body.Contents[2].Parts[2].Text
	if note == nil || !strings.Contains(*note, "GIF") {
		t.Errorf("the broken GIF became %+v, want a note about it", body.Contents[2].Parts[2])
	}
}
