// Package openairesponses adapts OpenAI's Responses API (streaming) to
// den's llm vocabulary.
//
// den keeps no state at OpenAI: every request has store: false and the
// whole conversation as input items. The system prompt is the
// instructions; user text and images (data: URLs) are user message
// items; assistant text is an assistant message item; tool calls are
// function_call items (call_id, name, arguments) and tool results are
// function_call_output items (text, or text and images as a content
// list). A Thinking part with API "openai-responses" holds the complete
// reasoning item (id, encrypted_content, summary) as Opaque, and the
// producing model's name as Signature; it is replayed unchanged, in
// place (before the items that followed it), to that same model only,
// and dropped otherwise or when it has no encrypted_content (with store
// off, OpenAI cannot resolve a bare reasoning id).
//
// Reasoning models — the o-series (not o1-mini or o1-preview) and
// gpt-5* and gpt-6* (not *-chat*), any "vendor/" prefix ignored — get
// include: ["reasoning.encrypted_content"] on every request, so their
// reasoning can be replayed; with a thinking level other than off they
// also get reasoning.effort (max clamps to high) and summary "auto".
// Other models get neither. MaxTokens is max_output_tokens; CacheKey is
// prompt_cache_key.
//
// Stream: output_text deltas become TextDelta, reasoning summary deltas
// ThinkingDelta, a finished reasoning item ThinkingDone; a function_call
// item opens a ToolCallStart, its argument deltas are ToolCallDelta and
// its done item a ToolCallDone. Call ids are made unique within a turn
// (an empty call_id becomes a random "call_..." id, a repeated one gets
// "_2", "_3", ... appended), and den replays the renamed id. A
// response.completed (or response.incomplete) brings Usage (InputTokens
// is input_tokens minus cached ones) and Done: tool_use when the turn
// made calls, else end_turn; incomplete for max_output_tokens is
// max_tokens, for content_filter refusal. response.failed and error
// events become *llm.APIError with Status 0.
//
// Errors are as in package openai: HTTP errors are *llm.APIError with
// the Retry-After hint, a stream that ends without a terminal event
// wraps llm.ErrStream, one that carried nothing at all llm.ErrEmpty. SDK
// retries are off. A Model is safe for concurrent use; breaking out of
// a stream cancels its request.
package openairesponses
