package anthropic

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/llmtest"
)

func TestToolCallReplay(t *testing.T) {
	s := llmtest.NewAnthropic(t, llmtest.Turn{Text: "ok"})
	req := hello()
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.Assistant, Parts: []llm.Part{
			&llm.ToolCall{ID: "toolu_1", Name: "a", Input: json.RawMessage(`{"x": 1}`), API: "anthropic"},
			&llm.ToolCall{ID: "toolu_2", Name: "b", Input: json.RawMessage(`{"x": `), API: "anthropic"},
			&llm.ToolCall{ID: "toolu_3", Name: "c", Input: json.RawMessage(`[1]`), API: "anthropic"},
		}},
		llm.Message{Role: llm.User, Parts: []llm.Part{
			&llm.ToolResult{CallID: "toolu_1", Name: "a", Content: []llm.Part{&llm.Text{Text: "one"}}},
			&llm.ToolResult{CallID: "toolu_2", Name: "b", Content: []llm.Part{&llm.Text{Text: "bad JSON"}}, IsError: true},
			&llm.ToolResult{CallID: "toolu_3", Name: "c"},
		}},
	)
	if _, err := collect(t.Context(), newModel(t, s), req); err != nil {
		t.Fatal(err)
	}
	b := body(t, s, 0)
	wantCalls := []any{
		map[string]any{"type": "tool_use", "id": "toolu_1", "name": "a", "input": map[string]any{"x": 1.0}},
		map[string]any{"type": "tool_use", "id": "toolu_2", "name": "b", "input": map[string]any{}},
		map[string]any{"type": "tool_use", "id": "toolu_3", "name": "c", "input": map[string]any{}},
	}
	if diff := cmp.Diff(wantCalls, at(t, b, "messages", 1, "content")); diff != "" {
		t.Errorf("tool_use blocks (-want +got):\n%s", diff)
	}
	wantResults := []any{
		map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": []any{map[string]any{"type": "text", "text": "one"}}},
		map[string]any{"type": "tool_result", "tool_use_id": "toolu_2", "is_error": true, "content": []any{map[string]any{"type": "text", "text": "bad JSON"}}},
		map[string]any{"type": "tool_result", "tool_use_id": "toolu_3"},
	}
	if diff := cmp.Diff(wantResults, at(t, b, "messages", 2, "content")); diff != "" {
		t.Errorf("tool_result blocks (-want +got):\n%s", diff)
	}
}

func TestToolResultImages(t *testing.T) {
	s := llmtest.NewAnthropic(t, llmtest.Turn{Text: "A red dot."})
	png := []byte("\x89PNG\r\n\x1a\nfake")
	req := hello()
	req.Messages = append(req.Messages,
		llm.Message{Role: llm.Assistant, Parts: []llm.Part{
			&llm.ToolCall{ID: "toolu_1", Name: "read_image", Input: json.RawMessage(`{"path": "dot.png"}`), API: "anthropic"},
		}},
		llm.Message{Role: llm.User, Parts: []llm.Part{
			&llm.ToolResult{CallID: "toolu_1", Name: "read_image", Content: []llm.Part{
				&llm.Text{Text: "dot.png, 1x1"},
				&llm.Image{MediaType: "image/png", Data: png},
			}},
		}},
	)
	if _, err := collect(t.Context(), newModel(t, s), req); err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{"type": "text", "text": "dot.png, 1x1"},
		map[string]any{"type": "image", "source": map[string]any{
			"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgpmYWtl",
		}},
	}
	if diff := cmp.Diff(want, at(t, body(t, s, 0), "messages", 2, "content", 0, "content")); diff != "" {
		t.Errorf("tool result content (-want +got):\n%s", diff)
	}

	req.Messages[2].Parts[0].(*llm.ToolResult).Content[1] = &llm.Image{MediaType: "image/bmp", Data: png}
	if _, err := collect(t.Context(), newModel(t, s), req); err == nil || !strings.Contains(err.Error(), "image/bmp") {
		t.Errorf("a BMP image: err = %v, want an error naming the media type", err)
	}
}

