package llmtest

import (
	"encoding/json"
	"net/http"
	"testing"
)

// Special Turn.Stop values, understood by NewOpenAI and NewResponses.
const (
	// StopNone ends the stream cleanly ([DONE], or the end of the body)
	// without a finish reason, usage or terminal event.
	StopNone = "<none>"
	// StopCut breaks the connection after the content, as a network
	// failure would.
	StopCut = "<cut>"
)

// DeltaSize is about how many runes a long text delta carries; short
// texts are sent in a few deltas (at least three when long enough).
const DeltaSize = 200

// pieces splits s into streaming deltas.
func pieces(s string) []string {
	return Chunks(s, max(3, (len(s)+DeltaSize-1)/DeltaSize))
}

// NewOpenAI starts a fake Chat Completions server (POST /chat/completions
// and /v1/chat/completions). Each turn streams as chat.completion.chunk
// data lines: Thinking as reasoning_content deltas (DeepSeek style), then
// Text as content deltas, then each call as tool_calls deltas by index
// (id and name first, arguments in pieces), a chunk with the finish
// reason (Stop, or tool_calls / stop), a usage chunk with empty choices
// (prompt_tokens counts cache reads and writes; sent whether or not the
// request asked for it with stream_options.include_usage — den always
// does, as the adapter's golden request shows), and data: [DONE].
func NewOpenAI(t testing.TB, turns ...Turn) *Server {
	return NewServer(t, turns, func(w http.ResponseWriter, r *http.Request, turn Turn) {
		if r.Method != http.MethodPost || (r.URL.Path != "/chat/completions" && r.URL.Path != "/v1/chat/completions") {
			http.Error(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`, http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		chunk := func(choices []any, usage any) {
			c := map[string]any{
				"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1700000000,
				"model": "fake", "choices": choices,
			}
			if usage != nil {
				c["usage"] = usage
			}
			b, _ := json.Marshal(c)
			SSE(w, "", string(b))
		}
		delta := func(d map[string]any, finish any) {
			chunk([]any{map[string]any{"index": 0, "delta": d, "finish_reason": finish}}, nil)
		}
		delta(map[string]any{"role": "assistant", "content": ""}, nil)
		for _, p := range pieces(turn.Thinking) {
			delta(map[string]any{"reasoning_content": p}, nil)
		}
		for _, p := range pieces(turn.Text) {
			delta(map[string]any{"content": p}, nil)
		}
		for i, c := range turn.Calls {
			delta(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "id": c.ID, "type": "function",
				"function": map[string]any{"name": c.Name, "arguments": ""},
			}}}, nil)
			for _, p := range pieces(c.Input) {
				delta(map[string]any{"tool_calls": []any{map[string]any{
					"index": i, "function": map[string]any{"arguments": p},
				}}}, nil)
			}
		}
		switch turn.Stop {
		case StopCut:
			panic(http.ErrAbortHandler)
		case StopNone:
			SSE(w, "", "[DONE]")
			return
		}
		stop := turn.Stop
		if stop == "" {
			stop = "stop"
			if len(turn.Calls) > 0 {
				stop = "tool_calls"
			}
		}
		delta(map[string]any{}, stop)
		{
			prompt := turn.InputTokens + turn.CacheReadTokens + turn.CacheWriteTokens
			chunk([]any{}, map[string]any{
				"prompt_tokens": prompt, "completion_tokens": turn.OutputTokens,
				"total_tokens": prompt + turn.OutputTokens,
				"prompt_tokens_details": map[string]any{
					"cached_tokens": turn.CacheReadTokens, "cache_write_tokens": turn.CacheWriteTokens,
				},
			})
		}
		SSE(w, "", "[DONE]")
	})
}
