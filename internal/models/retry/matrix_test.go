package retry

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/llm/llmtest"
)

// wantRetry is one expected Retry event.
type wantRetry struct {
	class Class
	delay time.Duration
}

// faultCase is one row of the fault matrix: the faults, in order,
// before the good turn.
type faultCase struct {
	name  string
	steps func(a adapter) []step
	want  []wantRetry
	stall bool // the case needs the real stall watchdog
	leaks bool // the failed attempt streamed text before failing
}

var sec = time.Second

var faultCases = []faultCase{
	{
		name:  "stall mid-stream",
		steps: func(a adapter) []step { return []step{{turn: leakTurn, fault: stallMid}} },
		want:  []wantRetry{{Stall, 3 * sec}},
		stall: true, leaks: true,
	},
	{
		name:  "stall before headers",
		steps: func(a adapter) []step { return []step{{turn: leakTurn, fault: stallHeader}} },
		want:  []wantRetry{{Stall, 3 * sec}},
		stall: true,
	},
	{
		name: "429 Retry-After: 7",
		steps: func(a adapter) []step {
			e := a.httpError(429, "Rate limited, slow down.")
			e.RetryAfter = "7"
			return []step{{turn: llmtest.Turn{Error: e}}}
		},
		want: []wantRetry{{RateLimit, 7 * sec}},
	},
	{
		name: "429 retry-after-ms: 4500",
		steps: func(a adapter) []step {
			if !a.retryAfterMs { // Gemini says it in a RetryInfo detail
				return []step{{turn: llmtest.Turn{Error: &llmtest.HTTPError{
					Status: 429,
					Body:   llmtest.GeminiErrorBody(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", "4.5s"),
				}}}}
			}
			return []step{{
				turn:   llmtest.Turn{Error: a.httpError(429, "Rate limited, slow down.")},
				header: map[string]string{"Retry-After-Ms": "4500"},
			}}
		},
		want: []wantRetry{{RateLimit, 4500 * time.Millisecond}},
	},
	{
		name: "429 Retry-After: 1 (policy delay wins)",
		steps: func(a adapter) []step {
			e := a.httpError(429, "Rate limited, slow down.")
			e.RetryAfter = "1"
			return []step{{turn: llmtest.Turn{Error: e}}}
		},
		want: []wantRetry{{RateLimit, 3 * sec}},
	},
	{
		name: "500",
		steps: func(a adapter) []step {
			return []step{{turn: llmtest.Turn{Error: a.httpError(500, "Internal server error")}}}
		},
		want: []wantRetry{{Server, 3 * sec}},
	},
	{
		name: "529 overloaded",
		steps: func(a adapter) []step {
			status := 529
			if a.name == "gemini" { // Google says 503 UNAVAILABLE
				status = 503
			}
			return []step{{turn: llmtest.Turn{Error: a.httpError(status, "The model is overloaded. Please try again later.")}}}
		},
		want: []wantRetry{{Overloaded, 3 * sec}},
	},
	{
		name:  "disconnect mid-stream",
		steps: func(a adapter) []step { return []step{{turn: leakTurn, fault: cutMid}} },
		want:  []wantRetry{{Network, 3 * sec}},
		leaks: true,
	},
	{
		name: "empty completion",
		steps: func(a adapter) []step {
			if a.name == "openai" || a.name == "openai-responses" {
				return []step{{turn: llmtest.Turn{Stop: llmtest.StopNone}}}
			}
			return []step{{turn: llmtest.Turn{}}} // a bare end_turn / STOP
		},
		want: []wantRetry{{Empty, 3 * sec}},
	},
	{
		name: "500, cut, 529 in a row",
		steps: func(a adapter) []step {
			return []step{
				{turn: llmtest.Turn{Error: a.httpError(500, "Internal server error")}},
				{turn: leakTurn, fault: cutMid},
				{turn: llmtest.Turn{Error: &llmtest.HTTPError{Status: 529, Body: a.errBody(529, "overloaded_error", "Overloaded")}}},
			}
		},
		want: []wantRetry{{Server, 3 * sec}, {Network, 5 * sec}, {Overloaded, 10 * sec}},
	},
}

// TestFaultMatrix injects each fault into each adapter's real stream,
// followed by the good turn, and checks that the turn completes with
// the right Retry events and exactly the good turn collected.
func TestFaultMatrix(t *testing.T) {
	type cell struct {
		ok     bool
		detail string
	}
	results := map[string]map[string]cell{}
	injected, survived := 0, 0
	for _, a := range adapters {
		results[a.name] = map[string]cell{}
		want := wantTurn(t, a)
		for _, fc := range faultCases {
			var detail string
			ok := t.Run(a.name+"/"+fc.name, func(t *testing.T) {
				base := runtime.NumGoroutine()
				srv := newFaulty(t, a, append(fc.steps(a), step{turn: goodTurn})...)
				target := a.target(srv.URL, "sk-test")
				var sl sleeper
				m := &Model{Targets: targetsOf(target), Sleep: sl.Sleep}
				if fc.stall {
					m.Policy.Stall = 200 * time.Millisecond
				}
				r := stream(t.Context(), m)
				if r.err != nil {
					t.Fatalf("the turn failed: %v", r.err)
				}
				retries := r.retries()
				var parts []string
				for _, rt := range retries {
					parts = append(parts, fmt.Sprintf("#%d %s %v", rt.Attempt, strings.SplitN(rt.Reason, ":", 2)[0], rt.Delay))
				}
				detail = strings.Join(parts, ", ")
				if len(retries) != len(fc.want) {
					t.Fatalf("retries = %+v, want %d", retries, len(fc.want))
				}
				var wantDelays []time.Duration
				for i, w := range fc.want {
					rt := retries[i]
					if rt.Attempt != i+1 || rt.Delay != w.delay || rt.Model != target.Ref || !strings.HasPrefix(rt.Reason, string(w.class)+": ") {
						t.Errorf("retry %d = %+v, want attempt %d, delay %v, model %s, reason %s: ...", i, rt, i+1, w.delay, target.Ref, w.class)
					}
					wantDelays = append(wantDelays, w.delay)
				}
				if got := sl.got(); fmt.Sprint(got) != fmt.Sprint(wantDelays) {
					t.Errorf("slept %v, want %v", got, wantDelays)
				}
				if got := r.answered(); len(got) != len(fc.want)+1 {
					t.Errorf("Answered events %v, want %d", got, len(fc.want)+1)
				}
				if fc.leaks && !r.leakedBeforeRetry() {
					t.Errorf("the failed attempt streamed no text: the case does not test dropping it")
				}
				checkTurn(t, r.turn, want)
				if r.turn.Model != target.Ref {
					t.Errorf("Answered = %q, want %q", r.turn.Model, target.Ref)
				}
				if n := len(srv.fake.Requests()); n != len(fc.want)+1 {
					t.Errorf("%d requests, want %d", n, len(fc.want)+1)
				}
				srv.Close()
				noLeaks(t, base)
			})
			injected += len(fc.want)
			if ok {
				survived += len(fc.want)
			}
			results[a.name][fc.name] = cell{ok, detail}
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "fault matrix (retry events: #attempt class delay)\n")
	fmt.Fprintf(&b, "%-40s", "fault")
	for _, a := range adapters {
		fmt.Fprintf(&b, " | %-34s", a.name)
	}
	b.WriteString("\n")
	for _, fc := range faultCases {
		fmt.Fprintf(&b, "%-40s", fc.name)
		for _, a := range adapters {
			c := results[a.name][fc.name]
			mark := "ok"
			if !c.ok {
				mark = "FAIL"
			}
			fmt.Fprintf(&b, " | %-34s", mark+" "+c.detail)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "faults survived: %d/%d injected", survived, injected)
	t.Log(b.String())
}
