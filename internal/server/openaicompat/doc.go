// Package openaicompat answers OpenAI's Chat Completions API with den's
// agents, so that any OpenAI client (an SDK, a chat UI, an editor
// plugin) can talk to a den agent: POST /v1/chat/completions and
// GET /v1/models. The daemon mounts the handlers behind its auth guard;
// a client's API key is den's token (sent as "Authorization: Bearer").
//
// # Models and sessions
//
// The model is "den/AGENT", AGENT being "default" or an agent of the
// config; any other model is answered 404 model_not_found. Each call is
// a new session of that agent, with the agent's own model, unless the
// X-Den-Session header names an existing session of that agent (a
// session of another agent is answered as a missing one). Every answer
// to a message den accepted carries X-Den-Session, so that a client can
// continue the session.
//
// # Messages
//
// den keeps each session's history itself, so the request's messages
// are mapped onto one den message, the text of the last message, which
// must be the user's:
//   - for a new session, the request's system and developer
//     instructions come first, then, when there are earlier turns, a
//     compact transcript of them ("Earlier in this conversation:" and a
//     line per message, the assistant's tool calls and their results
//     included), then the user's message. A stateless client that
//     resends its whole history thus gets an answer in context; with
//     neither, the message is the user's text as it is.
//   - for an existing session, only the last message is sent: den has
//     the rest, and the client's copy of the history is not read.
//
// Content is a string or an array of text parts; image, audio and file
// parts are refused (400) for now. The request is checked as OpenAI's
// API checks it (model and messages required, roles and content
// shapes, stream a boolean, stream_options only with stream, n at most
// 1), and every other field is accepted and ignored: sampling settings,
// max_tokens, response_format... den's agent chooses. The client's tools
// and tool_choice are ignored too: den runs its own tools (its shell in
// the agent's computer, its host commands) inside the call, and the
// client sees the answer they led to, never an OpenAI tool call to run.
//
// # Answers
//
// An answer is the run's final text (agent.Result.Text): the text of the
// model's last turn, after every tool call has run. Its usage is the
// sum of the usage events of the runs the message started: prompt
// tokens count cache reads and writes (OpenAI's prompt_tokens includes
// cached tokens, reported again as prompt_tokens_details.cached_tokens).
// finish_reason is "length" when the model ran out of output tokens,
// "content_filter" when it refused, "stop" otherwise.
//
// # Streaming
//
// A streamed answer opens at once with the role chunk OpenAI sends
// first, keeps the connection alive with SSE comments while den works,
// and sends the final text once the run has ended, then the
// finish_reason chunk, the usage chunk (stream_options.include_usage)
// and [DONE]. It does not stream den's text events as they come, on
// purpose: an OpenAI stream cannot take text back, and two kinds of
// den text would have to be taken back. A retry (a model's stream that
// broke, or a fallback model answering instead) voids what the failed
// attempt streamed, and the narration of a turn that goes on to call
// tools ("Let me look at the files.") is not the answer, which is the
// last turn's text. Whether a turn is the last one is only known once it
// ends, so the text of a turn can only be sent once the turn has ended,
// and the last turn ends with the run. Streaming text as it comes would
// give a client duplicated or garbled text after a retry, and a streamed
// answer that differs from the non-streamed one and from what den
// stored; a demanding user would rather wait for the answer than read
// one that is wrong, and the keep-alive comments hold the connection
// (and most clients' timeouts) meanwhile. The text goes out in pieces
// of a few KiB, so that no SSE line is too long for line-based readers.
//
// An error after the stream opened is sent the way OpenAI sends one: a
// data line with an "error" object, and no [DONE].
//
// # Cancellation and errors
//
// A client that goes away (its request's context ends), streaming or
// not, cancels the session's running turn (Runtime.Cancel): nothing runs
// on for nobody, and the session's status becomes interrupted.
//
// Errors have OpenAI's shape, {"error": {"message", "type", "param",
// "code"}}, mapped in one table (errorFor): a bad request or a bad
// option 400, an unknown model or session 404, a session running a turn
// 409 (the message is queued, and joins that turn at its next turn
// boundary), a budget reached 429 insufficient_quota, a model provider's
// failure 502, den's own 500, den stopping 503. Once den has accepted a
// message its errors carry "x-should-retry: false": the OpenAI SDKs
// retry 409 and 5xx answers by default, and a retry would run the agent
// (and its tools) again.
//
// # Concurrency
//
// A Handler holds no state of its own: calls run concurrently, each on
// its own session, or queue behind each other on a shared one.
package openaicompat
