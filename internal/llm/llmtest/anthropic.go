package llmtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"
	"unicode/utf8"
)

// NewAnthropic starts a fake Anthropic Messages API that answers
// POST /v1/messages with the documented SSE stream for each turn in
// order (see WriteAnthropic).
//
// It first checks each request as the Messages API does (CheckAnthropic)
// and refuses one that breaks a rule with 400 and the API's error body
// {"type": "error", "error": {"type": "invalid_request_error",
// "message": ...}} (platform.claude.com/docs/en/api/errors), failing the
// test (see the package doc). The rules and where they are documented:
//
// The Messages API reference (platform.claude.com/docs/en/api/messages,
// also the anthropic-sdk-go v2 MessageNewParams docs generated from it):
//   - model is required; max_tokens is a required integer ≥ 0;
//   - messages is a non-empty array (at most 100,000); each message has
//     role "user" or "assistant" and content that is a string or an
//     array of blocks, non-empty except in an optional final assistant
//     message; the first message is a user message;
//   - system is a string or an array of text blocks;
//   - a text block's text is non-empty ("text content blocks must be
//     non-empty"), in messages, system and tool results alike;
//   - an image's source is base64 (media_type one of image/jpeg,
//     image/png, image/gif, image/webp; data valid base64), url or file;
//   - tool_use (id, name, input object) and thinking/redacted_thinking
//     (thinking and signature, or data) only in assistant messages,
//     tool_result only in user messages; tool_use ids and tool_result
//     tool_use_ids match ^[a-zA-Z0-9_-]+$ (the schema's pattern; the API
//     answers "String should match pattern"), and tool_use ids are
//     unique in the request;
//   - thinking {type: "enabled"} has budget_tokens ≥ 1024 and below
//     max_tokens ("Must be ≥1024 and less than max_tokens"), unless an
//     interleaved-thinking beta header lifts the second limit;
//   - cache_control is {type: "ephemeral"}.
//
// Tool use (docs.anthropic.com/en/docs/build-with-claude/tool-use/overview
// and platform.claude.com/docs/en/agents-and-tools/tool-use/handle-tool-calls):
//   - tool names match ^[a-zA-Z0-9_-]{1,64}$ and are unique; a custom
//     tool's input_schema is a JSON Schema object with type "object";
//   - every tool_use of an assistant message is answered by a
//     tool_result with its id in the next message, a user message; each
//     tool_result answers a tool_use of the message just before, once;
//     a user message's tool_result blocks come before any other block.
//
// Extended thinking (platform.claude.com/docs/en/build-with-claude/extended-thinking,
// "Preserving thinking blocks", and .../thinking-tool-workflows): with
// thinking enabled, when the last message returns tool results, the
// assistant message it answers must start with its thinking or
// redacted_thinking block.
//
// Prompt caching (platform.claude.com/docs/en/build-with-claude/prompt-caching):
// at most 4 cache_control breakpoints in tools, system and messages.
//
// Signatures, image bytes and token counts are not checked: the fake
// cannot verify them.
func NewAnthropic(t testing.TB, turns ...Turn) *Server {
	return newServer(t, turns, "Anthropic Messages", checkAnthropic, WriteAnthropic)
}

// AnthropicDeltaRunes is about how many runes of text the fake puts in
// one text_delta (at least three deltas per text block are sent): a
// 1,000,000-byte ASCII answer arrives in 5,000 deltas.
const AnthropicDeltaRunes = 200

