// Package gemini adapts Google's Gemini API (generativelanguage,
// v1beta streamGenerateContent with alt=sse) to den's llm vocabulary.
//
// # Why not the official SDK
//
// google.golang.org/genai can set the base URL, stream with alt=sse and
// carry thoughtSignature on parts, but not cleanly enough for den:
//   - its APIError drops the response headers, so a Retry-After header
//     never reaches the caller (only the RetryInfo detail would);
//   - it reads configuration behind the caller's back (GOOGLE_GEMINI_BASE_URL,
//     GOOGLE_GENAI_USE_VERTEXAI, package-level SetDefaultBaseURLs) and logs
//     stream errors through the standard logger;
//   - its automatic stream continuation may re-send a request after a
//     transport drop, while den retries once, above the adapters;
//   - it decodes every chunk three times (JSON to map, converter, map to
//     JSON to struct) and adds about 13 MB to the binary.
//
// The wire format is small JSON over SSE, so this package speaks it
// with net/http: one request type, one response type, one SSE reader.
//
// # Mapping
//
// Messages become contents with roles "user" and "model"; the system
// prompt is systemInstruction; tools are functionDeclarations whose
// JSON Schema travels unchanged in parametersJsonSchema (the v1beta
// field that accepts full JSON Schema, so nothing is stripped).
//
// Images are inlineData parts; a GIF, which Gemini does not take, goes
// as a PNG of its first frame (or a note, when it cannot be decoded).
//
// Tool results are functionResponse parts {name, response: {output}} or
// {name, response: {error}}, matched to their call by name and, when the
// API gave the call an id, by id. Images in a tool result follow the
// function responses as inlineData parts of the same content.
//
// Gemini often sends function calls without ids; the stream gives them
// ids of den's own, "gemini_call_<index>_<random>", unique within a
// session. Those ids are never sent back to the API.
//
// # Thought signatures
//
// Reasoning arrives as parts with thought: true; the stream emits
// ThinkingDelta for them and, at the end of the turn, one ThinkingDone
// holding the text and the last thoughtSignature seen on a non-call part
// (Gemini puts it on a thought part or on the last text part). A
// thoughtSignature on a functionCall part stays on that ToolCall
// (ToolCall.Signature). On replay, Thinking with API "gemini" becomes a
// thought part carrying its signature unchanged, placed first in its
// content where Gemini produces it; other APIs' thinking is dropped. A
// model content whose calls carry no signature and came from another
// API gets Google's documented dummy signature on its first call
// ("skip_thought_signature_validator"), so Gemini 3 accepts a history
// begun with another provider.
//
// # Thinking levels
//
// Gemini 3 and later models (gemini-3*, gemini-3.8-flash, ...) get
// thinkingConfig.thinkingLevel: off is minimal (low on "pro" models,
// which cannot stop thinking), low, medium (high on gemini-3-pro, which
// has no medium), high, and max is high, the deepest level there is.
// Other models, Gemini 2.5 among them, get thinkingConfig.thinkingBudget:
// off 0 (128 on "pro" models), low 1024, medium 8192, high 24576 (the
// largest budget every 2.5 model accepts), max -1 (dynamic: the model
// thinks as much as it judges useful, up to its own ceiling, the only
// unbounded value every model accepts). The API refuses a budget and a
// level together; den never sends both. includeThoughts is set for
// every level but off. An empty level leaves the API's default.
//
// Request.CacheKey is ignored: Gemini caches implicitly.
//
// # Errors
//
// A non-2xx answer is an *llm.APIError with the API's error status
// (RESOURCE_EXHAUSTED, ...) as Type and RetryAfter taken from the
// Retry-After header or else the RetryInfo retryDelay detail. An error
// object inside the stream is an *llm.APIError with Status 0. A stream
// that ends without a finish reason wraps llm.ErrStream, or
// llm.ErrEmpty when it carried nothing at all.
//
// A Model is safe for concurrent use.
package gemini
