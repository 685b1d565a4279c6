package openairesponses_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/internal/openaiapi/openaiapitest"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/llm/openairesponses"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func newModel(t testing.TB, srv *llmtest.Server) *openairesponses.Model {
	t.Helper()
	return openaiapitest.New(t, openairesponses.New, "openai-responses", srv)
}

func TestText(t *testing.T) {
	srv := llmtest.NewResponses(t, llmtest.Turn{Text: "Hello from the fake model, in pieces.", InputTokens: 12, OutputTokens: 7})
	got, err := openaiapitest.Run(t, newModel(t, srv), &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{openaiapitest.User("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	want := openaiapitest.Turn{
		Text:  "Hello from the fake model, in pieces.",
		Usage: &llm.Usage{InputTokens: 12, OutputTokens: 7},
		Stop:  llm.StopEndTurn, Dones: 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("turn (-want +got):\n%s", diff)
	}
	r := srv.Requests()[0]
	if r.Path != "/v1/responses" || r.Header.Get("Authorization") != "Bearer sk-test" || r.Header.Get("X-Den-Test") != "yes" {
		t.Errorf("request %s, Authorization %q, X-Den-Test %q", r.Path, r.Header.Get("Authorization"), r.Header.Get("X-Den-Test"))
	}
	var body map[string]any
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	if body["store"] != false || body["include"] != nil || body["reasoning"] != nil {
		t.Errorf("store %v, include %v, reasoning %v; want false and no reasoning for gpt-4.1", body["store"], body["include"], body["reasoning"])
	}
}

func TestReasoningEcho(t *testing.T) {
	srv := llmtest.NewResponses(t,
		llmtest.Turn{Thinking: "The user wants a file; call file_read.", Text: "Reading.", Calls: []llmtest.Call{{ID: "call_1", Name: "file_read", Input: `{"path":"/a"}`}}},
		llmtest.Turn{Text: "Done."},
	)
	m := newModel(t, srv)
	req := &llm.Request{Model: "gpt-5", Thinking: llm.ThinkingMedium, Messages: []llm.Message{openaiapitest.User("read /a")}}
	got, err := openaiapitest.Run(t, m, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Thinking) != 1 {
		t.Fatalf("%d thinking parts, want 1", len(got.Thinking))
	}
	th := got.Thinking[0]
	if th.Text != "The user wants a file; call file_read." || th.API != "openai-responses" || th.Signature != "gpt-5" {
		t.Errorf("thinking = %+v", th)
	}
	var item map[string]any
	if err := json.Unmarshal(th.Opaque, &item); err != nil || item["id"] != "rs_fake" || item["encrypted_content"] == "" {
		t.Fatalf("opaque %s: %v", th.Opaque, err)
	}
	results := llm.Message{Role: llm.User, Parts: []llm.Part{&llm.ToolResult{CallID: "call_1", Name: "file_read", Content: []llm.Part{&llm.Text{Text: "A"}}}}}
	req.Messages = append(req.Messages, got.Message(), results)
	if _, err := openaiapitest.Run(t, m, req); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Include   []string          `json:"include"`
		Reasoning map[string]any    `json:"reasoning"`
		Input     []json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(srv.Requests()[1].Body, &body); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"reasoning.encrypted_content"}, body.Include); diff != "" {
		t.Errorf("include (-want +got):\n%s", diff)
	}
	if body.Reasoning["effort"] != "medium" || body.Reasoning["summary"] != "auto" {
		t.Errorf("reasoning = %v", body.Reasoning)
	}
	var types []string
	for _, it := range body.Input {
		var v struct {
			Type string `json:"type"`
			Role string `json:"role"`
		}
		json.Unmarshal(it, &v)
		types = append(types, v.Type+"/"+v.Role)
	}
	if diff := cmp.Diff([]string{"message/user", "reasoning/", "message/assistant", "function_call/", "function_call_output/"}, types); diff != "" {
		t.Errorf("input items (-want +got):\n%s", diff)
	}
	var replayed, sent any
	json.Unmarshal(body.Input[1], &replayed)
	json.Unmarshal(th.Opaque, &sent)
	if diff := cmp.Diff(sent, replayed); diff != "" {
		t.Errorf("reasoning item changed on replay (-stored +sent):\n%s", diff)
	}
	// Another model gets no reasoning items.
	req.Model = "gpt-5-mini"
	if _, err := openaiapitest.Run(t, m, req); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(srv.Requests()[2].Body, []byte(`"type":"reasoning"`)) {
		t.Error("reasoning item replayed to a different model")
	}
}

