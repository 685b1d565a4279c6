package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/internal/openaiapi/openaiapitest"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/llm/openai"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func newModel(t testing.TB, srv *llmtest.Server) *openai.Model {
	t.Helper()
	return openaiapitest.New(t, openai.New, "openai", srv)
}

func TestText(t *testing.T) {
	srv := llmtest.NewOpenAI(t, llmtest.Turn{Text: "Hello from the fake model, in pieces.", InputTokens: 12, OutputTokens: 7})
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
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer sk-test" || r.Header.Get("X-Den-Test") != "yes" {
		t.Errorf("request %s, Authorization %q, X-Den-Test %q", r.Path, r.Header.Get("Authorization"), r.Header.Get("X-Den-Test"))
	}
}

func TestReasoningEcho(t *testing.T) {
	srv := llmtest.NewOpenAI(t,
		llmtest.Turn{Thinking: "The user greets me; I should greet back.", Text: "Hello!"},
		llmtest.Turn{Text: "Fine."},
	)
	m := newModel(t, srv)
	req := &llm.Request{Model: "deepseek-reasoner", Thinking: llm.ThinkingHigh, Messages: []llm.Message{openaiapitest.User("hi")}}
	got, err := openaiapitest.Run(t, m, req)
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.Thinking{{Text: "The user greets me; I should greet back.", API: "openai"}}
	if diff := cmp.Diff(want, got.Thinking); diff != "" {
		t.Fatalf("thinking (-want +got):\n%s", diff)
	}
	req.Messages = append(req.Messages, got.Message(), openaiapitest.User("how are you?"))
	if _, err := openaiapitest.Run(t, m, req); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []map[string]any `json:"messages"`
		Effort   *string          `json:"reasoning_effort"`
	}
	if err := json.Unmarshal(srv.Requests()[1].Body, &body); err != nil {
		t.Fatal(err)
	}
	if len(body.Messages) != 3 {
		t.Fatalf("%d messages, want 3", len(body.Messages))
	}
	a := body.Messages[1]
	if a["role"] != "assistant" || a["reasoning_content"] != "The user greets me; I should greet back." || a["content"] != "Hello!" {
		t.Errorf("replayed assistant message = %v", a)
	}
	if body.Effort != nil {
		t.Errorf("reasoning_effort %q sent to a model that does not take it", *body.Effort)
	}
}

func TestToolCalls(t *testing.T) {
	srv := llmtest.NewOpenAI(t, llmtest.Turn{
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
			{ID: "call_a", Name: "file_read", Input: json.RawMessage(`{"path":"/etc/hostname","limit":100}`), API: "openai"},
			{ID: "call_b", Name: "shell_execute", Input: json.RawMessage(`{"command":"ls -la /var/minis"}`), API: "openai"},
		},
		Usage: &llm.Usage{},
		Stop:  llm.StopToolUse, Dones: 1,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("turn (-want +got):\n%s", diff)
	}
}

