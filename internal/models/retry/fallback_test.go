package retry

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/models"
)

var (
	anthropicAPI = adapters[0]
	openaiAPI    = adapters[1]
	geminiAPI    = adapters[3]
)

// opens counts models.Open calls per target ref.
type opens struct {
	mu   sync.Mutex
	refs []string
}

func (o *opens) Open(t models.Target) (llm.Model, error) {
	o.mu.Lock()
	o.refs = append(o.refs, t.Ref)
	o.mu.Unlock()
	return models.Open(t)
}

// named renames a target so two members of one API differ.
func named(t models.Target, ref string) models.Target {
	t.Ref = ref
	return t
}

// checkRetries compares the Retry events with want (attempt numbers
// follow the order).
func checkRetries(t *testing.T, got []llm.Retry, want ...llm.Retry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("retries = %+v, want %d", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Attempt != i+1 || g.Delay != w.Delay || g.Model != w.Model || !strings.HasPrefix(g.Reason, w.Reason+": ") {
			t.Errorf("retry %d = %+v, want attempt %d, delay %v, model %s, reason %s: ...", i, g, i+1, w.Delay, w.Model, w.Reason)
		}
	}
}

func TestFallbackOnAuth(t *testing.T) {
	bad := llmtest.NewAnthropic(t, llmtest.Turn{Error: anthropicAPI.httpError(401, "invalid x-api-key")})
	good := openaiAPI.fake(t, goodTurn)
	a, b := anthropicAPI.target(bad.URL, "sk-wrong"), openaiAPI.target(good.URL, "sk-test")
	var sl sleeper
	m := &Model{Targets: targetsOf(a, b), Sleep: sl.Sleep}
	r := stream(t.Context(), m)
	if r.err != nil {
		t.Fatal(r.err)
	}
	checkRetries(t, r.retries(), llm.Retry{Delay: 0, Reason: "auth", Model: b.Ref})
	if got := r.answered(); strings.Join(got, ",") != a.Ref+","+b.Ref {
		t.Errorf("Answered events %v", got)
	}
	if len(sl.got()) != 0 {
		t.Errorf("slept %v before falling over", sl.got())
	}
	if n := len(bad.Requests()); n != 1 {
		t.Errorf("member 1 asked %d times, want 1", n)
	}
	checkTurn(t, r.turn, wantTurn(t, openaiAPI))
	if r.turn.Model != b.Ref {
		t.Errorf("Answered = %q, want %q", r.turn.Model, b.Ref)
	}
}

func TestSkipNoKey(t *testing.T) {
	good := anthropicAPI.fake(t, goodTurn)
	nokey := models.Target{
		Ref:      "remote/model",
		Provider: llm.Provider{Name: "remote", Type: "anthropic", BaseURL: "https://api.example.invalid"},
		Model:    "model",
	}
	b := anthropicAPI.target(good.URL, "sk-test")
	var o opens
	m := &Model{Targets: targetsOf(nokey, b), Open: o.Open}
	r := stream(t.Context(), m)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.retries()) != 0 {
		t.Errorf("a skipped member yielded retries: %+v", r.retries())
	}
	if got := r.answered(); len(got) != 1 || got[0] != b.Ref {
		t.Errorf("Answered events %v, want only %s", got, b.Ref)
	}
	if strings.Join(o.refs, ",") != b.Ref {
		t.Errorf("opened %v, want only %s", o.refs, b.Ref)
	}
	checkTurn(t, r.turn, wantTurn(t, anthropicAPI))
}

// A keyless target on this machine (Ollama, llama.cpp) is asked.
func TestLocalNeedsNoKey(t *testing.T) {
	local := openaiAPI.fake(t, goodTurn) // on 127.0.0.1
	m := &Model{Targets: targetsOf(openaiAPI.target(local.URL, ""))}
	r := stream(t.Context(), m)
	if r.err != nil {
		t.Fatal(r.err)
	}
	checkTurn(t, r.turn, wantTurn(t, openaiAPI))
}

func TestStrategyAlways(t *testing.T) {
	bad := llmtest.NewAnthropic(t, llmtest.Turn{Error: anthropicAPI.httpError(500, "Internal server error")})
	good := anthropicAPI.fake(t, goodTurn)
	a := named(anthropicAPI.target(bad.URL, "sk-test"), "anthropic/one")
	b := named(anthropicAPI.target(good.URL, "sk-test"), "anthropic/two")
	var sl sleeper
	m := &Model{Targets: targetsOf(a, b), Strategy: StrategyAlways, Sleep: sl.Sleep}
	r := stream(t.Context(), m)
	if r.err != nil {
		t.Fatal(r.err)
	}
	checkRetries(t, r.retries(), llm.Retry{Delay: 0, Reason: "server", Model: b.Ref})
	if n := len(bad.Requests()); n != 1 {
		t.Errorf("member 1 asked %d times, want 1", n)
	}
	if len(sl.got()) != 0 {
		t.Errorf("slept %v", sl.got())
	}
	if r.turn.Model != b.Ref {
		t.Errorf("Answered = %q, want %q", r.turn.Model, b.Ref)
	}
}

