// Package anthropic adapts the Anthropic Messages API (and endpoints
// compatible with it) to den's llm vocabulary, through the official SDK
// github.com/anthropics/anthropic-sdk-go/v2.
//
// # Requests
//
// Each llm.Request becomes one streaming POST /v1/messages:
//
//   - Parts map onto content blocks: text, image (base64 source),
//     thinking, tool_use, tool_result (text and image content). Empty
//     text is left out (the API rejects empty text blocks), and so is a
//     message left with no blocks.
//   - Only thinking produced by this API (Thinking.API "anthropic") is
//     replayed: "thinking" with its signature, or "redacted_thinking"
//     with the data kept in Opaque. Other APIs' reasoning, and an
//     Anthropic thinking part that never got its signature (a broken
//     stream), are dropped.
//   - A tool call whose Input is not a JSON object is replayed with
//     input {} so the conversation can go on (the tool's result already
//     told the model what was wrong).
//   - Consecutive messages with the same role are merged into one, as
//     the API requires alternation.
//   - Tool call ids the API would refuse (it takes ^[a-zA-Z0-9_-]+$,
//     unique in the request; calls made through other APIs may have
//     other characters, or the same id every turn) are renamed, bad
//     characters to "_" and repeats with "_2", "_3", ...; each result
//     follows its call. The API's own ids go out unchanged.
//   - Tool schemas are sent verbatim; one that is not a JSON object
//     fails the request before anything is sent.
//
// # Prompt caching
//
// Only when Request.CacheKey is set (the llm contract: the caller asks
// for caching of the stable prefix), up to four cache_control
// {type: ephemeral} breakpoints are placed: on the last tool, on the
// system prompt, and on the last block of each of the last two user
// turns. The second-to-last user turn marks the prefix the previous
// request already wrote, so this request reads it; the last user turn
// writes the prefix the next request of an agent loop (same messages
// plus one assistant and one user turn) will read. Anthropic's cache is
// keyed on the bytes of the prefix, so CacheKey's value itself is not
// sent.
//
// # Thinking and max_tokens
//
// ThinkingOff (or "") sends no thinking configuration. Low, medium,
// high and max ask for extended thinking with budget_tokens 1024, 4096,
// 16384 and 32768. max_tokens is Request.MaxTokens, or 8192 when that is
// 0. The budget must stay below max_tokens:
//
//   - when the caller left MaxTokens at 0, max_tokens is raised to
//     budget + 8192, so the answer keeps its default room;
//   - when the caller set MaxTokens, it is a hard limit (it usually
//     comes from the model's metadata) and the budget is lowered to
//     MaxTokens - 1024 instead; below the API's minimum budget of 1024,
//     thinking is left off.
//
// Thinking is also left off for a request that continues a tool-use
// loop (it ends with tool results) whose assistant message does not
// start with a replayable thinking block — another API made the calls,
// or the block lost its signature: the API refuses thinking then.
//
// # Stream
//
// Events map as follows: text_delta → TextDelta; thinking_delta →
// ThinkingDelta; a thinking block's stop → ThinkingDone with its text
// and signature (redacted_thinking → Redacted, Opaque = the data as a
// JSON string); tool_use start → ToolCallStart (Index counts this
// turn's tool calls from 0); input_json_delta → ToolCallDelta; the
// block's stop → ToolCallDone with the raw JSON ("{}" when empty);
// usage of message_start and message_delta → Usage (fields the event
// omits keep their last value); message_stop → Done. Stop reasons:
// end_turn and stop_sequence → StopEndTurn, tool_use, max_tokens,
// refusal map to their namesakes, anything else → StopOther.
//
// Errors travel in the stream and end it: an HTTP error answer is an
// *llm.APIError with Status, Type, Message and RetryAfter
// (retry-after-ms, else retry-after); an SSE error event is an
// *llm.APIError with Status 0; a stream that breaks, carries malformed
// data or ends before message_stop, and a request that never got an
// answer, wrap llm.ErrStream; cancellation returns the context's error.
// The SDK's retries are off: retrying is the caller's business.
//
// # Credentials and environment
//
// The API key goes out as the SDK sends it (v2: Authorization: Bearer).
// An Anthropic-compatible endpoint that wants x-api-key gets it through
// Provider.Headers. The SDK's environment defaults (ANTHROPIC_API_KEY,
// ANTHROPIC_BASE_URL, profiles, ...) are not read: the Provider is the
// only configuration.
//
// # Concurrency
//
// A Model is safe for concurrent use; each Stream owns its HTTP request
// and ends it (cancel and close) when the stream finishes or the
// consumer breaks out of the loop. No goroutine outlives Stream.
package anthropic