func TestDuplicateIDs(t *testing.T) {
	srv := llmtest.NewOpenAI(t,
		llmtest.Turn{Calls: []llmtest.Call{
			{ID: "call_1", Name: "a", Input: `{}`},
			{ID: "call_1", Name: "b", Input: `{}`},
			{ID: "", Name: "c", Input: `{}`},
			{ID: "", Name: "d", Input: ``},
		}},
		llmtest.Turn{Text: "done"},
	)
	m := newModel(t, srv)
	req := &llm.Request{Model: "gpt-4.1", Messages: []llm.Message{openaiapitest.User("go")}}
	got, err := openaiapitest.Run(t, m, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Calls) != 4 {
		t.Fatalf("%d calls, want 4", len(got.Calls))
	}
	seen := map[string]bool{}
	for i, c := range got.Calls {
		if c.ID == "" || seen[c.ID] {
			t.Errorf("call %d id %q: empty or repeated", i, c.ID)
		}
		seen[c.ID] = true
		if got.Starts[i].ID != c.ID {
			t.Errorf("call %d: start id %q, done id %q", i, got.Starts[i].ID, c.ID)
		}
	}
	if got.Calls[0].ID != "call_1" || got.Calls[1].ID != "call_1_2" || !strings.HasPrefix(got.Calls[2].ID, "call_") {
		t.Errorf("ids %q %q %q", got.Calls[0].ID, got.Calls[1].ID, got.Calls[2].ID)
	}
	if string(got.Calls[3].Input) != "{}" {
		t.Errorf("empty arguments became %q, want {}", got.Calls[3].Input)
	}
	// Results answer the renamed ids, each pairing with one call.
	results := llm.Message{Role: llm.User}
	for _, c := range got.Calls {
		results.Parts = append(results.Parts, &llm.ToolResult{CallID: c.ID, Name: c.Name, Content: []llm.Part{&llm.Text{Text: "ok " + c.Name}}})
	}
	req.Messages = append(req.Messages, got.Message(), results)
	if _, err := openaiapitest.Run(t, m, req); err != nil {
		t.Fatal(err)
	}
	var body struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(srv.Requests()[1].Body, &body); err != nil {
		t.Fatal(err)
	}
	pairs := map[string]int{}
	for _, msg := range body.Messages {
		for _, c := range msg.ToolCalls {
			pairs[c.ID]++
		}
		if msg.Role == "tool" {
			pairs[msg.ToolCallID] += 10
		}
	}
	for id, n := range pairs {
		if n != 11 {
			t.Errorf("id %q: %d calls and %d results, want 1 and 1", id, n%10, n/10)
		}
	}
	if len(pairs) != 4 {
		t.Errorf("%d distinct ids replayed, want 4", len(pairs))
	}
}

func TestUsage(t *testing.T) {
	srv := llmtest.NewOpenAI(t, llmtest.Turn{Text: "x", InputTokens: 100, CacheReadTokens: 900, CacheWriteTokens: 50, OutputTokens: 20})
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
		finish string
		calls  bool
		want   llm.StopReason
	}{
		{"stop", false, llm.StopEndTurn},
		{"stop", true, llm.StopToolUse}, // gateways that say stop after calls
		{"tool_calls", true, llm.StopToolUse},
		{"length", false, llm.StopMaxTokens},
		{"content_filter", false, llm.StopRefusal},
		{"something_new", false, llm.StopOther},
	} {
		t.Run(tc.finish, func(t *testing.T) {
			turn := llmtest.Turn{Text: "t", Stop: tc.finish}
			if tc.calls {
				turn.Calls = []llmtest.Call{{ID: "c", Name: "n", Input: "{}"}}
			}
			got, err := openaiapitest.Run(t, newModel(t, llmtest.NewOpenAI(t, turn)), &llm.Request{Model: "m", Messages: []llm.Message{openaiapitest.User("hi")}})
			if err != nil {
				t.Fatal(err)
			}
			if got.Stop != tc.want {
				t.Errorf("stop = %q, want %q", got.Stop, tc.want)
			}
		})
	}
}

