// Package llmtest holds fake provider servers that speak each provider
// API's documented wire format (SSE event by event), answering from a
// script of turns and recording every request den sends, for adapter
// tests, golden request tests and end-to-end runs of den.
//
// The fakes also check each request as the real API would
// (CheckAnthropic, CheckOpenAI, CheckResponses, CheckGemini; each
// fake's doc lists the rules and where they are documented). A request
// the real API would refuse is answered with that API's status and
// error body, kept in Server.Rejected, and reported with t.Errorf on
// the test that started the fake, so that a retry or fallback layer
// above the adapter cannot hide it. A test that sends invalid requests
// on purpose calls Server.ExpectInvalid first.
package llmtest

import (
	"fmt"
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

	t     testing.TB
	api   string                                      // the API's name in reports
	check func(r *http.Request, body []byte) *refusal // nil: accept anything

	mu            sync.Mutex
	turns         []Turn
	next          int
	respond       func(body []byte) Turn // when set, answers instead of turns
	requests      []Request
	rejected      []Rejection
	expectInvalid bool
}

// Request is one request den sent.
type Request struct {
	Method, Path string
	Header       http.Header
	Body         []byte
}

// refusal is how the real API refuses a request: the answer it gives
// (Status and the API's JSON error Body) and, for the test's report,
// the Reason.
type refusal struct {
	Status int
	Body   string
	Reason string
}

// Rejection is a request a fake refused as the real API would.
type Rejection struct {
	Index  int // in Requests
	Status int
	Reason string
}

// NewServer starts a server whose handler writes turn t with write.
// It checks nothing: tests that need a broken or hand-made stream use
// it; the API fakes (NewAnthropic, NewOpenAI, ...) add their checks.
func NewServer(t testing.TB, turns []Turn, write func(w http.ResponseWriter, r *http.Request, turn Turn)) *Server {
	return newServer(t, turns, "", nil, write)
}

// newServer is NewServer with a check run on every request before the
// script is consulted: a request check refuses is answered with its
// error, does not use up a turn, and fails t unless ExpectInvalid was
// called. check returns nil for a request that is not its business
// (wrong path, no credential), which write then answers.
func newServer(t testing.TB, turns []Turn, api string, check func(*http.Request, []byte) *refusal, write func(w http.ResponseWriter, r *http.Request, turn Turn)) *Server {
	s := &Server{t: t, api: api, check: check, turns: turns}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			// The client went away before its request was whole (a
			// test killed den mid-send): no API sees such a request.
			return
		}
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		index := len(s.requests) - 1
		s.mu.Unlock()
		if s.check != nil {
			if bad := s.check(r, body); bad != nil {
				s.reject(index, bad, body)
				writeJSON(w, bad.Status, bad.Body, "")
				return
			}
		}
		s.mu.Lock()
		var turn Turn
		switch {
		case s.respond != nil:
			turn = s.respond(body)
		case len(s.turns) > 0:
			i := min(s.next, len(s.turns)-1)
			turn = s.turns[i]
			s.next++
		}
		s.mu.Unlock()
		if turn.Error != nil {
			writeJSON(w, turn.Error.Status, turn.Error.Body, turn.Error.RetryAfter)
			return
		}
		write(w, r, turn)
	}))
	t.Cleanup(s.Close)
	return s
}

// Respond makes f answer every request from now on, instead of the
// script: a turn made from the request's body (a test's model that
// answers what it is asked). f runs one request at a time.
func (s *Server) Respond(f func(body []byte) Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.respond = f
}

// reject records a refused request and, unless invalid requests are
// expected, fails the test with the reason and the body den sent.
func (s *Server) reject(index int, bad *refusal, body []byte) {
	s.mu.Lock()
	s.rejected = append(s.rejected, Rejection{Index: index, Status: bad.Status, Reason: bad.Reason})
	expected := s.expectInvalid
	s.mu.Unlock()
	if !expected {
		s.t.Errorf("llmtest: the fake %s API refused request %d as the real API would (HTTP %d): %s\nrequest body:\n%s",
			s.api, index, bad.Status, bad.Reason, clip(body, 8<<10))
	}
}

// ExpectInvalid lets the test send requests the real API would refuse:
// they are still refused and recorded in Rejected, but no longer fail
// the test.
func (s *Server) ExpectInvalid() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expectInvalid = true
}

// Rejected returns the requests refused so far.
func (s *Server) Rejected() []Rejection {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Rejection(nil), s.rejected...)
}

// writeJSON writes a JSON error answer.
func writeJSON(w http.ResponseWriter, status int, body, retryAfter string) {
	if retryAfter != "" {
		w.Header().Set("Retry-After", retryAfter)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

// clip is b, cut to at most n bytes for a report.
func clip(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	return fmt.Sprintf("%s... (%d more bytes)", b[:n], len(b)-n)
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