func TestToolCalls(t *testing.T) {
	srv := llmtest.NewResponses(t, llmtest.Turn{
		Text: "Let me look.",
		Calls: []llmtest.Call{
			{ID: "call_a", Name: "file_read", Input: `{"path":"/etc/hostname","limit":100}`},
			{ID: "call_b", Name: "shell_execute", Input: `{"command":"ls -la /var/minis"}`},
		},
	})
	got, err := openaiapitest.Run(t, newModel(t, srv), &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{openaiapitest.User("look")}})
	if err != nil {
		t.Fatal(err)
	}
	want := openaiapitest.Turn{
		Text: "Let me look.",
		Starts: []llm.ToolCallStart{
			{Index: 0, ID: "call_a", Name: "file_read"},
			{Index: 1, ID: "call_b", Name: "shell_execute"},
		},
		Args: map[int]string{0: `{"path":"/etc/hostname","limit":100}`, 1: `{"command":"ls -la /var/minis"}`},
		Calls: []llm.ToolCall{
			{ID: "call_a", Name: "file_read", Input: json.RawMessage(`{"path":"/etc/hostname","limit":100}`), API: "openai-responses"},
			{ID: "call_b", Name: "shell_execute", Input: json.RawMessage(`{"command":"ls -la /var/minis"}`), API: "openai-responses"},
		},
		Usage: &llm.Usage{},
		Stop:  llm.StopToolUse, Dones: 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("turn (-want +got):\n%s", diff)
	}
}