func TestHTTPError(t *testing.T) {
	srv := llmtest.NewOpenAI(t, llmtest.Turn{Error: &llmtest.HTTPError{
		Status:     429,
		Body:       `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
		RetryAfter: "7",
	}})
	_, err := openaiapitest.Run(t, newModel(t, srv), &llm.Request{Model: "m", Messages: []llm.Message{openaiapitest.User("hi")}})
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *llm.APIError", err)
	}
	want := &llm.APIError{API: "openai", Status: 429, Type: "rate_limit_exceeded", Message: "Rate limit reached", RetryAfter: 7 * time.Second}
	if diff := cmp.Diff(want, apiErr); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Errorf("%d requests, want 1 (no SDK retries)", n)
	}
}

func TestHTTPErrorShapes(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want llm.APIError
	}{
		{"ollama", `{"error":"model \"x\" not found"}`, llm.APIError{API: "openai", Status: 404, Message: `model "x" not found`}},
		{"plain", `upstream timed out`, llm.APIError{API: "openai", Status: 404, Message: "upstream timed out"}},
		{"numeric code", `{"error":{"message":"bad","type":"invalid_request_error","code":400}}`, llm.APIError{API: "openai", Status: 404, Type: "invalid_request_error", Message: "bad"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t, llmtest.Turn{Error: &llmtest.HTTPError{Status: 404, Body: tc.body}})
			_, err := openaiapitest.Run(t, newModel(t, srv), &llm.Request{Model: "m", Messages: []llm.Message{openaiapitest.User("hi")}})
			var apiErr *llm.APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("err = %v, want *llm.APIError", err)
			}
			if diff := cmp.Diff(&tc.want, apiErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRetryAfterMs(t *testing.T) {
	srv := llmtest.NewServer(t, []llmtest.Turn{{}}, func(w http.ResponseWriter, r *http.Request, _ llmtest.Turn) {
		w.Header().Set("Retry-After-Ms", "1500")
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(503)
		w.Write([]byte(`{"error":{"message":"overloaded","type":"server_error"}}`))
	})
	_, err := openaiapitest.Run(t, newModel(t, srv), &llm.Request{Model: "m", Messages: []llm.Message{openaiapitest.User("hi")}})
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) || apiErr.RetryAfter != 1500*time.Millisecond || apiErr.Status != 503 {
		t.Fatalf("err = %#v, want a 503 APIError with RetryAfter 1.5s", err)
	}
}

func TestStreamErrorEvent(t *testing.T) {
	srv := llmtest.NewServer(t, []llmtest.Turn{{}}, func(w http.ResponseWriter, r *http.Request, _ llmtest.Turn) {
		w.Header().Set("Content-Type", "text/event-stream")
		llmtest.SSE(w, "", `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"par"}}]}`)
		llmtest.SSE(w, "", `{"error":{"message":"Provider returned error","code":502,"type":"upstream_error"}}`)
	})
	_, err := openaiapitest.Run(t, newModel(t, srv), &llm.Request{Model: "m", Messages: []llm.Message{openaiapitest.User("hi")}})
	var apiErr *llm.APIError
	if !errors.As(err, &apiErr) {
		t.Fatalf("err = %v, want *llm.APIError", err)
	}
	want := &llm.APIError{API: "openai", Type: "upstream_error", Message: "Provider returned error"}
	if diff := cmp.Diff(want, apiErr); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

func TestBrokenStream(t *testing.T) {
	for _, tc := range []struct {
		name string
		turn llmtest.Turn
		want error
	}{
		{"cut", llmtest.Turn{Text: "half an answer", Stop: llmtest.StopCut}, llm.ErrStream},
		{"no finish", llmtest.Turn{Text: "half an answer", Stop: llmtest.StopNone}, llm.ErrStream},
		{"cut before anything", llmtest.Turn{Stop: llmtest.StopCut}, llm.ErrStream},
		{"empty", llmtest.Turn{Stop: llmtest.StopNone}, llm.ErrEmpty},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t, tc.turn)
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
		llmtest.SSE(w, "", `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"first"}}]}`)
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(30 * time.Second): // a hang guard, not a timing assertion
		}
	})
	m := newModel(t, srv)
	for ev, err := range m.Stream(context.Background(), &llm.Request{Model: "m", Messages: []llm.Message{openaiapitest.User("hi")}}) {
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

func TestContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	srv := llmtest.NewServer(t, []llmtest.Turn{{}}, func(w http.ResponseWriter, r *http.Request, _ llmtest.Turn) {
		w.Header().Set("Content-Type", "text/event-stream")
		llmtest.SSE(w, "", `{"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"first"}}]}`)
		cancel()
		<-r.Context().Done()
	})
	var err error
	for _, err = range newModel(t, srv).Stream(ctx, &llm.Request{Model: "m", Messages: []llm.Message{openaiapitest.User("hi")}}) {
		if err != nil {
			break
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestNew(t *testing.T) {
	if _, err := openai.New(llm.Provider{Name: "openai"}); !errors.Is(err, llm.ErrNoKey) {
		t.Errorf("no key: err = %v, want ErrNoKey", err)
	}
	if _, err := openai.New(llm.Provider{Name: "deepseek", BaseURL: "https://api.deepseek.com"}); !errors.Is(err, llm.ErrNoKey) {
		t.Errorf("remote base URL, no key: err = %v, want ErrNoKey", err)
	}
	for _, base := range []string{"http://localhost:11434/v1", "http://127.0.0.1:8080", "http://[::1]:8000/v1"} {
		if _, err := openai.New(llm.Provider{Name: "local", BaseURL: base}); err != nil {
			t.Errorf("%s without key: %v", base, err)
		}
	}
}

func TestReasoningModel(t *testing.T) {
	for model, want := range map[string]bool{
		"o1": true, "o3-mini": true, "o4-mini-2025-04-16": true, "gpt-5": true, "gpt-5.1-codex": true,
		"openai/gpt-5-mini": true, "o1-mini": false, "gpt-5-chat-latest": false, "gpt-4.1": false,
		"gpt-4o": false, "gpt-6.2-sol": true, "gpt-6-luna": true, "openai/gpt-6.1-terra": true,
		"gpt-10": true, "gpt-3.5-turbo": false, "gpt-": false, "deepseek-reasoner": false, "kimi-k2": false, "llama3.2": false, "omni": false,
	} {
		if got := openai.ReasoningModel(model); got != want {
			t.Errorf("ReasoningModel(%q) = %v, want %v", model, got, want)
		}
	}
}

// conversation exercises every part kind, merging and the echo.
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
			{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "And take a screenshot."}}},
			{Role: llm.Assistant, Parts: []llm.Part{
				&llm.Thinking{Text: "Two tools.", API: "openai"},
				&llm.Thinking{Text: "not mine", Signature: "sig", API: "anthropic"},
				&llm.Text{Text: "Reading."},
				&llm.ToolCall{ID: "call_1", Name: "file_read", Input: json.RawMessage(`{"path":"/etc/hostname"}`)},
				&llm.ToolCall{ID: "call_2", Name: "screenshot", Input: nil},
			}},
			{Role: llm.User, Parts: []llm.Part{
				&llm.ToolResult{CallID: "call_1", Name: "file_read", Content: []llm.Part{&llm.Text{Text: "den-box"}}},
				&llm.ToolResult{CallID: "call_2", Name: "screenshot", Content: []llm.Part{&llm.Image{MediaType: "image/png", Data: png}}},
				&llm.Text{Text: "Thanks."},
			}},
			{Role: llm.Assistant, Parts: []llm.Part{&llm.ToolCall{ID: "call_3", Name: "file_read", Input: json.RawMessage(`{"path":"/nope"}`)}}},
			{Role: llm.User, Parts: []llm.Part{&llm.ToolResult{CallID: "call_3", Name: "file_read", IsError: true, Content: []llm.Part{&llm.Text{Text: "no such file"}}}}},
		},
	}
}

