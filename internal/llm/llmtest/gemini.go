package llmtest

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// NewGemini starts a fake Gemini API that answers
// POST /v1beta/models/{model}:streamGenerateContent?alt=sse with the
// documented SSE stream for each turn in order (see WriteGemini).
//
// It first checks each request as generateContent does (CheckGemini)
// and refuses one that breaks a rule with 400 and Google's error body
// {"error": {"code": 400, "message", "status": "INVALID_ARGUMENT"}}
// (ai.google.dev/gemini-api/docs/troubleshooting), failing the test (see
// the package doc). The rules and where they are documented:
//
// The v1beta reference (ai.google.dev/api/generate-content and
// ai.google.dev/api/caching#Content, #Part, #FunctionDeclaration):
//   - contents is a non-empty array; a content's role is "user" or
//     "model" (or left out); its parts are non-empty; a part holds
//     exactly one kind of data (text, inlineData, fileData,
//     functionCall, functionResponse, ...); bytes fields (inline data,
//     thoughtSignature) are base64;
//   - systemInstruction is text only;
//   - a functionCall has a name and object args, in model contents; a
//     functionResponse has a name and an object response, in user
//     contents;
//   - a function declaration's name is a-z, A-Z, 0-9, underscores,
//     colons, dots and dashes, at most 64; parameters and
//     parametersJsonSchema are mutually exclusive; names are unique
//     (the API answers "Duplicate function declaration found");
//   - maxOutputTokens is positive.
//
// Function calling (ai.google.dev/gemini-api/docs/function-calling): the
// model's function call turn comes right after a user turn (a prompt or
// function responses), and the next turn is a user turn answering
// every call: as many functionResponse parts as functionCall parts,
// matched by name and, when the call has one, by id. The API's own
// wording of these refusals is kept ("Please ensure that the number of
// function response parts is equal to the number of function call parts
// of the function call turn.", and the two "comes immediately after"
// messages).
//
// Inline data (ai.google.dev/gemini-api/docs/image-understanding and the
// audio, video and document guides): the MIME type is one the guides
// list; images are image/png, image/jpeg, image/webp, image/heic or
// image/heif — not image/gif.
//
// Thinking (ai.google.dev/gemini-api/docs/thinking): thinkingBudget and
// thinkingLevel are not both set; for gemini-2.5-pro the budget is -1
// or 128..32768 (it cannot be 0: "This model only works in thinking
// mode"), for gemini-2.5-flash -1 or 0..24576, for
// gemini-2.5-flash-lite -1, 0 or 512..24576. Other models' ranges are
// not checked. Thought signatures are not verified (Gemini 3's demand
// for them on the current turn's calls is not checked either).
func NewGemini(t testing.TB, turns ...Turn) *Server {
	return newServer(t, turns, "Gemini", checkGemini, WriteGemini)
}

// GeminiDeltaRunes is about how many runes of text the fake puts in one
// chunk (at least three chunks per text are sent): a 1,000,000-byte
// ASCII answer arrives in 5,000 chunks.
const GeminiDeltaRunes = 200

