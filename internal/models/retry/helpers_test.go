package retry

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/models"
)

// adapter is one provider API under test: its fake and how it words
// errors.
type adapter struct {
	name  string // the provider type
	model string
	fake  func(testing.TB, ...llmtest.Turn) *llmtest.Server
	// errBody is an error body with the API's shape.
	errBody func(status int, typ, msg string) string
	// cutAfter is how many SSE events (flushes) a faulty stream sends
	// before it stalls or breaks: some text deltas are among them.
	cutAfter int
	// retryAfterMs says the adapter reads retry-after-ms.
	retryAfterMs bool
}

func openAIErrorBody(_ int, typ, msg string) string {
	return fmt.Sprintf(`{"error": {"message": %q, "type": %q, "code": %q}}`, msg, typ, typ)
}

var adapters = []adapter{
	{
		name: "anthropic", model: "claude-fake", fake: llmtest.NewAnthropic,
		errBody:  func(_ int, typ, msg string) string { return llmtest.AnthropicErrorBody(typ, msg) },
		cutAfter: 5, retryAfterMs: true, // message_start, block start, ping, 2 text deltas
	},
	{
		name: "openai", model: "gpt-fake", fake: llmtest.NewOpenAI,
		errBody:  openAIErrorBody,
		cutAfter: 3, retryAfterMs: true, // role chunk, 2 content deltas
	},
	{
		name: "openai-responses", model: "gpt-fake", fake: llmtest.NewResponses,
		errBody:  openAIErrorBody,
		cutAfter: 6, retryAfterMs: true, // created, in_progress, item, part, 2 deltas
	},
	{
		name: "gemini", model: "gemini-fake", fake: llmtest.NewGemini,
		errBody: func(status int, typ, msg string) string {
			return llmtest.GeminiErrorBody(status, typ, msg, "")
		},
		cutAfter: 2, // 2 text chunks
	},
}

// Error types per API for the HTTP faults.
func (a adapter) httpError(status int, msg string) *llmtest.HTTPError {
	types := map[string]map[int]string{
		"anthropic":        {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"},
		"openai":           {400: "invalid_request_error", 401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded", 500: "server_error", 529: "overloaded"},
		"openai-responses": {400: "invalid_request_error", 401: "invalid_api_key", 404: "model_not_found", 429: "rate_limit_exceeded", 500: "server_error", 529: "overloaded"},
		"gemini":           {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 404: "NOT_FOUND", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"},
	}
	return &llmtest.HTTPError{Status: status, Body: a.errBody(status, types[a.name][status], msg)}
}

// target addresses url as this adapter's provider.
func (a adapter) target(url, key string) models.Target {
	return models.Target{
		Ref:      a.name + "/" + a.model,
		Provider: llm.Provider{Name: a.name, Type: a.name, BaseURL: url, APIKey: key},
		Model:    a.model,
	}
}

// The good turn every run must end with, and the text a failed attempt
// streams before it breaks.
var (
	goodTurn = llmtest.Turn{
		Thinking:     "The user wants the answer.",
		Text:         "The answer is 42, as computed by the tool below.",
		Calls:        []llmtest.Call{{ID: "call_1", Name: "calc", Input: `{"expr": "6*7"}`}},
		InputTokens:  11,
		OutputTokens: 7,
	}
	leakTurn = llmtest.Turn{Text: "LEAKED text from the failed attempt, which no consumer may keep after the retry."}
)

func hello() *llm.Request {
	return &llm.Request{
		Messages:  []llm.Message{{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "What is 6*7?"}}}},
		MaxTokens: 1000,
	}
}

// fault is what the front server does to one request.
type fault int

const (
	pass        fault = iota // forward the fake's answer
	stallMid                 // stop after cutAfter events, keep the connection open
	stallHeader              // send nothing at all, keep the connection open
	cutMid                   // drop the connection after cutAfter events
)

// step is one request's scripted answer and what happens to it.
type step struct {
	turn   llmtest.Turn
	fault  fault
	header map[string]string // extra response headers
}

// faulty serves steps in order in front of a fake built from their
// turns; requests past the script get the fake's last turn.
type faulty struct {
	*httptest.Server
	fake  *llmtest.Server
	ended chan struct{} // closed when a stalled request's context ends
}

func newFaulty(t testing.TB, a adapter, steps ...step) *faulty {
	turns := make([]llmtest.Turn, len(steps))
	for i, s := range steps {
		turns[i] = s.turn
	}
	fake := a.fake(t, turns...)
	f := &faulty{fake: fake, ended: make(chan struct{})}
	var once sync.Once
	end := func() { once.Do(func() { close(f.ended) }) }
	var n atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := int(n.Add(1) - 1)
		var s step
		if i < len(steps) {
			s = steps[i]
		}
		for k, v := range s.header {
			w.Header().Set(k, v)
		}
		fake.Config.Handler.ServeHTTP(&faultWriter{ResponseWriter: w, r: r, fault: s.fault, after: a.cutAfter, end: end}, r)
	}))
	t.Cleanup(front.Close)
	f.Server = front
	return f
}