func TestRequestGolden(t *testing.T) {
	srv := llmtest.NewOpenAI(t, llmtest.Turn{Text: "ok"})
	if _, err := openaiapitest.Run(t, newModel(t, srv), conversation()); err != nil {
		t.Fatal(err)
	}
	openaiapitest.Golden(t, filepath.Join("testdata", "request.golden"), srv.Requests()[0].Body, *update)
}

func BenchmarkStream(b *testing.B) {
	openaiapitest.BenchmarkStream(b, func(turn llmtest.Turn) llm.Model {
		return newModel(b, llmtest.NewOpenAI(b, turn))
	})
}

// TestGPT6ToolsWithoutReasoning: GPT-6 models take function tools in Chat
// Completions only with reasoning_effort "none"; without tools they get
// the level asked for.
func TestGPT6ToolsWithoutReasoning(t *testing.T) {
	tools := []llm.Tool{{Name: "shell_execute", Description: "run", Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}}
	for _, tc := range []struct {
		model string
		tools []llm.Tool
		want  string
	}{
		{"gpt-6-luna", tools, "none"},
		{"openai/gpt-6.2-sol", tools, "none"},
		{"gpt-6-luna", nil, "high"},
		{"gpt-5.6-terra", tools, "high"},
	} {
		srv := llmtest.NewOpenAI(t, llmtest.Turn{Text: "ok"})
		req := &llm.Request{Model: tc.model, Thinking: llm.ThinkingHigh, Tools: tc.tools, Messages: []llm.Message{openaiapitest.User("hi")}}
		if _, err := openaiapitest.Run(t, newModel(t, srv), req); err != nil {
			t.Fatal(err)
		}
		var body struct {
			Effort string `json:"reasoning_effort"`
		}
		if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
			t.Fatal(err)
		}
		if body.Effort != tc.want {
			t.Errorf("%s with %d tools: reasoning_effort %q, want %q", tc.model, len(tc.tools), body.Effort, tc.want)
		}
	}
}