func TestMergeSameRole(t *testing.T) {
	s := llmtest.NewAnthropic(t, llmtest.Turn{Text: "ok"})
	req := &llm.Request{Model: "claude-test", Messages: []llm.Message{
		{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "first"}}},
		{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "second"}}},
		{Role: llm.Assistant, Parts: []llm.Part{&llm.ToolCall{ID: "t1", Name: "a", Input: json.RawMessage(`{}`)}}},
		// Nothing left to send once other APIs' thinking and empty text go.
		{Role: llm.Assistant, Parts: []llm.Part{&llm.Thinking{Text: "x", API: "gemini"}, &llm.Text{}}},
		{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "note"}}},
		{Role: llm.User, Parts: []llm.Part{&llm.ToolResult{CallID: "t1", Content: []llm.Part{&llm.Text{Text: "r"}}}}},
	}}
	if _, err := collect(t.Context(), newModel(t, s), req); err != nil {
		t.Fatal(err)
	}
	want := []any{
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "first"},
			map[string]any{"type": "text", "text": "second"},
		}},
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "tool_use", "id": "t1", "name": "a", "input": map[string]any{}},
		}},
		// Tool results go first in a user turn.
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": []any{map[string]any{"type": "text", "text": "r"}}},
			map[string]any{"type": "text", "text": "note"},
		}},
	}
	if diff := cmp.Diff(want, at(t, body(t, s, 0), "messages")); diff != "" {
		t.Errorf("messages (-want +got):\n%s", diff)
	}
}

func TestCacheControl(t *testing.T) {
	conv := []llm.Message{
		{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "u1"}}},
		{Role: llm.Assistant, Parts: []llm.Part{&llm.Text{Text: "a1"}}},
		{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "u2"}, &llm.Text{Text: "u2b"}}},
		{Role: llm.Assistant, Parts: []llm.Part{&llm.ToolCall{ID: "t1", Name: "a", Input: json.RawMessage(`{}`), API: "anthropic"}}},
		{Role: llm.User, Parts: []llm.Part{&llm.ToolResult{CallID: "t1", Content: []llm.Part{&llm.Text{Text: "r"}}}}},
	}
	tools := []llm.Tool{
		{Name: "a", Schema: json.RawMessage(`{"type":"object"}`)},
		{Name: "b", Schema: json.RawMessage(`{"type":"object"}`)},
	}
	eph := map[string]any{"type": "ephemeral"}
	tests := []struct {
		name     string
		cacheKey string
		msgs     []llm.Message
		want     map[string]bool // JSON paths (as strings) that carry cache_control
	}{
		{"off", "", conv, map[string]bool{}},
		{"on", "session-1", conv, map[string]bool{
			"tools.1": true, "system.0": true, "messages.2.content.1": true, "messages.4.content.0": true,
		}},
		{"one user turn", "session-1", conv[:1], map[string]bool{
			"tools.1": true, "system.0": true, "messages.0.content.0": true,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.NewAnthropic(t, llmtest.Turn{Text: "ok"})
			req := &llm.Request{Model: "claude-test", System: "You are den.", Tools: tools, Messages: tt.msgs, CacheKey: tt.cacheKey}
			if _, err := collect(t.Context(), newModel(t, s), req); err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			var walk func(path string, v any)
			walk = func(path string, v any) {
				switch v := v.(type) {
				case map[string]any:
					if cc, ok := v["cache_control"]; ok {
						if !cmp.Equal(cc, eph) {
							t.Errorf("%s: cache_control = %v, want %v", path, cc, eph)
						}
						got[strings.TrimPrefix(path, ".")] = true
					}
					for k, e := range v {
						walk(path+"."+k, e)
					}
				case []any:
					for i, e := range v {
						walk(path+"."+strconv.Itoa(i), e)
					}
				}
			}
			walk("", body(t, s, 0))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("cache breakpoints (-want +got):\n%s", diff)
			}
			if len(got) > 4 {
				t.Errorf("%d breakpoints, the API allows 4", len(got))
			}
		})
	}
}

