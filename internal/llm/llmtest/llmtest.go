// Package llmtest holds fake provider servers that speak each provider
// API's documented wire format (SSE event by event), answering from a
// script of turns and recording every request den sends, for adapter
// tests, golden request tests and end-to-end runs of den.
package llmtest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// Turn is one scripted answer.
type Turn struct {
	Thinking string // reasoning to stream first (when the API has it)
	Text     string // answer text, streamed in several deltas
	Calls    []Call // tool calls, streamed after the text
	// Stop overrides the stop reason the API would report ("" derives
	// it: tool use when there are calls, else end of turn).
	Stop string
	// Usage reported at the end.
	InputTokens, OutputTokens, CacheReadTokens, CacheWriteTokens int64
	// Error, when set, is answered instead of a stream.
	Error *HTTPError
}

// Call is a scripted tool call. ID "" lets the API omit it (Gemini).
type Call struct {
	ID    string
	Name  string
	Input string // JSON, sent in pieces; may be deliberately invalid
}

// HTTPError is an error answer.
type HTTPError struct {
	Status     int
	Body       string // the API's JSON error body
	RetryAfter string // Retry-After header value, if any
}

// Server is a fake provider: each request gets the next scripted turn
// (the last one repeats once the script is used up).
type Server struct {
	*httptest.Server

	mu       sync.Mutex
	turns    []Turn
	next     int
	requests []Request
}

// Request is one request den sent.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// NewServer starts a server whose handler writes turn t with write.
// Adapter packages' fakes (NewAnthropic, NewOpenAI, ...) build on it.
func NewServer(t testing.TB, turns []Turn, write func(w http.ResponseWriter, r *http.Request, turn Turn)) *Server {
	s := &Server{turns: turns}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		var turn Turn
		if len(s.turns) > 0 {
			i := min(s.next, len(s.turns)-1)
			turn = s.turns[i]
			s.next++
		}
		s.mu.Unlock()
		if turn.Error != nil {
			if turn.Error.RetryAfter != "" {
				w.Header().Set("Retry-After", turn.Error.RetryAfter)
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(turn.Error.Status)
			io.WriteString(w, turn.Error.Body)
			return
		}
		write(w, r, turn)
	}))
	t.Cleanup(s.Close)
	return s
}

// Requests returns what den sent so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// SSE writes one server-sent event and flushes it. event "" omits the
// event line (OpenAI and Gemini send data lines only).
func SSE(w http.ResponseWriter, event, data string) {
	if event != "" {
		io.WriteString(w, "event: "+event+"\n")
	}
	io.WriteString(w, "data: "+data+"\n\n")
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// Chunks splits s into about n pieces (at least one), on rune
// boundaries, for streaming deltas.
func Chunks(s string, n int) []string {
	r := []rune(s)
	if len(r) == 0 {
		return nil
	}
	size := max(1, (len(r)+n-1)/n)
	var out []string
	for i := 0; i < len(r); i += size {
		out = append(out, string(r[i:min(i+size, len(r))]))
	}
	return out
}
