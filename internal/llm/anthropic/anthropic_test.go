package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/llmtest"
)

func newModel(t testing.TB, s *llmtest.Server) *Model {
	t.Helper()
	m, err := New(llm.Provider{
		Name:    "test",
		Type:    "anthropic",
		BaseURL: s.URL,
		APIKey:  "sk-test",
		Headers: map[string]string{"X-Den-Test": "yes"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func hello() *llm.Request {
	return &llm.Request{
		Model:    "claude-test",
		Messages: []llm.Message{{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "hi"}}}},
	}
}

// collect runs one stream to its end.
func collect(ctx context.Context, m *Model, req *llm.Request) ([]llm.Event, error) {
	var evs []llm.Event
	for ev, err := range m.Stream(ctx, req) {
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
	return evs, nil
}

// joined merges runs of deltas (text, thinking, one call's JSON) so
// that tests do not depend on how the fake splits them.
func joined(evs []llm.Event) []llm.Event {
	var out []llm.Event
	for _, ev := range evs {
		if len(out) > 0 {
			switch prev := out[len(out)-1].(type) {
			case *llm.TextDelta:
				if d, ok := ev.(*llm.TextDelta); ok {
					out[len(out)-1] = &llm.TextDelta{Text: prev.Text + d.Text}
					continue
				}
			case *llm.ThinkingDelta:
				if d, ok := ev.(*llm.ThinkingDelta); ok {
					out[len(out)-1] = &llm.ThinkingDelta{Text: prev.Text + d.Text}
					continue
				}
			case *llm.ToolCallDelta:
				if d, ok := ev.(*llm.ToolCallDelta); ok && d.Index == prev.Index {
					out[len(out)-1] = &llm.ToolCallDelta{Index: prev.Index, JSON: prev.JSON + d.JSON}
					continue
				}
			}
		}
		out = append(out, ev)
	}
	return out
}

func count[T llm.Event](evs []llm.Event) int {
	n := 0
	for _, ev := range evs {
		if _, ok := ev.(T); ok {
			n++
		}
	}
	return n
}

// body decodes the i-th recorded request body.
func body(t *testing.T, s *llmtest.Server, i int) map[string]any {
	t.Helper()
	reqs := s.Requests()
	if len(reqs) <= i {
		t.Fatalf("server saw %d requests, want more than %d", len(reqs), i)
	}
	var b map[string]any
	if err := json.Unmarshal(reqs[i].Body, &b); err != nil {
		t.Fatalf("request %d body: %v", i, err)
	}
	return b
}

// at walks a decoded JSON value: strings index objects, ints arrays.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			o, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("at %v: %T is not an object", path, v)
			}
			v = o[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				t.Fatalf("at %v: no element %d in %v", path, k, v)
			}
			v = a[k]
		}
	}
	return v
}

func TestNew(t *testing.T) {
	_, err := New(llm.Provider{Name: "x", Type: "anthropic"})
	if !errors.Is(err, llm.ErrNoKey) {
		t.Errorf("New without a key: err = %v, want ErrNoKey", err)
	}
	// The SDK's environment defaults are not consulted.
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	s := llmtest.NewAnthropic(t, llmtest.Turn{Text: "ok"})
	m := newModel(t, s)
	if _, err := collect(t.Context(), m, hello()); err != nil {
		t.Fatal(err)
	}
	req := s.Requests()[0]
	if req.Method != http.MethodPost || req.Path != "/v1/messages" {
		t.Errorf("request = %s %s, want POST /v1/messages", req.Method, req.Path)
	}
	if got := req.Header.Get("X-Den-Test"); got != "yes" {
		t.Errorf("X-Den-Test header = %q, want the provider's extra header", got)
	}
	if got := req.Header.Get("Authorization"); got != "Bearer sk-test" {
		t.Errorf("Authorization = %q, want the API key", got)
	}
	if got := at(t, body(t, s, 0), "stream"); got != true {
		t.Errorf("stream = %v, want true", got)
	}
}