// WriteAnthropic answers r with turn as the Messages API streams it:
// message_start (with usage), a ping, then one content block per part —
// thinking (thinking_delta pieces and a signature_delta), text
// (text_delta pieces), each call as a tool_use block (input_json_delta
// pieces) — with content_block_start/stop carrying the block index, then
// message_delta (stop_reason and output usage) and message_stop.
//
// It answers like the real API when the request is not a POST to
// /v1/messages (404) or carries no credential (401); it does not check
// the body (NewAnthropic does, before it). Tests that need a broken or
// partial stream build their own handler with NewServer and SSE.
func WriteAnthropic(w http.ResponseWriter, r *http.Request, turn Turn) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		anthropicError(w, http.StatusNotFound, "not_found_error", "Not found: "+r.Method+" "+r.URL.Path)
		return
	}
	if r.Header.Get("X-Api-Key") == "" && r.Header.Get("Authorization") == "" {
		anthropicError(w, http.StatusUnauthorized, "authentication_error", "x-api-key header is required")
		return
	}
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)

	SSE(w, "message_start", fmt.Sprintf(`{"type": "message_start", "message": {"id": "msg_fake", "type": "message", "role": "assistant", "content": [], "model": %s, "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": %d, "cache_creation_input_tokens": %d, "cache_read_input_tokens": %d, "output_tokens": 1}}}`,
		quote(AnthropicModel), turn.InputTokens, turn.CacheWriteTokens, turn.CacheReadTokens))

	index := 0
	// block streams one content block: start is its content_block
	// object, deltas its delta objects.
	block := func(start string, deltas []string) {
		SSE(w, "content_block_start", fmt.Sprintf(`{"type": "content_block_start", "index": %d, "content_block": %s}`, index, start))
		if index == 0 {
			SSE(w, "ping", `{"type": "ping"}`)
		}
		for _, d := range deltas {
			SSE(w, "content_block_delta", fmt.Sprintf(`{"type": "content_block_delta", "index": %d, "delta": %s}`, index, d))
		}
		SSE(w, "content_block_stop", fmt.Sprintf(`{"type": "content_block_stop", "index": %d}`, index))
		index++
	}

	if turn.Thinking != "" {
		var deltas []string
		for _, c := range Chunks(turn.Thinking, 3) {
			deltas = append(deltas, `{"type": "thinking_delta", "thinking": `+quote(c)+`}`)
		}
		deltas = append(deltas, `{"type": "signature_delta", "signature": `+quote(AnthropicSignature(turn.Thinking))+`}`)
		block(`{"type": "thinking", "thinking": "", "signature": ""}`, deltas)
	}
	if turn.Text != "" {
		n := max(3, (utf8.RuneCountInString(turn.Text)+AnthropicDeltaRunes-1)/AnthropicDeltaRunes)
		var deltas []string
		for _, c := range Chunks(turn.Text, n) {
			deltas = append(deltas, `{"type": "text_delta", "text": `+quote(c)+`}`)
		}
		block(`{"type": "text", "text": ""}`, deltas)
	}
	for i, c := range turn.Calls {
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("toolu_fake%02d", i)
		}
		// The API opens a tool_use block with an empty input object and
		// an empty partial_json before the pieces.
		deltas := []string{`{"type": "input_json_delta", "partial_json": ""}`}
		for _, p := range Chunks(c.Input, 3) {
			deltas = append(deltas, `{"type": "input_json_delta", "partial_json": `+quote(p)+`}`)
		}
		block(fmt.Sprintf(`{"type": "tool_use", "id": %s, "name": %s, "input": {}}`, quote(id), quote(c.Name)), deltas)
	}

	stop := turn.Stop
	if stop == "" {
		stop = "end_turn"
		if len(turn.Calls) > 0 {
			stop = "tool_use"
		}
	}
	SSE(w, "message_delta", fmt.Sprintf(`{"type": "message_delta", "delta": {"stop_reason": %s, "stop_sequence": null}, "usage": {"output_tokens": %d}}`, quote(stop), turn.OutputTokens))
	SSE(w, "message_stop", `{"type": "message_stop"}`)
}

// AnthropicModel is the model the fake says answered.
const AnthropicModel = "claude-fake-1"

// AnthropicSignature is the made-up signature the fake sends for a
// thinking block with the given text.
func AnthropicSignature(thinking string) string {
	return fmt.Sprintf("sig-%d-%x", len(thinking), []byte(thinking[:min(len(thinking), 8)]))
}

// AnthropicErrorBody is an error body as the Messages API sends it.
func AnthropicErrorBody(typ, message string) string {
	return fmt.Sprintf(`{"type": "error", "error": {"type": %s, "message": %s}}`, quote(typ), quote(message))
}

func anthropicError(w http.ResponseWriter, status int, typ, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, AnthropicErrorBody(typ, message))
}

// quote is s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}