// WriteGemini answers r with turn as streamGenerateContent streams it
// with alt=sse: data-only events, each a GenerateContentResponse —
// thinking as parts with thought: true (three pieces, the last carrying
// GeminiSignature), text in pieces, then each call whole in a
// functionCall part (with its id only when Call.ID is set, the first
// one carrying GeminiCallSignature when the turn thinks; an Input that
// is not valid JSON is sent as a JSON string, the nearest Gemini can
// come to a malformed call). Every chunk has usageMetadata with the
// prompt count; the last has the full counts and finishReason, which is
// STOP even for tool calls unless Turn.Stop overrides it. When the turn
// thinks, half the output tokens are reported as thoughtsTokenCount.
//
// It answers like the real API when the request is not such a POST
// (404) or carries no x-goog-api-key (403); it does not check the body
// (NewGemini does, before it). Tests that need a broken or partial
// stream build their own handler with NewServer and SSE.
func WriteGemini(w http.ResponseWriter, r *http.Request, turn Turn) {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1beta/models/")
	if r.Method != http.MethodPost || !ok || !strings.HasSuffix(rest, ":streamGenerateContent") || r.URL.Query().Get("alt") != "sse" {
		geminiError(w, http.StatusNotFound, "NOT_FOUND", "Not found: "+r.Method+" "+r.URL.RequestURI())
		return
	}
	if r.Header.Get("X-Goog-Api-Key") == "" {
		geminiError(w, http.StatusForbidden, "PERMISSION_DENIED", "Method doesn't allow unregistered callers. Please use API Key or other form of API consumer identity to call this API.")
		return
	}
	model := strings.TrimSuffix(rest, ":streamGenerateContent")

	var chunks [][]geminiPart
	if turn.Thinking != "" {
		pieces := Chunks(turn.Thinking, 3)
		for i, p := range pieces {
			part := geminiPart{Text: p, Thought: true}
			if i == len(pieces)-1 {
				part.ThoughtSignature = GeminiSignature(turn.Thinking)
			}
			chunks = append(chunks, []geminiPart{part})
		}
	}
	if turn.Text != "" {
		n := max(3, (len([]rune(turn.Text))+GeminiDeltaRunes-1)/GeminiDeltaRunes)
		for _, p := range Chunks(turn.Text, n) {
			chunks = append(chunks, []geminiPart{{Text: p}})
		}
	}
	for i, c := range turn.Calls {
		args := json.RawMessage(c.Input)
		if !json.Valid(args) {
			args, _ = json.Marshal(c.Input) // a string always marshals
		}
		part := geminiPart{FunctionCall: &geminiCall{ID: c.ID, Name: c.Name, Args: args}}
		if i == 0 && turn.Thinking != "" {
			part.ThoughtSignature = GeminiCallSignature(c.Name)
		}
		chunks = append(chunks, []geminiPart{part})
	}
	if len(chunks) == 0 {
		chunks = append(chunks, []geminiPart{})
	}

	stop := turn.Stop
	if stop == "" {
		stop = "STOP"
	}
	prompt := turn.InputTokens + turn.CacheReadTokens
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for i, parts := range chunks {
		c := geminiChunk{
			Candidates:    []geminiCandidate{{Content: geminiContent{Role: "model", Parts: parts}}},
			UsageMetadata: geminiUsage{PromptTokenCount: prompt, TotalTokenCount: prompt},
			ModelVersion:  model,
			ResponseID:    "fake-response",
		}
		if i == len(chunks)-1 {
			c.Candidates[0].FinishReason = stop
			u := &c.UsageMetadata
			u.CandidatesTokenCount = turn.OutputTokens
			if turn.Thinking != "" {
				u.ThoughtsTokenCount = turn.OutputTokens / 2
				u.CandidatesTokenCount -= u.ThoughtsTokenCount
			}
			u.CachedContentTokenCount = turn.CacheReadTokens
			u.TotalTokenCount = prompt + turn.OutputTokens
		}
		b, _ := json.Marshal(c) // plain data always marshals
		SSE(w, "", string(b))
	}
}

// GeminiSignature is the made-up thoughtSignature the fake puts on the
// last thought part of a turn that thinks the given text.
func GeminiSignature(thinking string) string {
	return base64.StdEncoding.EncodeToString([]byte("thought:" + thinking[:min(len(thinking), 16)]))
}

// GeminiCallSignature is the made-up thoughtSignature the fake puts on
// the first functionCall part of a turn that thinks.
func GeminiCallSignature(name string) string {
	return base64.StdEncoding.EncodeToString([]byte("call:" + name))
}

// GeminiErrorBody is an error body as Google APIs send it; retryDelay
// (e.g. "37s"), when set, adds a google.rpc.RetryInfo detail.
func GeminiErrorBody(code int, status, message, retryDelay string) string {
	type detail struct {
		Type       string `json:"@type"`
		RetryDelay string `json:"retryDelay"`
	}
	var e struct {
		Error struct {
			Code    int      `json:"code"`
			Message string   `json:"message"`
			Status  string   `json:"status"`
			Details []detail `json:"details,omitempty"`
		} `json:"error"`
	}
	e.Error.Code, e.Error.Message, e.Error.Status = code, message, status
	if retryDelay != "" {
		e.Error.Details = []detail{{Type: "type.googleapis.com/google.rpc.RetryInfo", RetryDelay: retryDelay}}
	}
	b, _ := json.MarshalIndent(e, "", "  ") // plain data always marshals
	return string(b)
}

func geminiError(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(status)
	io.WriteString(w, GeminiErrorBody(status, code, message, ""))
}

// The wire shapes the fake writes.
type (
	geminiChunk struct {
		Candidates    []geminiCandidate `json:"candidates"`
		UsageMetadata geminiUsage       `json:"usageMetadata"`
		ModelVersion  string            `json:"modelVersion"`
		ResponseID    string            `json:"responseId"`
	}
	geminiCandidate struct {
		Content      geminiContent `json:"content"`
		FinishReason string        `json:"finishReason,omitempty"`
		Index        int           `json:"index"`
	}
	geminiContent struct {
		Parts []geminiPart `json:"parts"`
		Role  string       `json:"role"`
	}
	geminiPart struct {
		Text             string      `json:"text,omitempty"`
		Thought          bool        `json:"thought,omitempty"`
		FunctionCall     *geminiCall `json:"functionCall,omitempty"`
		ThoughtSignature string      `json:"thoughtSignature,omitempty"`
	}
	geminiCall struct {
		ID   string          `json:"id,omitempty"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	}
	geminiUsage struct {
		PromptTokenCount        int64 `json:"promptTokenCount"`
		CandidatesTokenCount    int64 `json:"candidatesTokenCount,omitempty"`
		CachedContentTokenCount int64 `json:"cachedContentTokenCount,omitempty"`
		ThoughtsTokenCount      int64 `json:"thoughtsTokenCount,omitempty"`
		TotalTokenCount         int64 `json:"totalTokenCount"`
	}
)
