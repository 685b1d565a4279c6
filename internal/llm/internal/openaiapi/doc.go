// Package openaiapi holds the rules den's two OpenAI adapters share:
// package openai (Chat Completions) and package openairesponses
// (Responses API). It is internal to package llm's tree so that only
// those adapters build on it.
//
// Clients: Options turns an llm.Provider into SDK request options. A
// provider needs an API key unless its BaseURL names a server on this
// machine (localhost, *.localhost or a loopback address), as Ollama and
// llama.cpp need none. The SDK's own retries are off and nothing is read
// from OPENAI_* environment variables: den's configuration is explicit
// and retrying is the caller's job.
//
// Errors: HTTPError reads an HTTP error answer into an *llm.APIError
// with the Retry-After hint (retry-after-ms, then retry-after in seconds
// or as an HTTP date); StreamError maps whatever ended a stream early —
// cancellation, an HTTP error, an error object inside the stream
// (Status 0), or a broken stream wrapping llm.ErrStream. Both accept the
// error shapes OpenAI and compatible servers send.
//
// Requests and streams: ReasoningModel and Effort decide and map
// reasoning effort; Parameters is a tool's JSON Schema as the SDK wants
// it; DataURL encodes an image; Arguments defaults empty tool-call
// arguments to {}; CallIDs makes the tool-call ids of one turn unique.
//
// Every function takes the adapter's API name where it shows in errors,
// so each adapter keeps its own prefix ("openai: ...",
// "openai-responses: ...") and APIError.API. Nothing here holds state
// between calls except a CallIDs value, which belongs to one turn.
package openaiapi