func TestRetriesUsedUp(t *testing.T) {
	bad := llmtest.NewAnthropic(t, llmtest.Turn{Error: anthropicAPI.httpError(500, "Internal server error")}) // repeats
	good := anthropicAPI.fake(t, goodTurn)
	a := named(anthropicAPI.target(bad.URL, "sk-test"), "anthropic/one")
	b := named(anthropicAPI.target(good.URL, "sk-test"), "anthropic/two")
	var sl sleeper
	m := &Model{Targets: targetsOf(a, b), Sleep: sl.Sleep}
	r := stream(t.Context(), m)
	if r.err != nil {
		t.Fatal(r.err)
	}
	var want []llm.Retry
	for _, d := range DefaultDelays {
		want = append(want, llm.Retry{Delay: d, Reason: "server", Model: a.Ref})
	}
	want = append(want, llm.Retry{Delay: 0, Reason: "server", Model: b.Ref})
	checkRetries(t, r.retries(), want...)
	if got, want := sl.got(), DefaultDelays; len(got) != len(want) {
		t.Errorf("slept %v, want %v", got, want)
	}
	if n := len(bad.Requests()); n != 1+len(DefaultDelays) {
		t.Errorf("member 1 asked %d times, want %d", n, 1+len(DefaultDelays))
	}
	checkTurn(t, r.turn, wantTurn(t, anthropicAPI))
}

func TestRetryAfterTooLong(t *testing.T) {
	e := anthropicAPI.httpError(429, "Daily quota used up.")
	e.RetryAfter = "3600"
	t.Run("falls over", func(t *testing.T) {
		bad := llmtest.NewAnthropic(t, llmtest.Turn{Error: e})
		good := openaiAPI.fake(t, goodTurn)
		a, b := anthropicAPI.target(bad.URL, "sk-test"), openaiAPI.target(good.URL, "sk-test")
		var sl sleeper
		m := &Model{Targets: targetsOf(a, b), Sleep: sl.Sleep}
		r := stream(t.Context(), m)
		if r.err != nil {
			t.Fatal(r.err)
		}
		checkRetries(t, r.retries(), llm.Retry{Delay: 0, Reason: "rate_limit", Model: b.Ref})
		if len(sl.got()) != 0 || len(bad.Requests()) != 1 {
			t.Errorf("slept %v, asked member 1 %d times; want no wait, 1 request", sl.got(), len(bad.Requests()))
		}
		checkTurn(t, r.turn, wantTurn(t, openaiAPI))
	})
	t.Run("alone it fails without waiting", func(t *testing.T) {
		bad := llmtest.NewAnthropic(t, llmtest.Turn{Error: e})
		var sl sleeper
		m := &Model{Targets: targetsOf(anthropicAPI.target(bad.URL, "sk-test")), Sleep: sl.Sleep}
		r := stream(t.Context(), m)
		var ex *ExhaustedError
		if !errors.As(r.err, &ex) || Classify(r.err) != RateLimit {
			t.Fatalf("err = %v (class %s), want an ExhaustedError of class rate_limit", r.err, Classify(r.err))
		}
		if len(sl.got()) != 0 || len(r.retries()) != 0 {
			t.Errorf("slept %v, retries %+v", sl.got(), r.retries())
		}
		var ae *llm.APIError
		if !errors.As(r.err, &ae) || ae.RetryAfter != time.Hour {
			t.Errorf("the error lost the APIError: %v", r.err)
		}
	})
}

