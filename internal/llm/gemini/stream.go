package gemini

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"den.dev/den/internal/llm"
)

// response is one GenerateContentResponse chunk, as much as den reads.
type response struct {
	Candidates     []candidate     `json:"candidates"`
	PromptFeedback *promptFeedback `json:"promptFeedback"`
	UsageMetadata  *usageMetadata  `json:"usageMetadata"`
	Error          *errorBody      `json:"error"` // an error sent inside the stream
}

type candidate struct {
	Content *struct {
		Parts []responsePart `json:"parts"`
	} `json:"content"`
	FinishReason string `json:"finishReason"`
}

type responsePart struct {
	Text             string `json:"text"`
	Thought          bool   `json:"thought"`
	ThoughtSignature string `json:"thoughtSignature"`
	FunctionCall     *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
}

type promptFeedback struct {
	BlockReason string `json:"blockReason"`
}

type usageMetadata struct {
	PromptTokenCount        int64 `json:"promptTokenCount"`
	CandidatesTokenCount    int64 `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int64 `json:"thoughtsTokenCount"`
	CachedContentTokenCount int64 `json:"cachedContentTokenCount"`
}

// maxEvent bounds one SSE event; Gemini's chunks are far smaller.
const maxEvent = 64 << 20

// stream turns SSE chunks into llm events for one turn.
type stream struct {
	yield func(llm.Event, error) bool

	stopped   bool // the consumer broke out of the loop
	chunks    int
	content   bool // any text, thinking or call arrived
	calls     int
	thinking  strings.Builder
	signature string // the last thoughtSignature on a non-call part
	finish    string
	blocked   string
	usage     *usageMetadata
	salt      string
}

// emit yields ev and records whether the consumer wants more.
func (s *stream) emit(ev llm.Event) bool {
	if !s.stopped && !s.yield(ev, nil) {
		s.stopped = true
	}
	return !s.stopped
}

// run reads the SSE body to its end, emitting events, and ends the turn
// with Usage and Done. It returns the error that ended the stream, if
// any; nil also when the consumer stopped.
func (s *stream) run(body io.Reader) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), maxEvent)
	var data []byte
	flush := func() error {
		if len(data) == 0 {
			return nil
		}
		err := s.chunk(data)
		data = data[:0]
		return err
	}
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case len(line) == 0:
			if err := flush(); err != nil {
				return err
			}
		case line[0] == ':': // an SSE comment
		default:
			field, value, _ := bytes.Cut(line, []byte(":"))
			value = bytes.TrimPrefix(value, []byte(" "))
			if string(field) == "data" {
				if len(data) > 0 {
					data = append(data, '\n')
				}
				data = append(data, value...)
			}
		}
		if s.stopped {
			return nil
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("gemini: read stream: %w: %w", llm.ErrStream, err)
	}
	if err := flush(); err != nil {
		return err
	}
	if s.stopped {
		return nil
	}
	return s.end()
}

// chunk handles one data payload.
func (s *stream) chunk(data []byte) error {
	var r response
	if err := json.Unmarshal(data, &r); err != nil {
		return fmt.Errorf("gemini: bad chunk: %w: %w", llm.ErrStream, err)
	}
	s.chunks++
	if r.Error != nil {
		return r.Error.apiError(0, 0)
	}
	if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
		s.blocked = r.PromptFeedback.BlockReason
	}
	if r.UsageMetadata != nil {
		s.usage = r.UsageMetadata
	}
	if len(r.Candidates) == 0 {
		return nil
	}
	c := r.Candidates[0]
	if c.Content != nil {
		for i := range c.Content.Parts {
			if !s.part(&c.Content.Parts[i]) {
				return nil
			}
		}
	}
	if c.FinishReason != "" && c.FinishReason != "FINISH_REASON_UNSPECIFIED" {
		s.finish = c.FinishReason
	}
	return nil
}

// part handles one response part; it reports whether to go on.
func (s *stream) part(p *responsePart) bool {
	if fc := p.FunctionCall; fc != nil {
		s.content = true
		i := s.calls
		s.calls++
		id := fc.ID
		if id == "" {
			id = s.newID(i)
		}
		args := string(bytes.TrimSpace(fc.Args))
		if args == "" || args == "null" {
			args = "{}"
		}
		return s.emit(&llm.ToolCallStart{Index: i, ID: id, Name: fc.Name}) &&
			s.emit(&llm.ToolCallDelta{Index: i, JSON: args}) &&
			s.emit(&llm.ToolCallDone{Index: i, Call: llm.ToolCall{
				ID: id, Name: fc.Name, Input: json.RawMessage(args),
				Signature: p.ThoughtSignature, API: "gemini",
			}})
	}
	if p.ThoughtSignature != "" {
		s.signature = p.ThoughtSignature
	}
	if p.Text == "" {
		return true
	}
	s.content = true
	if p.Thought {
		s.thinking.WriteString(p.Text)
		return s.emit(&llm.ThinkingDelta{Text: p.Text})
	}
	return s.emit(&llm.TextDelta{Text: p.Text})
}

// newID returns an id for the call with index i, unique within a
// session thanks to a random suffix drawn once per turn.
func (s *stream) newID(i int) string {
	if s.salt == "" {
		var b [6]byte
		rand.Read(b[:]) // never fails (crypto/rand)
		s.salt = hex.EncodeToString(b[:])
	}
	return fmt.Sprintf("%s%d_%s", idPrefix, i, s.salt)
}

// end closes the turn after the body ended cleanly.
func (s *stream) end() error {
	var stop llm.StopReason
	switch {
	case s.blocked != "" && s.finish == "":
		stop = llm.StopRefusal
	case s.finish != "":
		stop = stopReason(s.finish, s.calls > 0)
	case s.content:
		return fmt.Errorf("gemini: stream ended without a finish reason: %w", llm.ErrStream)
	default:
		return fmt.Errorf("gemini: %w", llm.ErrEmpty)
	}
	if s.thinking.Len() > 0 || s.signature != "" {
		if !s.emit(&llm.ThinkingDone{Thinking: llm.Thinking{
			Text: s.thinking.String(), Signature: s.signature, API: "gemini",
		}}) {
			return nil
		}
	}
	if u := s.usage; u != nil {
		if !s.emit(&llm.Usage{
			InputTokens:     u.PromptTokenCount - u.CachedContentTokenCount,
			OutputTokens:    u.CandidatesTokenCount + u.ThoughtsTokenCount,
			CacheReadTokens: u.CachedContentTokenCount,
		}) {
			return nil
		}
	}
	s.emit(&llm.Done{Stop: stop})
	return nil
}

// stopReason maps a Gemini finishReason. Gemini says STOP when it calls
// tools too.
func stopReason(finish string, calls bool) llm.StopReason {
	switch finish {
	case "STOP":
		if calls {
			return llm.StopToolUse
		}
		return llm.StopEndTurn
	case "MAX_TOKENS":
		return llm.StopMaxTokens
	case "SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII",
		"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT":
		return llm.StopRefusal
	default:
		return llm.StopOther
	}
}