// Close closes the front server and the fake.
func (f *faulty) Close() {
	f.Server.Close()
	f.fake.Close()
}

// faultWriter breaks a response as its fault says.
type faultWriter struct {
	http.ResponseWriter
	r       *http.Request
	fault   fault
	after   int
	flushes int
	end     func() // called when a stall ends
}

func (w *faultWriter) WriteHeader(code int) {
	if w.fault == stallHeader {
		<-w.r.Context().Done()
		w.end()
		panic(http.ErrAbortHandler)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *faultWriter) Flush() {
	w.ResponseWriter.(http.Flusher).Flush()
	w.flushes++
	if w.flushes < w.after {
		return
	}
	switch w.fault {
	case stallMid:
		<-w.r.Context().Done() // the client gave up
		w.end()
		panic(http.ErrAbortHandler)
	case cutMid:
		panic(http.ErrAbortHandler)
	}
}

// sleeper records the waits asked of it and returns at once.
type sleeper struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delays = append(s.delays, d)
	return ctx.Err()
}

func (s *sleeper) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.delays...)
}

// result is what one turn yielded.
type result struct {
	events []llm.Event
	err    error
	turn   llm.Turn // collected, resetting on Retry
}

func stream(ctx context.Context, m llm.Model) result {
	var r result
	var c llm.Collector
	for ev, err := range m.Stream(ctx, hello()) {
		if err != nil {
			r.err = err
			break
		}
		r.events = append(r.events, ev)
		c.Add(ev)
	}
	r.turn = c.Turn()
	return r
}

func (r result) retries() []llm.Retry {
	var out []llm.Retry
	for _, ev := range r.events {
		if e, ok := ev.(*llm.Retry); ok {
			out = append(out, *e)
		}
	}
	return out
}

func (r result) answered() []string {
	var out []string
	for _, ev := range r.events {
		if e, ok := ev.(*llm.Answered); ok {
			out = append(out, e.Model)
		}
	}
	return out
}

// leakedBeforeRetry reports whether the failed attempt streamed text
// before the first Retry (so the test shows that it is dropped).
func (r result) leakedBeforeRetry() bool {
	for _, ev := range r.events {
		switch e := ev.(type) {
		case *llm.Retry:
			return false
		case *llm.TextDelta:
			if strings.Contains(e.Text, "LEAKED") {
				return true
			}
		}
	}
	return false
}

// want is what the adapter alone makes of the good turn.
func wantTurn(t *testing.T, a adapter) llm.Turn {
	t.Helper()
	s := a.fake(t, goodTurn)
	defer s.Close()
	m, err := models.Open(a.target(s.URL, "sk-test"))
	if err != nil {
		t.Fatal(err)
	}
	req := hello()
	req.Model = a.model
	var c llm.Collector
	for ev, err := range m.Stream(t.Context(), req) {
		if err != nil {
			t.Fatalf("the good turn alone: %v", err)
		}
		c.Add(ev)
	}
	turn := c.Turn()
	if !turn.Done || llm.TextOf(turn.Message) != goodTurn.Text || len(llm.Calls(turn.Message)) != 1 {
		t.Fatalf("the good turn alone collected %+v", turn)
	}
	return turn
}

// checkTurn compares a collected turn with the good one.
func checkTurn(t *testing.T, got, want llm.Turn) {
	t.Helper()
	// Which target answered is checked apart.
	if d := cmp.Diff(want, got, cmpopts.IgnoreFields(llm.Turn{}, "Model")); d != "" {
		t.Errorf("collected turn differs from the good turn (-want +got):\n%s", d)
	}
}

// noLeaks waits (bounded) for the goroutine count to fall back to
// base once idle client connections are closed.
func noLeaks(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second) // a hang guard, not a timing check
	for {
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
		n := runtime.NumGoroutine()
		if n <= base {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Errorf("%d goroutines, want at most %d:\n%s", n, base, buf)
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func targetsOf(ts ...models.Target) []models.Target { return ts }