func TestStreamText(t *testing.T) {
	text := strings.Repeat("Hello, wörld! ", 100)
	s := llmtest.NewAnthropic(t, llmtest.Turn{Text: text, InputTokens: 12, OutputTokens: 34})
	evs, err := collect(t.Context(), newModel(t, s), hello())
	if err != nil {
		t.Fatal(err)
	}
	if n := count[*llm.TextDelta](evs); n < 3 {
		t.Errorf("got %d text deltas, want the text in several", n)
	}
	want := []llm.Event{
		&llm.Usage{InputTokens: 12, OutputTokens: 1},
		&llm.TextDelta{Text: text},
		&llm.Usage{InputTokens: 12, OutputTokens: 34},
		&llm.Done{Stop: llm.StopEndTurn},
	}
	if diff := cmp.Diff(want, joined(evs)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestThinkingReplayed(t *testing.T) {
	s := llmtest.NewAnthropic(t,
		llmtest.Turn{Thinking: "The user greets me; I should greet back.", Text: "Hello!"},
		llmtest.Turn{Text: "Fine."},
	)
	m := newModel(t, s)
	req := hello()
	req.Thinking = llm.ThinkingMedium
	evs, err := collect(t.Context(), m, req)
	if err != nil {
		t.Fatal(err)
	}
	wantThinking := llm.Thinking{
		Text:      "The user greets me; I should greet back.",
		Signature: llmtest.AnthropicSignature("The user greets me; I should greet back."),
		API:       "anthropic",
	}
	want := []llm.Event{
		&llm.Usage{OutputTokens: 1},
		&llm.ThinkingDelta{Text: wantThinking.Text},
		&llm.ThinkingDone{Thinking: wantThinking},
		&llm.TextDelta{Text: "Hello!"},
		&llm.Usage{},
		&llm.Done{Stop: llm.StopEndTurn},
	}
	if diff := cmp.Diff(want, joined(evs)); diff != "" {
		t.Fatalf("events (-want +got):\n%s", diff)
	}

	// The next request carries the block back unchanged, ahead of the
	// text, and drops another API's reasoning.
	done := evs[count[*llm.ThinkingDelta](evs)+1].(*llm.ThinkingDone)
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.Assistant, Parts: []llm.Part{
			&llm.Thinking{Text: "openai's", Opaque: json.RawMessage(`"enc"`), API: "openai-responses"},
			&done.Thinking,
			&llm.Text{Text: "Hello!"},
		}},
		llm.Message{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "How are you?"}}},
	)
	if _, err := collect(t.Context(), m, req); err != nil {
		t.Fatal(err)
	}
	got := at(t, body(t, s, 1), "messages", 1, "content")
	wantContent := []any{
		map[string]any{"type": "thinking", "thinking": wantThinking.Text, "signature": wantThinking.Signature},
		map[string]any{"type": "text", "text": "Hello!"},
	}
	if diff := cmp.Diff(wantContent, got); diff != "" {
		t.Errorf("replayed assistant content (-want +got):\n%s", diff)
	}
	if got := at(t, body(t, s, 1), "thinking"); !cmp.Equal(got, map[string]any{"type": "enabled", "budget_tokens": 4096.0}) {
		t.Errorf("thinking = %v, want enabled with 4096", got)
	}
}

func TestRedactedThinking(t *testing.T) {
	s := llmtest.NewServer(t, []llmtest.Turn{{}}, func(w http.ResponseWriter, r *http.Request, _ llmtest.Turn) {
		w.Header().Set("Content-Type", "text/event-stream")
		llmtest.SSE(w, "message_start", `{"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 1}}}`)
		llmtest.SSE(w, "content_block_start", `{"type": "content_block_start", "index": 0, "content_block": {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}}`)
		llmtest.SSE(w, "content_block_stop", `{"type": "content_block_stop", "index": 0}`)
		llmtest.SSE(w, "message_delta", `{"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}}`)
		llmtest.SSE(w, "message_stop", `{"type": "message_stop"}`)
	})
	m := newModel(t, s)
	evs, err := collect(t.Context(), m, hello())
	if err != nil {
		t.Fatal(err)
	}
	th := llm.Thinking{Redacted: true, Opaque: json.RawMessage(`"EmwKAhgBEgy3va3pzix/LafPsn4a"`), API: "anthropic"}
	if diff := cmp.Diff(&llm.ThinkingDone{Thinking: th}, evs[1]); diff != "" {
		t.Fatalf("redacted thinking (-want +got):\n%s", diff)
	}
	req := hello()
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.Assistant, Parts: []llm.Part{&th, &llm.Text{Text: "ok"}}},
		llm.Message{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "go on"}}},
	)
	if _, err := collect(t.Context(), m, req); err != nil {
		t.Fatal(err)
	}
	got := at(t, body(t, s, 1), "messages", 1, "content", 0)
	want := map[string]any{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replayed redacted thinking (-want +got):\n%s", diff)
	}
}

