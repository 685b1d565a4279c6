// Package llm is den's provider-neutral vocabulary for language models:
// messages made of typed parts, a sealed set of stream events, and the
// Model interface every provider adapter (anthropic, openai,
// openairesponses, gemini; one subpackage each) implements. Nothing
// above the adapters sees a vendor type.
//
// Invariants:
//   - A stream is an iterator of (Event, error); an error ends it; a
//     consumer's break cancels the request.
//   - A complete turn ends with exactly one Done event, after any
//     Usage events.
//   - Thinking and tool-call parts carry what their provider needs to
//     have them replayed unchanged (signatures, encrypted payloads),
//     tagged with the API that produced them; an adapter replays only
//     its own API's opaque data and drops the rest.
//
// The package imports no other den package.
package llm

import (
	"context"
	"encoding/json"
	"iter"
	"time"
)

// Role is who wrote a message.
type Role string

// The roles. Tool results travel in user messages, as every provider
// API can express.
const (
	User      Role = "user"
	Assistant Role = "assistant"
)

// Message is one message of a conversation.
type Message struct {
	Role  Role
	Parts []Part
}

// Part is one typed piece of a message: *Text, *Image, *Thinking,
// *ToolCall or *ToolResult.
type Part interface{ isPart() }

// Text is plain text.
type Text struct {
	Text string
}

// Image is an image, inline.
type Image struct {
	MediaType string // image/png, image/jpeg, image/gif, image/webp
	Data      []byte
}

// Thinking is a model's reasoning. Signature and Opaque are what the
// producing API needs to accept it back (Anthropic's signature or
// redacted data, the Responses API's encrypted reasoning item, Gemini's
// thought signature, a DeepSeek/Kimi reasoning_content echo); API names
// that API so other adapters can leave it out.
type Thinking struct {
	Text      string
	Signature string
	Redacted  bool            // the text is withheld; Opaque holds it
	Opaque    json.RawMessage // provider data replayed unchanged
	API       string          // "anthropic", "openai", "openai-responses", "gemini"
}

// ToolCall is a model's request to run a tool.
type ToolCall struct {
	ID    string
	Name  string
	Input json.RawMessage // a JSON object
	// Signature is provider data attached to the call itself (Gemini's
	// thoughtSignature on a functionCall part), replayed unchanged.
	Signature string
	API       string
}

// ToolResult answers one ToolCall.
type ToolResult struct {
	CallID  string
	Name    string // the tool's name (Gemini answers calls by name)
	Content []Part // *Text and *Image only
	IsError bool
}

func (*Text) isPart()       {}
func (*Image) isPart()      {}
func (*Thinking) isPart()   {}
func (*ToolCall) isPart()   {}
func (*ToolResult) isPart() {}

// Tool describes a tool the model may call.
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage // JSON Schema of the input object
}

// ThinkingLevel is how much reasoning to ask for.
type ThinkingLevel string

// The levels; each adapter maps them onto its API and clamps them to
// the model.
const (
	ThinkingOff    ThinkingLevel = "off"
	ThinkingLow    ThinkingLevel = "low"
	ThinkingMedium ThinkingLevel = "medium"
	ThinkingHigh   ThinkingLevel = "high"
	ThinkingMax    ThinkingLevel = "max"
)

// Request is one call to a model.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []Tool
	MaxTokens int
	Thinking  ThinkingLevel
	// CacheKey, when set, asks providers that support it to cache the
	// stable prefix (tools, system prompt, earlier turns).
	CacheKey string
	// InputTokens, when set, is den's estimate of the request's input
	// tokens, so that a chain of models can fit the request to the
	// window of whichever model answers it. Adapters do not send it.
	InputTokens int64
}

// Event is one element of a stream: *TextDelta, *ThinkingDelta,
// *ThinkingDone, *ToolCallStart, *ToolCallDelta, *ToolCallDone, *Usage,
// *Retry, *Answered or *Done.
type Event interface{ isEvent() }

// TextDelta is more answer text.
type TextDelta struct{ Text string }

// ThinkingDelta is more reasoning text.
type ThinkingDelta struct{ Text string }

// ThinkingDone is a complete reasoning block, with whatever must be
// replayed (the "reasoning echo").
type ThinkingDone struct{ Thinking Thinking }

// ToolCallStart opens the tool call with the given index in this turn.
type ToolCallStart struct {
	Index int
	ID    string
	Name  string
}

// ToolCallDelta is more of a tool call's JSON arguments.
type ToolCallDelta struct {
	Index int
	JSON  string
}

// ToolCallDone is a complete tool call. Its Input is the raw JSON the
// model sent, which may be invalid; callers validate it.
type ToolCallDone struct {
	Index int
	Call  ToolCall
}

// Usage reports tokens; a stream may send several, cumulative per
// field (a later value replaces an earlier one).
type Usage struct {
	InputTokens      int64 // not counting cache reads and writes
	OutputTokens     int64
	CacheReadTokens  int64
	CacheWriteTokens int64
}

// StopReason is why a turn ended.
type StopReason string

// The stop reasons.
const (
	StopEndTurn   StopReason = "end_turn"
	StopToolUse   StopReason = "tool_use"
	StopMaxTokens StopReason = "max_tokens"
	StopRefusal   StopReason = "refusal"
	StopOther     StopReason = "other"
)

// Done ends a turn.
type Done struct{ Stop StopReason }

// Retry says the attempt failed and the turn starts over after Delay
// (possibly with another model): consumers drop everything the failed
// attempt streamed. Adapters never send it; the retry layer above them
// does.
type Retry struct {
	Attempt int // 1 for the first retry
	Delay   time.Duration
	Reason  string // the error class and message
	Model   string // the model ref the next attempt uses
}

// Answered names the model ref whose stream follows (sent by the
// fallback layer at the start of each attempt).
type Answered struct{ Model string }

func (*TextDelta) isEvent()     {}
func (*ThinkingDelta) isEvent() {}
func (*ThinkingDone) isEvent()  {}
func (*ToolCallStart) isEvent() {}
func (*ToolCallDelta) isEvent() {}
func (*ToolCallDone) isEvent()  {}
func (*Usage) isEvent()         {}
func (*Done) isEvent()          {}
func (*Retry) isEvent()         {}
func (*Answered) isEvent()      {}

// Model streams one turn of a conversation.
type Model interface {
	Stream(ctx context.Context, req *Request) iter.Seq2[Event, error]
}

// Provider is how to reach one provider API.
type Provider struct {
	Name    string            // the configured name, used in model refs
	Type    string            // "anthropic", "openai", "openai-responses", "gemini"
	BaseURL string            // empty: the API's default
	APIKey  string            // never logged
	Headers map[string]string // extra HTTP headers
}
