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
//
// It first checks each request as Chat Completions does (CheckOpenAI)
// and refuses one that breaks a rule with 400 and OpenAI's error body
// {"error": {"message", "type": "invalid_request_error", "param",
// "code"}} (developers.openai.com/api/docs/guides/error-codes), failing
// the test (see the package doc). The rules and where they are
// documented:
//
// The Chat Completions reference (developers.openai.com/api/reference/chat,
// also the openai-go v3 ChatCompletionNewParams docs generated from it):
//   - model and messages are required; messages is a non-empty array;
//   - a message's role is system, developer, user, assistant or tool;
//     system and developer content is text (a string or text parts);
//     user content is a string or a non-empty array of text, image_url,
//     input_audio and file parts; an assistant message has content or
//     tool_calls (each with type, id, function.name and a string
//     function.arguments); a tool message has content and tool_call_id;
//   - a function's name has only a-z, A-Z, 0-9, underscores and dashes,
//     at most 64 of them; its parameters are a JSON Schema object;
//   - max_tokens and max_completion_tokens are positive integers;
//     reasoning_effort is one of the documented values; stream_options
//     only with stream: true ("Only set this when you set stream: true").
//
// Function calling (developers.openai.com/api/docs/guides/function-calling):
// every tool_call id of an assistant message is answered by a tool
// message with that tool_call_id before the next message of any other
// role, and a tool message answers a call of the assistant message its
// run of tool messages follows; the API's wording of both refusals is
// kept ("messages with role 'tool' must be a response to a preceeding
// message with 'tool_calls'", "An assistant message with 'tool_calls'
// must be followed by tool messages responding to each
// 'tool_call_id'").
//
// Vision (developers.openai.com/api/docs/guides/images-vision): a data:
// URL image is base64 PNG, JPEG, WEBP or GIF.
//
// Function parameters, as the API refuses them (its errors, code
// invalid_function_parameters, seen from clients of MCP servers whose
// schemas break them): the schema's type is "object", and an array
// schema anywhere in it has items ("array schema missing items").
//
// Not checked: that max_tokens is refused for reasoning models
// (o-series, gpt-5; the reference says it "is not compatible with
// o-series models"). den sends max_completion_tokens to OpenAI itself
// and max_tokens only to compatible servers, which take it, and a fake
// on this machine is always a compatible server to den; checking it
// would only refuse what a compatible server accepts.
func NewOpenAI(t testing.TB, turns ...Turn) *Server {
	return newServer(t, turns, "OpenAI Chat Completions", checkOpenAI, func(w http.ResponseWriter, r *http.Request, turn Turn) {
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