func TestContextOverflowEnds(t *testing.T) {
	cases := []struct {
		a   adapter
		err *llmtest.HTTPError
	}{
		{anthropicAPI, &llmtest.HTTPError{Status: 400, Body: llmtest.AnthropicErrorBody("invalid_request_error", "prompt is too long: 215000 tokens > 200000 maximum")}},
		{openaiAPI, &llmtest.HTTPError{Status: 400, Body: `{"error": {"message": "This model's maximum context length is 128000 tokens. However, your messages resulted in 150000 tokens.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}`}},
		{geminiAPI, &llmtest.HTTPError{Status: 400, Body: llmtest.GeminiErrorBody(400, "INVALID_ARGUMENT", "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", "")}},
	}
	for _, c := range cases {
		t.Run(c.a.name, func(t *testing.T) {
			bad := c.a.fake(t, llmtest.Turn{Error: c.err})
			good := openaiAPI.fake(t, goodTurn)
			var sl sleeper
			m := &Model{Targets: targetsOf(c.a.target(bad.URL, "sk-test"), openaiAPI.target(good.URL, "sk-test")), Sleep: sl.Sleep}
			r := stream(t.Context(), m)
			if Classify(r.err) != ContextOverflow {
				t.Fatalf("err = %v (class %q), want context_overflow", r.err, Classify(r.err))
			}
			var ae *llm.APIError
			if !errors.As(r.err, &ae) {
				t.Errorf("the error lost the APIError: %v", r.err)
			}
			if len(r.retries()) != 0 || len(sl.got()) != 0 {
				t.Errorf("retries %+v, slept %v", r.retries(), sl.got())
			}
			if n, g := len(bad.Requests()), len(good.Requests()); n != 1 || g != 0 {
				t.Errorf("requests: member 1 %d, member 2 %d; want 1, 0", n, g)
			}
		})
	}
}

func TestExhausted(t *testing.T) {
	unauthorized := llmtest.NewAnthropic(t, llmtest.Turn{Error: anthropicAPI.httpError(401, "invalid x-api-key")})
	broken := openaiAPI.fake(t, llmtest.Turn{Error: openaiAPI.httpError(500, "boom")})
	nokey := models.Target{Ref: "remote/model", Provider: llm.Provider{Type: "openai", BaseURL: "https://api.example.invalid/v1"}, Model: "model"}
	a := anthropicAPI.target(unauthorized.URL, "sk-wrong")
	c := openaiAPI.target(broken.URL, "sk-test")
	var sl sleeper
	m := &Model{
		Targets: targetsOf(a, nokey, c),
		Policy:  Policy{Delays: []time.Duration{time.Second}},
		Sleep:   sl.Sleep,
	}
	r := stream(t.Context(), m)
	var ex *ExhaustedError
	if !errors.As(r.err, &ex) {
		t.Fatalf("err = %v, want an ExhaustedError", r.err)
	}
	msg := r.err.Error()
	for _, want := range []string{a.Ref + ": auth:", "remote/model: skipped: no API key", c.Ref + ": server after 2 attempts:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	if !errors.Is(r.err, llm.ErrNoKey) || Classify(r.err) != Server {
		t.Errorf("errors.Is(ErrNoKey) = %v, class %s; want true, server", errors.Is(r.err, llm.ErrNoKey), Classify(r.err))
	}
	checkRetries(t, r.retries(),
		llm.Retry{Delay: 0, Reason: "auth", Model: c.Ref},
		llm.Retry{Delay: time.Second, Reason: "server", Model: c.Ref})
	if r.turn.Done {
		t.Errorf("a failed turn is done (answered by %q)", r.turn.Model)
	}
}

// An error no other model would fix ends the turn with that error.
func TestUnknownEnds(t *testing.T) {
	good := anthropicAPI.fake(t, goodTurn)
	boom := errors.New("boom")
	m := &Model{
		Targets: targetsOf(named(anthropicAPI.target("http://unused.invalid", "k"), "x/one"), anthropicAPI.target(good.URL, "sk-test")),
		Open: func(t models.Target) (llm.Model, error) {
			if t.Ref == "x/one" {
				return failing{boom}, nil
			}
			return models.Open(t)
		},
	}
	r := stream(t.Context(), m)
	var re *Error
	if !errors.Is(r.err, boom) || !errors.As(r.err, &re) || re.Class != Unknown || re.Ref != "x/one" {
		t.Fatalf("err = %v, want x/one's unknown error", r.err)
	}
	if len(good.Requests()) != 0 {
		t.Errorf("member 2 was asked")
	}
	// With "always", it falls over.
	m.Strategy = StrategyAlways
	if r := stream(t.Context(), m); r.err != nil || r.turn.Model != anthropicAPI.target("", "").Ref {
		t.Errorf("always: err = %v, answered %q", r.err, r.turn.Model)
	}
}

// failing is a model whose every stream fails with err.
type failing struct{ err error }

func (f failing) Stream(context.Context, *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) { yield(nil, f.err) }
}

func TestCancelWhileWaiting(t *testing.T) {
	bad := llmtest.NewAnthropic(t, llmtest.Turn{Error: anthropicAPI.httpError(500, "Internal server error")})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	m := &Model{
		Targets: targetsOf(anthropicAPI.target(bad.URL, "sk-test")),
		Sleep: func(ctx context.Context, d time.Duration) error {
			cancel()
			return sleep(ctx, d) // the real one, which must return early
		},
	}
	r := stream(ctx, m)
	if Classify(r.err) != Canceled || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("err = %v (class %s), want canceled", r.err, Classify(r.err))
	}
	if len(bad.Requests()) != 1 {
		t.Errorf("%d requests after the cancel, want 1", len(bad.Requests()))
	}
}