func TestToolCalls(t *testing.T) {
	s := llmtest.NewAnthropic(t, llmtest.Turn{
		Text: "Let me look.",
		Calls: []llmtest.Call{
			{ID: "toolu_01", Name: "file_read", Input: `{"path": "/etc/hostname", "limit": 10}`},
			{ID: "toolu_02", Name: "shell_execute", Input: `{"command": "ls -la /tmp"}`},
			{ID: "toolu_03", Name: "memory_get", Input: ``},
			{ID: "toolu_04", Name: "broken", Input: `{"a": `},
		},
	})
	evs, err := collect(t.Context(), newModel(t, s), hello())
	if err != nil {
		t.Fatal(err)
	}
	if n := count[*llm.ToolCallDelta](evs); n < 6 {
		t.Errorf("got %d tool-call deltas, want the arguments in pieces", n)
	}
	call := func(id, name, input string) llm.ToolCall {
		return llm.ToolCall{ID: id, Name: name, Input: json.RawMessage(input), API: "anthropic"}
	}
	want := []llm.Event{
		&llm.Usage{OutputTokens: 1},
		&llm.TextDelta{Text: "Let me look."},
		&llm.ToolCallStart{Index: 0, ID: "toolu_01", Name: "file_read"},
		&llm.ToolCallDelta{Index: 0, JSON: `{"path": "/etc/hostname", "limit": 10}`},
		&llm.ToolCallDone{Index: 0, Call: call("toolu_01", "file_read", `{"path": "/etc/hostname", "limit": 10}`)},
		&llm.ToolCallStart{Index: 1, ID: "toolu_02", Name: "shell_execute"},
		&llm.ToolCallDelta{Index: 1, JSON: `{"command": "ls -la /tmp"}`},
		&llm.ToolCallDone{Index: 1, Call: call("toolu_02", "shell_execute", `{"command": "ls -la /tmp"}`)},
		&llm.ToolCallStart{Index: 2, ID: "toolu_03", Name: "memory_get"},
		&llm.ToolCallDone{Index: 2, Call: call("toolu_03", "memory_get", `{}`)},
		&llm.ToolCallStart{Index: 3, ID: "toolu_04", Name: "broken"},
		&llm.ToolCallDelta{Index: 3, JSON: `{"a": `},
		// The raw JSON, invalid as it is: callers validate.
		&llm.ToolCallDone{Index: 3, Call: call("toolu_04", "broken", `{"a": `)},
		&llm.Usage{},
		&llm.Done{Stop: llm.StopToolUse},
	}
	if diff := cmp.Diff(want, joined(evs)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestUsage(t *testing.T) {
	s := llmtest.NewAnthropic(t, llmtest.Turn{
		Text: "ok", InputTokens: 100, OutputTokens: 50, CacheReadTokens: 30, CacheWriteTokens: 20,
	})
	evs, err := collect(t.Context(), newModel(t, s), hello())
	if err != nil {
		t.Fatal(err)
	}
	var usage []llm.Event
	for _, ev := range evs {
		if u, ok := ev.(*llm.Usage); ok {
			usage = append(usage, u)
		}
	}
	want := []llm.Event{
		&llm.Usage{InputTokens: 100, OutputTokens: 1, CacheReadTokens: 30, CacheWriteTokens: 20},
		// message_delta reports output only; the rest keeps its value.
		&llm.Usage{InputTokens: 100, OutputTokens: 50, CacheReadTokens: 30, CacheWriteTokens: 20},
	}
	if diff := cmp.Diff(want, usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if _, ok := evs[len(evs)-1].(*llm.Done); !ok {
		t.Errorf("last event = %T, want Done after the usage", evs[len(evs)-1])
	}
}

func TestUsageInMessageDelta(t *testing.T) {
	// Newer API versions repeat the input counts in message_delta.
	s := llmtest.NewServer(t, []llmtest.Turn{{}}, func(w http.ResponseWriter, r *http.Request, _ llmtest.Turn) {
		llmtest.SSE(w, "message_start", `{"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 1}}}`)
		llmtest.SSE(w, "message_delta", `{"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"input_tokens": 7, "cache_read_input_tokens": 3, "cache_creation_input_tokens": 2, "output_tokens": 9}}`)
		llmtest.SSE(w, "message_stop", `{"type": "message_stop"}`)
	})
	evs, err := collect(t.Context(), newModel(t, s), hello())
	if err != nil {
		t.Fatal(err)
	}
	want := &llm.Usage{InputTokens: 7, OutputTokens: 9, CacheReadTokens: 3, CacheWriteTokens: 2}
	if diff := cmp.Diff(want, evs[1]); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

func TestStopReasons(t *testing.T) {
	tests := []struct {
		stop string
		want llm.StopReason
	}{
		{"end_turn", llm.StopEndTurn},
		{"stop_sequence", llm.StopEndTurn},
		{"tool_use", llm.StopToolUse},
		{"max_tokens", llm.StopMaxTokens},
		{"refusal", llm.StopRefusal},
		{"pause_turn", llm.StopOther},
		{"model_context_window_exceeded", llm.StopOther},
		{"something_new", llm.StopOther},
	}
	for _, tt := range tests {
		t.Run(tt.stop, func(t *testing.T) {
			s := llmtest.NewAnthropic(t, llmtest.Turn{Text: "x", Stop: tt.stop})
			evs, err := collect(t.Context(), newModel(t, s), hello())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&llm.Done{Stop: tt.want}, evs[len(evs)-1]); diff != "" {
				t.Errorf("done (-want +got):\n%s", diff)
			}
			if n := count[*llm.Done](evs); n != 1 {
				t.Errorf("%d Done events, want 1", n)
			}
		})
	}
}

func TestHTTPErrors(t *testing.T) {
	tests := []struct {
		name string
		err  llmtest.HTTPError
		want *llm.APIError
	}{
		{
			"rate limited",
			llmtest.HTTPError{Status: 429, RetryAfter: "7", Body: llmtest.AnthropicErrorBody("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit")},
			&llm.APIError{API: "anthropic", Status: 429, Type: "rate_limit_error", Message: "Number of request tokens has exceeded your per-minute rate limit", RetryAfter: 7 * time.Second},
		},
		{
			"overloaded",
			llmtest.HTTPError{Status: 529, Body: llmtest.AnthropicErrorBody("overloaded_error", "Overloaded")},
			&llm.APIError{API: "anthropic", Status: 529, Type: "overloaded_error", Message: "Overloaded"},
		},
		{
			"unknown type",
			llmtest.HTTPError{Status: 400, Body: llmtest.AnthropicErrorBody("brand_new_error", "what")},
			&llm.APIError{API: "anthropic", Status: 400, Type: "brand_new_error", Message: "what"},
		},
		{
			"not JSON",
			llmtest.HTTPError{Status: 502, Body: "<html>Bad Gateway</html>"},
			&llm.APIError{API: "anthropic", Status: 502, Message: "<html>Bad Gateway</html>"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.NewAnthropic(t, llmtest.Turn{Error: &tt.err}, llmtest.Turn{Text: "too late"})
			evs, err := collect(t.Context(), newModel(t, s), hello())
			if len(evs) != 0 {
				t.Errorf("events before the error: %v", evs)
			}
			var got *llm.APIError
			if !errors.As(err, &got) {
				t.Fatalf("err = %v, want an *llm.APIError", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if n := len(s.Requests()); n != 1 {
				t.Errorf("%d requests, want 1: the SDK must not retry", n)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		header http.Header
		want   time.Duration
	}{
		{http.Header{}, 0},
		{http.Header{"Retry-After": {"3"}}, 3 * time.Second},
		{http.Header{"Retry-After": {"1.5"}}, 1500 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"250"}, "Retry-After": {"1"}}, 250 * time.Millisecond},
		{http.Header{"Retry-After-Ms": {"junk"}, "Retry-After": {"2"}}, 2 * time.Second},
		{http.Header{"Retry-After": {now.Add(10 * time.Second).Format(http.TimeFormat)}}, 10 * time.Second},
		{http.Header{"Retry-After": {now.Add(-time.Minute).Format(http.TimeFormat)}}, 0},
		{http.Header{"Retry-After": {"-1"}}, 0},
		{http.Header{"Retry-After": {"soon"}}, 0},
	}
	for _, tt := range tests {
		if got := llm.RetryAfter(tt.header, now); got != tt.want {
			t.Errorf("retryAfter(%v) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestErrorEvent(t *testing.T) {
	s := llmtest.NewServer(t, []llmtest.Turn{{}}, func(w http.ResponseWriter, r *http.Request, _ llmtest.Turn) {
		w.Header().Set("Content-Type", "text/event-stream")
		llmtest.SSE(w, "message_start", `{"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 1}}}`)
		llmtest.SSE(w, "content_block_start", `{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}`)
		llmtest.SSE(w, "content_block_delta", `{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}`)
		llmtest.SSE(w, "error", `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`)
	})
	evs, err := collect(t.Context(), newModel(t, s), hello())
	want := []llm.Event{&llm.Usage{InputTokens: 5, OutputTokens: 1}, &llm.TextDelta{Text: "Hel"}}
	if diff := cmp.Diff(want, evs); diff != "" {
		t.Errorf("events before the error (-want +got):\n%s", diff)
	}
	var got *llm.APIError
	if !errors.As(err, &got) {
		t.Fatalf("err = %v, want an *llm.APIError", err)
	}
	if diff := cmp.Diff(&llm.APIError{API: "anthropic", Type: "overloaded_error", Message: "Overloaded"}, got); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

func TestBrokenStream(t *testing.T) {
	start := func(w http.ResponseWriter) {
		w.Header().Set("Content-Type", "text/event-stream")
		llmtest.SSE(w, "message_start", `{"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 1}}}`)
		llmtest.SSE(w, "content_block_start", `{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}`)
		llmtest.SSE(w, "content_block_delta", `{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}`)
	}
	tests := []struct {
		name  string
		write func(w http.ResponseWriter)
	}{
		{"ends before message_stop", func(w http.ResponseWriter) {
			start(w)
			llmtest.SSE(w, "content_block_stop", `{"type": "content_block_stop", "index": 0}`)
		}},
		{"connection drops", func(w http.ResponseWriter) {
			start(w)
			panic(http.ErrAbortHandler)
		}},
		{"malformed data", func(w http.ResponseWriter) {
			start(w)
			llmtest.SSE(w, "content_block_delta", `{"type": "content_block_delta", "index": 0, "delta": {`)
		}},
		{"delta for a block never started", func(w http.ResponseWriter) {
			start(w)
			llmtest.SSE(w, "content_block_delta", `{"type": "content_block_delta", "index": 4, "delta": {"type": "text_delta", "text": "x"}}`)
		}},
		{"empty 200", func(w http.ResponseWriter) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.NewServer(t, []llmtest.Turn{{}}, func(w http.ResponseWriter, r *http.Request, _ llmtest.Turn) {
				tt.write(w)
			})
			evs, err := collect(t.Context(), newModel(t, s), hello())
			if !errors.Is(err, llm.ErrStream) {
				t.Errorf("err = %v, want ErrStream", err)
			}
			if n := count[*llm.Done](evs); n != 0 {
				t.Errorf("a broken stream yielded Done")
			}
		})
	}
}

func TestUnreachable(t *testing.T) {
	s := llmtest.NewAnthropic(t)
	m := newModel(t, s)
	s.Close()
	_, err := collect(t.Context(), m, hello())
	if !errors.Is(err, llm.ErrStream) {
		t.Errorf("err = %v, want ErrStream", err)
	}
}

func TestBreakCancels(t *testing.T) {
	ended := make(chan struct{})
	s := llmtest.NewServer(t, []llmtest.Turn{{}}, func(w http.ResponseWriter, r *http.Request, _ llmtest.Turn) {
		w.Header().Set("Content-Type", "text/event-stream")
		llmtest.SSE(w, "message_start", `{"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 1}}}`)
		llmtest.SSE(w, "content_block_start", `{"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}`)
		llmtest.SSE(w, "content_block_delta", `{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}}`)
		select {
		case <-r.Context().Done():
			close(ended)
		case <-time.After(time.Minute):
		}
	})
	for ev, err := range newModel(t, s).Stream(t.Context(), hello()) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := ev.(*llm.TextDelta); ok {
			break
		}
	}
	select {
	case <-ended:
	case <-time.After(30 * time.Second): // a deadlock guard, not a timing check
		t.Fatal("the server's request context did not end after the consumer's break")
	}
}

func TestCancel(t *testing.T) {
	s := llmtest.NewServer(t, []llmtest.Turn{{}}, func(w http.ResponseWriter, r *http.Request, _ llmtest.Turn) {
		w.Header().Set("Content-Type", "text/event-stream")
		llmtest.SSE(w, "message_start", `{"type": "message_start", "message": {"usage": {"input_tokens": 5, "output_tokens": 1}}}`)
		<-r.Context().Done()
	})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var err error
	for ev, e := range newModel(t, s).Stream(ctx, hello()) {
		if _, ok := ev.(*llm.Usage); ok {
			cancel()
		}
		err = e
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}
