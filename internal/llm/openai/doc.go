// Package openai adapts OpenAI's Chat Completions API (streaming) to
// den's llm vocabulary. The same adapter serves every server that speaks
// Chat Completions — OpenRouter, DeepSeek, Moonshot/Kimi, xAI, Groq,
// Ollama, llama.cpp, vLLM — selected by Provider.BaseURL.
//
// Requests: the system prompt is a system message; user text and images
// (data: URLs) are user content parts; assistant text and tool calls
// (arguments as the raw JSON string) form one assistant message; each
// tool result is a "tool" message answering its tool_call_id. The tool
// role carries text only, so images in tool results follow the tool
// messages as one user message. Consecutive messages of the same role
// merge (user with user, assistant with assistant); tool messages never
// merge. A Thinking part with API "openai" is sent back as the
// assistant message's non-standard reasoning_content field (DeepSeek and
// Kimi require that echo); other APIs' thinking is left out.
//
// Options, by endpoint and model:
//   - Thinking: off sends nothing; low, medium and high (max clamps to
//     high) become reasoning_effort, but only for models that take it:
//     OpenAI reasoning models, recognised by name (o1, o3, o4-mini, ...,
//     gpt-5* and the GPT-6 family, minus o1-mini, o1-preview and *-chat*), with any
//     "vendor/" prefix stripped (OpenRouter). Other models ignore the level.
//   - MaxTokens is max_completion_tokens on OpenAI itself (BaseURL empty
//     or api.openai.com) and max_tokens elsewhere, which every compatible
//     server accepts.
//   - CacheKey (set: cache the stable prefix) becomes prompt_cache_key on
//     OpenAI itself, whose models cache by themselves. For a Claude model
//     on any other server ("claude-...", "anthropic/claude-...", as
//     OpenRouter and other gateways name them) it places Anthropic
//     cache_control {"type": "ephemeral"} breakpoints the way OpenRouter
//     documents them: the system prompt, and the last message of each of
//     the last two user turns, their content sent as arrays of text
//     parts — three breakpoints, under Anthropic's four. Other models on
//     other servers get neither, so servers that know neither field never
//     see one.
//   - stream_options.include_usage is always asked for.
//
// Stream: tool calls are assembled by their wire index (id and name in
// the first delta of an index, arguments in pieces); a delta that
// repeats an index with a new id and name opens a new call (servers that
// do not number calls). Every call in a turn gets a unique id: an empty
// id becomes a random "call_..." id and a repeated one gets "_2", "_3",
// ... appended; den stores and replays the renamed id, so each result
// pairs with exactly one call. reasoning_content deltas (read from the
// chunk's raw JSON) become ThinkingDelta and, when the reasoning ends, a
// ThinkingDone with API "openai" — also when the server sent it empty,
// so the echo DeepSeek insists on is kept. Finish reasons map stop →
// end_turn (tool_use when calls arrived, for gateways that say stop),
// tool_calls → tool_use, length → max_tokens, content_filter → refusal.
// Usage comes from the final chunk: cache reads from
// prompt_tokens_details.cached_tokens (or DeepSeek's
// prompt_cache_hit_tokens, or LiteLLM's cache_read_input_tokens), cache
// writes from prompt_tokens_details.cache_write_tokens (OpenRouter) or
// cache_creation_input_tokens (LiteLLM), and InputTokens is prompt_tokens
// minus both. Done is sent once the stream has ended, after Usage.
//
// Errors: HTTP errors become *llm.APIError (with the Retry-After hint);
// an error object inside the stream becomes *llm.APIError with Status 0;
// a stream that ends without a finish reason is an error wrapping
// llm.ErrStream, and a 200 that carried nothing at all wraps
// llm.ErrEmpty. The SDK's own retries are off: retrying is the caller's
// job. A Model is safe for concurrent use; breaking out of a stream
// cancels its request.
package openai