func TestBadRequests(t *testing.T) {
	tests := []struct {
		name string
		edit func(r *llm.Request)
		want string
	}{
		{"no model", func(r *llm.Request) { r.Model = "" }, "no model"},
		{"bad level", func(r *llm.Request) { r.Thinking = "ultra" }, "ultra"},
		{"negative max tokens", func(r *llm.Request) { r.MaxTokens = -1 }, "negative"},
		{"bad schema", func(r *llm.Request) {
			r.Tools = []llm.Tool{{Name: "t", Schema: json.RawMessage(`["not", "an", "object"]`)}}
		}, `tool "t"`},
		{"bad role", func(r *llm.Request) { r.Messages[0].Role = "system" }, "role"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.NewAnthropic(t, llmtest.Turn{Text: "ok"})
			req := hello()
			tt.edit(req)
			_, err := collect(t.Context(), newModel(t, s), req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want one mentioning %q", err, tt.want)
			}
			if n := len(s.Requests()); n != 0 {
				t.Errorf("%d requests sent for a bad request", n)
			}
		})
	}
}

func TestTokens(t *testing.T) {
	tests := []struct {
		maxTokens  int
		level      llm.ThinkingLevel
		wantMax    int64
		wantBudget int64
	}{
		{0, "", 8192, 0},
		{0, llm.ThinkingOff, 8192, 0},
		{0, llm.ThinkingLow, 1024 + 8192, 1024},
		{0, llm.ThinkingMedium, 4096 + 8192, 4096},
		{0, llm.ThinkingHigh, 16384 + 8192, 16384},
		{0, llm.ThinkingMax, 32768 + 8192, 32768},
		{4000, llm.ThinkingOff, 4000, 0},
		{64000, llm.ThinkingMax, 64000, 32768},
		{20000, llm.ThinkingMax, 20000, 20000 - 1024},
		{4096, llm.ThinkingMedium, 4096, 4096 - 1024},
		{2048, llm.ThinkingLow, 2048, 1024},
		{2000, llm.ThinkingLow, 2000, 0}, // no room for the minimum budget
	}
	for _, tt := range tests {
		gotMax, gotBudget, err := tokens(tt.maxTokens, tt.level)
		if err != nil || gotMax != tt.wantMax || gotBudget != tt.wantBudget {
			t.Errorf("tokens(%d, %q) = %d, %d, %v; want %d, %d", tt.maxTokens, tt.level, gotMax, gotBudget, err, tt.wantMax, tt.wantBudget)
		}
		if gotBudget != 0 && gotBudget >= gotMax {
			t.Errorf("tokens(%d, %q): budget %d not below max_tokens %d", tt.maxTokens, tt.level, gotBudget, gotMax)
		}
	}
}

