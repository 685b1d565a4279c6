package openaicompat

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"den.dev/den/internal/llm"
)

// completion is a chat.completion object.
type completion struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Created int64    `json:"created"`
	Model   string   `json:"model"`
	Choices []choice `json:"choices"`
	Usage   usage    `json:"usage"`
}

type choice struct {
	Index        int       `json:"index"`
	Message      answer    `json:"message"`
	Logprobs     *struct{} `json:"logprobs"` // always null
	FinishReason string    `json:"finish_reason"`
}

type answer struct {
	Role    string  `json:"role"`
	Content string  `json:"content"`
	Refusal *string `json:"refusal"` // always null: a refusal is content
}

type usage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// chunk is a chat.completion.chunk object. Usage is null in every chunk
// but the last when the client asked for usage, and absent otherwise,
// as OpenAI streams it.
type chunk struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Choices []chunkChoice   `json:"choices"`
	Usage   json.RawMessage `json:"usage,omitempty"`
}

type chunkChoice struct {
	Index        int       `json:"index"`
	Delta        delta     `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type delta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

// finishReason is OpenAI's name for why the last turn ended.
func finishReason(stop llm.StopReason) string {
	switch stop {
	case llm.StopMaxTokens:
		return "length"
	case llm.StopRefusal:
		return "content_filter"
	}
	return "stop"
}

// piece bounds the content of one streamed chunk, in bytes: line-based
// SSE readers (aiohttp's among them) refuse very long lines.
const piece = 4 << 10

// pieces cuts s into pieces of at most piece bytes, on rune boundaries.
func pieces(s string) []string {
	var out []string
	for len(s) > piece {
		n := piece
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// stream answers c as a stream of chunks; see the package doc for why
// the text comes once the run has ended.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, c *call, includeUsage bool) {
	rc := http.NewResponseController(w)
	// A stream lasts as long as its run: no write deadline.
	rc.SetWriteDeadline(time.Time{})
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	s := &chunks{w: w, rc: rc, base: c.base}
	s.base.Object = "chat.completion.chunk"
	if includeUsage {
		s.base.Usage = json.RawMessage("null")
	}
	empty := ""
	if err := s.send(delta{Role: "assistant", Content: &empty}, nil); err != nil {
		h.RT.Cancel(c.session)
		return
	}
	out, ok := h.wait(r.Context(), c, s.ping)
	if !ok {
		return
	}
	if out.Err != nil {
		ae := errorFor(out.Err, true)
		if ae.Status >= 500 {
			h.log().Error("openai stream failed", "session", c.session, "err", out.Err)
		}
		s.data(map[string]any{"error": ae})
		return
	}
	if text := out.Result.Text; text != "" {
		for _, p := range pieces(text) {
			s.send(delta{Content: &p}, nil)
		}
	}
	reason := finishReason(out.Result.Stop)
	s.send(delta{}, &reason)
	if includeUsage {
		u := h.tokens(r.Context(), c)
		last := s.base
		last.Choices = []chunkChoice{}
		last.Usage, _ = json.Marshal(u)
		s.data(last)
	}
	s.line("data: [DONE]\n\n")
}

// chunks writes a stream's lines, flushing each.
type chunks struct {
	w    http.ResponseWriter
	rc   *http.ResponseController
	base chunk
}

// send writes a chunk with one choice: d, and finish when the choice is
// done.
func (s *chunks) send(d delta, finish *string) error {
	c := s.base
	c.Choices = []chunkChoice{{Delta: d, FinishReason: finish}}
	return s.data(c)
}

// data writes v as a data line.
func (s *chunks) data(v any) error {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("openaicompat: encode chunk: %w", err)
	}
	return s.line("data: " + strings.TrimSuffix(b.String(), "\n") + "\n\n")
}

// ping writes a comment, which clients ignore, to find out whether the
// client is still there.
func (s *chunks) ping() error { return s.line(": keep-alive\n\n") }

func (s *chunks) line(l string) error {
	if _, err := fmt.Fprint(s.w, l); err != nil {
		return err
	}
	return s.rc.Flush()
}