func TestDuplicateIDs(t *testing.T) {
	srv := llmtest.NewResponses(t, llmtest.Turn{Calls: []llmtest.Call{
		{ID: "call_1", Name: "a", Input: `{}`},
		{ID: "call_1", Name: "b", Input: `{}`},
		{ID: "", Name: "c", Input: `{}`},
		{ID: "", Name: "d", Input: ``},
	}})
	got, err := openaiapitest.Run(t, newModel(t, srv), &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{openaiapitest.User("go")}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, c := range got.Calls {
		if c.ID == "" || seen[c.ID] || got.Starts[i].ID != c.ID {
			t.Errorf("call %d id %q (start %q): empty, repeated or changed", i, c.ID, got.Starts[i].ID)
		}
		seen[c.ID] = true
	}
	if len(got.Calls) != 4 || got.Calls[1].ID != "call_1_2" || string(got.Calls[3].Input) != "{}" {
		t.Errorf("calls = %+v", got.Calls)
	}
}

func TestUsage(t *testing.T) {
	srv := llmtest.NewResponses(t, llmtest.Turn{Text: "x", InputTokens: 100, CacheReadTokens: 900, CacheWriteTokens: 50, OutputTokens: 20})
	got, err := openaiapitest.Run(t, newModel(t, srv), &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{openaiapitest.User("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 900, CacheWriteTokens: 50}
	if diff := cmp.Diff(want, got.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

func TestStopReasons(t *testing.T) {
	for _, tc := range []struct {
		stop  string
		calls bool
		want  llm.StopReason
	}{
		{"", false, llm.StopEndTurn},
		{"", true, llm.StopToolUse},
		{"max_output_tokens", false, llm.StopMaxTokens},
		{"content_filter", false, llm.StopRefusal},
	} {
		t.Run(tc.stop, func(t *testing.T) {
			turn := llmtest.Turn{Text: "t", Stop: tc.stop}
			if tc.calls {
				turn.Calls = []llmtest.Call{{ID: "c", Name: "n", Input: "{}"}}
			}
			got, err := openaiapitest.Run(t, newModel(t, llmtest.NewResponses(t, turn)), &llm.Request{Model: "m", Messages: []llm.Message{openaiapitest.User("hi")}})
			if err != nil {
				t.Fatal(err)
			}
			if got.Stop != tc.want {
				t.Errorf("stop = %q, want %q", got.Stop, tc.want)
			}
		})
	}
}

func TestFailures(t *testing.T) {
	for _, tc := range []struct {
		stop string
		want *llm.APIError
	}{
		{"failed", &llm.APIError{API: "openai-responses", Type: "server_error", Message: "The model failed to answer."}},
		{"error", &llm.APIError{API: "openai-responses", Type: "rate_limit_exceeded", Message: "Slow down."}},
	} {
		t.Run(tc.stop, func(t *testing.T) {
			srv := llmtest.NewResponses(t, llmtest.Turn{Text: "t", Stop: tc.stop})
			_, err := openaiapitest.Run(t, newModel(t, srv), &llm.Request{Model: "m", Messages: []llm.Message{openaiapitest.User("hi")}})
			var apiErr *llm.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v, want *llm.APIError", err)
			}
			if diff := cmp.Diff(tc.want, apiErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHTTPError(t *testing.T) {
	srv := llmtest.NewResponses(t, llmtest.Turn{Error: &llmtest.HTTPError{
		Status:     429,
		Body:       `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
		RetryAfter: "7",
	}})
	_, err := openaiapitest.Run(t, newModel(t, srv), &llm.Request{Model: "m", Messages: []llm.Message{openaiapitest.User("hi")}})
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *llm.APIError", err)
	}
	want := &llm.APIError{API: "openai-responses", Status: 429, Type: "rate_limit_exceeded", Message: "Rate limit reached", RetryAfter: 7 * time.Second}
	if diff := cmp.Diff(want, apiErr); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1 (no SDK retries)", n)
	}
}

func TestBrokenStream(t *testing.T) {
	for _, tc := range []struct {
		name string
		turn llmtest.Turn
		want error
	}{
		{"cut", llmtest.Turn{Text: "half an answer", Stop: llmtest.StopCut}, llm.ErrStream},
		{"no final event", llmtest.Turn{Text: "half an answer", Stop: llmtest.StopNone}, llm.ErrStream},
		{"empty", llmtest.Turn{Stop: llmtest.StopNone}, llm.ErrEmpty},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewResponses(t, tc.turn)
			_, err := openaiapitest.Run(t, newModel(t, srv), &llm.Request{Model: "m", Messages: []llm.Message{openaiapitest.User("hi")}})
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestBreakCancels(t *testing.T) {
	gone := make(chan struct{})
	srv := llmtest.NewServer(t, []llmtest.Turn{{}}, func(w http.ResponseWriter, r *http.Request, _ llmtest.Turn) {
		w.Header().Set("Content-Type", "text/event-stream")
		llmtest.SSE(w, "response.output_text.delta", `{"type":"response.output_text.delta","sequence_number":0,"item_id":"msg","output_index":0,"content_index":0,"delta":"first"}`)
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(30 * time.Second): // a hang guard, not a timing assertion
		}
	})
	for ev, err := range newModel(t, srv).Stream(context.Background(), &llm.Request{Model: "m", Messages: []llm.Message{openaiapitest.User("hi")}}) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := ev.(*llm.TextDelta); ok {
			break
		}
	}
	select {
	case <-gone:
	case <-time.After(30 * time.Second):
		t.Fatal("the server never saw the request cancelled")
	}
}

func TestNew(t *testing.T) {
	if _, err := openairesponses.New(llm.Provider{Name: "openai"}); !errors.Is(err, llm.ErrNoKey) {
		t.Errorf("no key: err = %v, want ErrNoKey", err)
	}
	if _, err := openairesponses.New(llm.Provider{Name: "local", BaseURL: "http://localhost:8080/v1"}); err != nil {
		t.Errorf("local without key: %v", err)
	}
}

// conversation exercises every part kind and the reasoning replay.
func conversation() *llm.Request {
	png := []byte("\x89PNG fake")
	return &llm.Request{
		Model:     "gpt-5",
		System:    "You are den.",
		MaxTokens: 4096,
		Thinking:  llm.ThinkingMax,
		CacheKey:  "session-1",
		Tools: []llm.Tool{
			{Name: "file_read", Description: "Read a file.", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
			{Name: "screenshot", Description: "Take a screenshot."},
		},
		Messages: []llm.Message{
			{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "What is in /etc/hostname?"}, &llm.Image{MediaType: "image/png", Data: png}}},
			{Role: llm.Assistant, Parts: []llm.Part{
				&llm.Thinking{Text: "Two tools.", API: "openai-responses", Signature: "gpt-5",
					Opaque: json.RawMessage(`{"id":"rs_1","type":"reasoning","encrypted_content":"gAAAAenc","summary":[{"type":"summary_text","text":"Two tools."}]}`)},
				&llm.Thinking{Text: "other model", API: "openai-responses", Signature: "o3",
					Opaque: json.RawMessage(`{"id":"rs_0","type":"reasoning","encrypted_content":"gAAAAold","summary":[]}`)},
				&llm.Thinking{Text: "not mine", Signature: "sig", API: "anthropic"},
				&llm.Text{Text: "Reading."},
				&llm.ToolCall{ID: "call_1", Name: "file_read", Input: json.RawMessage(`{"path":"/etc/hostname"}`)},
				&llm.ToolCall{ID: "call_2", Name: "screenshot", Input: nil},
				&llm.ToolCall{ID: "call_3", Name: "file_read", Input: json.RawMessage(`{"path":"/nope"}`)},
			}},
			{Role: llm.User, Parts: []llm.Part{
				&llm.ToolResult{CallID: "call_1", Name: "file_read", Content: []llm.Part{&llm.Text{Text: "den-box"}}},
				&llm.ToolResult{CallID: "call_2", Name: "screenshot", Content: []llm.Part{&llm.Text{Text: "screen:"}, &llm.Image{MediaType: "image/png", Data: png}}},
				&llm.ToolResult{CallID: "call_3", Name: "file_read", IsError: true, Content: []llm.Part{&llm.Text{Text: "no such file"}}},
				&llm.Text{Text: "Thanks."},
			}},
		},
	}
}

func TestRequestGolden(t *testing.T) {
	srv := llmtest.NewResponses(t, llmtest.Turn{Text: "ok"})
	if _, err := openaiapitest.Run(t, newModel(t, srv), conversation()); err != nil {
		t.Fatal(err)
	}
	openaiapitest.Golden(t, filepath.Join("testdata", "request.golden"), srv.Requests()[0].Body, *update)
}

func BenchmarkStream(b *testing.B) {
	openaiapitest.BenchmarkStream(b, func(turn llmtest.Turn) llm.Model {
		return newModel(b, llmtest.NewResponses(b, turn))
	})
}