// A consumer's break cancels the request in flight; nothing leaks.
func TestBreakCancels(t *testing.T) {
	base := runtime.NumGoroutine()
	for _, a := range adapters {
		t.Run(a.name, func(t *testing.T) {
			srv := newFaulty(t, a, step{turn: leakTurn, fault: stallMid})
			m := &Model{Targets: targetsOf(a.target(srv.URL, "sk-test"))}
			for ev, err := range m.Stream(t.Context(), hello()) {
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := ev.(*llm.TextDelta); ok {
					break
				}
			}
			select {
			case <-srv.ended:
			case <-time.After(30 * time.Second): // a hang guard, not a timing check
				t.Fatal("the request went on after the consumer's break")
			}
			srv.Close()
		})
	}
	noLeaks(t, base)
}

// Two stalls in a row use up the second delay; a stall then falls over
// once the delays are used up.
func TestStallThenFallOver(t *testing.T) {
	base := runtime.NumGoroutine()
	srv := newFaulty(t, anthropicAPI, step{turn: leakTurn, fault: stallMid}, step{turn: leakTurn, fault: stallHeader})
	good := openaiAPI.fake(t, goodTurn)
	a, b := anthropicAPI.target(srv.URL, "sk-test"), openaiAPI.target(good.URL, "sk-test")
	var sl sleeper
	m := &Model{
		Targets: targetsOf(a, b),
		Policy:  Policy{Delays: []time.Duration{time.Second}, Stall: 200 * time.Millisecond},
		Sleep:   sl.Sleep,
	}
	r := stream(t.Context(), m)
	if r.err != nil {
		t.Fatal(r.err)
	}
	checkRetries(t, r.retries(),
		llm.Retry{Delay: time.Second, Reason: "stall", Model: a.Ref},
		llm.Retry{Delay: 0, Reason: "stall", Model: b.Ref})
	checkTurn(t, r.turn, wantTurn(t, openaiAPI))
	srv.Close()
	good.Close()
	noLeaks(t, base)
}

// TestWindowFollowsTheTarget: when the first member fails, a member
// whose context window cannot hold the request is skipped (and named in
// the error if nothing else answers), and the member that answers gets
// a max_tokens that fits its own window, not the first member's.
func TestWindowFollowsTheTarget(t *testing.T) {
	down := llmtest.NewAnthropic(t, llmtest.Turn{Error: anthropicAPI.httpError(401, "invalid x-api-key")})
	small := openaiAPI.fake(t, goodTurn)
	roomy := geminiAPI.fake(t, goodTurn)
	a := anthropicAPI.target(down.URL, "sk-wrong")
	a.Info = models.Info{ContextWindow: 1_000_000, MaxOutput: 64_000}
	b := openaiAPI.target(small.URL, "sk-test")
	b.Info = models.Info{ContextWindow: 32_000, MaxOutput: 16_000}
	c := geminiAPI.target(roomy.URL, "sk-test")
	c.Info = models.Info{ContextWindow: 200_000, MaxOutput: 64_000}
	req := hello()
	req.MaxTokens, req.InputTokens = 64_000, 150_000
	m := &Model{Targets: targetsOf(a, b, c), Sleep: (&sleeper{}).Sleep}
	var col llm.Collector
	for ev, err := range m.Stream(t.Context(), req) {
		if err != nil {
			t.Fatal(err)
		}
		col.Add(ev)
	}
	if got := col.Turn().Model; got != c.Ref {
		t.Fatalf("answered by %s, want %s", got, c.Ref)
	}
	if n := len(small.Requests()); n != 0 {
		t.Errorf("the 32k-window member was asked %d times for a ~150k-token request", n)
	}
	var body struct {
		Config struct {
			MaxOutputTokens int `json:"maxOutputTokens"`
		} `json:"generationConfig"`
	}
	if err := json.Unmarshal(roomy.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if got := body.Config.MaxOutputTokens; got != 50_000 {
		t.Errorf("maxOutputTokens %d, want 50000 (200k window - 150k input)", got)
	}

	// With no member left that fits, the error says why.
	m.Targets = targetsOf(a, b)
	var err error
	for _, e := range m.Stream(t.Context(), req) {
		if e != nil {
			err = e
		}
	}
	if err == nil || !strings.Contains(err.Error(), "do not fit its 32000-token context window") {
		t.Errorf("err = %v, want the small window named", err)
	}
}