// TestForeignToolIDs replays calls another API made, with ids the
// Messages API refuses (a dot and a colon, and the same id every turn,
// as some OpenAI-compatible servers give them): the fake refuses such a
// request, so this test fails unless the ids are renamed, each result
// following its call.
func TestForeignToolIDs(t *testing.T) {
	s := llmtest.NewAnthropic(t, llmtest.Turn{Text: "ok"})
	call := func(id string) llm.Message {
		return llm.Message{Role: llm.Assistant, Parts: []llm.Part{
			&llm.ToolCall{ID: id, Name: "shell_execute", Input: json.RawMessage(`{}`), API: "openai"},
		}}
	}
	result := func(id, out string) llm.Message {
		return llm.Message{Role: llm.User, Parts: []llm.Part{
			&llm.ToolResult{CallID: id, Name: "shell_execute", Content: []llm.Part{&llm.Text{Text: out}}},
		}}
	}
	twice := call("dup")
	twice.Parts = append(twice.Parts, twice.Parts[0])
	both := result("dup", "first")
	both.Parts = append(both.Parts, &llm.ToolResult{CallID: "dup", Name: "shell_execute", Content: []llm.Part{&llm.Text{Text: "second"}}})
	req := hello()
	req.Messages = append(req.Messages,
		call("functions.shell_execute:0"), result("functions.shell_execute:0", "one"),
		call("functions.shell_execute:0"), result("functions.shell_execute:0", "two"),
		call("toolu_ok"), result("toolu_ok", "three"),
		call(""), result("", "four"),
		twice, both,
	)
	if _, err := collect(t.Context(), newModel(t, s), req); err != nil {
		t.Fatal(err)
	}
	b := body(t, s, 0)
	for i, want := range []string{"functions_shell_execute_0", "functions_shell_execute_0_2", "toolu_ok", "tool_call"} {
		use := at(t, b, "messages", 1+2*i, "content", 0, "id")
		res := at(t, b, "messages", 2+2*i, "content", 0, "tool_use_id")
		if use != want || res != want {
			t.Errorf("call %d: tool_use id %v, tool_result id %v; want both %q", i, use, res, want)
		}
	}
	for j, want := range []string{"dup", "dup_2"} {
		use := at(t, b, "messages", 9, "content", j, "id")
		res := at(t, b, "messages", 10, "content", j, "tool_use_id")
		if use != want || res != want {
			t.Errorf("the same id twice in a turn, call %d: tool_use id %v, tool_result id %v; want both %q", j, use, res, want)
		}
	}
}

// TestThinkingMidForeignLoop continues a tool-use loop whose calls
// another API made, with thinking asked for: the Messages API refuses
// thinking then (the assistant message the results answer must start
// with a thinking block), so thinking is left off for this request, and
// only for it.
func TestThinkingMidForeignLoop(t *testing.T) {
	loop := func(api string, first llm.Part) *llm.Request {
		req := hello()
		req.Thinking = llm.ThinkingHigh
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.Assistant, Parts: []llm.Part{first,
				&llm.ToolCall{ID: "call_1", Name: "shell_execute", Input: json.RawMessage(`{}`), API: api},
			}},
			llm.Message{Role: llm.User, Parts: []llm.Part{
				&llm.ToolResult{CallID: "call_1", Name: "shell_execute", Content: []llm.Part{&llm.Text{Text: "done"}}},
			}},
		)
		return req
	}
	tests := []struct {
		name     string
		req      *llm.Request
		thinking bool
	}{
		{"another API's loop", loop("openai", &llm.Thinking{Text: "gpt thoughts", API: "openai"}), false},
		{"a thinking block without signature", loop("anthropic", &llm.Thinking{Text: "cut short", API: "anthropic"}), false},
		{"this API's loop", loop("anthropic", &llm.Thinking{Text: "mine", Signature: "sig-1", API: "anthropic"}), true},
		{"a new prompt", func() *llm.Request {
			r := loop("openai", &llm.Text{Text: "calling"})
			r.Messages = append(r.Messages, llm.Message{Role: llm.Assistant, Parts: []llm.Part{&llm.Text{Text: "done."}}},
				llm.Message{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "next"}}})
			return r
		}(), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := llmtest.NewAnthropic(t, llmtest.Turn{Text: "ok"})
			if _, err := collect(t.Context(), newModel(t, s), tt.req); err != nil {
				t.Fatal(err)
			}
			b := body(t, s, 0)
			if _, got := b["thinking"]; got != tt.thinking {
				t.Errorf("thinking sent: %v, want %v (body %v)", got, tt.thinking, b["thinking"])
			}
			if got := at(t, b, "max_tokens"); got != float64(16384+8192) {
				t.Errorf("max_tokens = %v, want it kept at %d", got, 16384+8192)
			}
		})
	}
}
