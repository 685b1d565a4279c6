package metrics_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/event"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/metrics"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/store"
)

// ev is e as the store holds it, encoded as den encodes its events.
func ev(t testing.TB, session string, e any) store.Event {
	t.Helper()
	typ, data, ok := event.Encode(e)
	if !ok {
		t.Fatalf("%T is not an event", e)
	}
	return store.Event{Session: session, Type: typ, Time: time.Now(), Data: data}
}

// scrape serves m with g and parses what it answers.
func scrape(t testing.TB, m *metrics.Metrics, g metrics.Gauges) *exposition {
	t.Helper()
	srv := httptest.NewServer(m.Handler(g))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	x, err := parse(string(b))
	if err != nil {
		t.Fatalf("%v in:\n%s", err, b)
	}
	return x
}

// samples are every family's samples in one map.
func (x *exposition) samples() map[string]float64 {
	all := map[string]float64{}
	for _, f := range x.families {
		for k, v := range f.samples {
			all[k] = v
		}
	}
	return all
}

const sonnet = "anthropic/claude-sonnet-5-5"

// weird is a tool name with every character the format escapes.
const weird = "we\"ird\\tool\nx"

// TestScript: a scripted session's events give exactly the values they
// should, in the families they should, each with its HELP and TYPE.
func TestScript(t *testing.T) {
	m := metrics.New()
	exit := 1
	script := []store.Event{
		ev(t, "s1", &event.Status{Status: event.Running}),
		ev(t, "s1", &agent.TextEvent{Text: "Looking."}),
		ev(t, "s1", &agent.ToolCallEvent{ID: "c1", Name: "shell_execute", Input: json.RawMessage(`{"command":"ls"}`)}),
		ev(t, "s1", &agent.ToolResultEvent{ID: "c1", Output: "a b", Duration: 30 * time.Millisecond}),
		ev(t, "s1", &agent.ToolCallEvent{ID: "c2", Name: "shell_execute", Input: json.RawMessage(`{"command":"rm x"}`)}),
		ev(t, "s1", &event.Status{Status: event.Waiting, Detail: "an approval is needed"}),
		ev(t, "s1", &permission.ApprovalResolved{ID: "a1", Approved: true, DecidedBy: permission.ByUser}),
		// The same turn going on, not a new one.
		ev(t, "s1", &event.Status{Status: event.Running}),
		ev(t, "s1", &agent.ToolResultEvent{ID: "c2", Output: "no", IsError: true, Duration: 2 * time.Second, ExitCode: &exit}),
		ev(t, "s1", &agent.ToolCallEvent{ID: "c3", Name: weird}),
		ev(t, "s1", &agent.ToolResultEvent{ID: "c3", IsError: true, Duration: 400 * time.Second}),
		// A result whose call this collector never saw (the id is
		// another session's).
		ev(t, "s2", &agent.ToolResultEvent{ID: "c1", IsError: true}),
		ev(t, "s1", &agent.UsageEvent{Usage: llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 1000, CacheWriteTokens: 50}, CostUSD: 0.25, Model: sonnet, Latency: 800 * time.Millisecond}),
		ev(t, "s1", &agent.UsageEvent{Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}, CostUSD: 0.125, Model: sonnet, Latency: 3 * time.Second}),
		ev(t, "s2", &agent.UsageEvent{Usage: llm.Usage{InputTokens: 7, OutputTokens: 3}, CostUSD: 0.5, Model: "openai/gpt-9"}),
		ev(t, "s2", &agent.UsageEvent{Usage: llm.Usage{OutputTokens: 1}}),
		ev(t, "s1", &agent.RetryEvent{Attempt: 1, Delay: 3 * time.Second, Reason: "rate_limit: 429 Too Many Requests: slow down", Model: sonnet}),
		ev(t, "s1", &agent.RetryEvent{Attempt: 2, Delay: 5 * time.Second, Reason: "rate_limit: again", Model: sonnet}),
		ev(t, "s1", &agent.RetryEvent{Attempt: 3, Reason: "overloaded: 529", Model: "openai/gpt-9"}),
		ev(t, "s1", &agent.RetryEvent{Attempt: 4, Reason: "stall: no stream event within 2m0s", Model: "openai/gpt-9"}),
		ev(t, "s1", &agent.RetryEvent{Attempt: 5, Reason: "no class here", Model: "openai/gpt-9"}),
		ev(t, "s1", &agent.ErrorEvent{Message: "boom"}),
		ev(t, "s1", &permission.ApprovalResolved{ID: "a2", Approved: false, DecidedBy: permission.ByPolicy}),
		ev(t, "s1", &agent.DoneEvent{Stop: "end_turn"}),
		ev(t, "s1", &event.Status{Status: event.Error, Detail: "boom"}),
		ev(t, "s2", &event.Status{Status: event.Running}),
		ev(t, "s2", &agent.ErrorEvent{Message: "bust"}),
		ev(t, "s2", &event.Status{Status: event.Idle}),
		ev(t, "s2", &event.Status{Status: event.Running}),
		// Not JSON: ignored.
		{Session: "s2", Type: "usage", Data: json.RawMessage(`{"input_tokens":`)},
	}
	for _, e := range script {
		m.Observe(e)
	}
	x := scrape(t, m, metrics.Gauges{
		ActiveSessions: func() int { return 2 },
		SSEClients:     func() int { return 5 },
		QueueDepth:     func() int { return 0 },
	})

	types := map[string]string{}
	for name, f := range x.families {
		types[name] = f.typ
	}
	wantTypes := map[string]string{
		"den_up": "gauge", "den_turns_total": "counter", "den_tool_calls_total": "counter",
		"den_tool_errors_total": "counter", "den_tool_duration_seconds": "histogram",
		"den_model_requests_total": "counter", "den_model_request_duration_seconds": "histogram", "den_tokens_total": "counter", "den_cost_usd_total": "counter",
		"den_model_retries_total": "counter", "den_errors_total": "counter", "den_approvals_total": "counter",
		"den_active_sessions": "gauge", "den_sse_clients": "gauge", "den_queue_depth": "gauge",
	}
	if d := cmp.Diff(wantTypes, types); d != "" {
		t.Errorf("families (-want +got):\n%s", d)
	}

	tok := func(model, kind string) string { return key("den_tokens_total", "model", model, "kind", kind) }
	le := func(b string) string { return key("den_tool_duration_seconds_bucket", "le", b) }
	lat := func(b string) string { return key("den_model_request_duration_seconds_bucket", "le", b) }
	want := map[string]float64{
		"den_up":          1,
		"den_turns_total": 3,
		key("den_tool_calls_total", "tool", "shell_execute"):  2,
		key("den_tool_calls_total", "tool", weird):            1,
		key("den_tool_errors_total", "tool", "shell_execute"): 1,
		key("den_tool_errors_total", "tool", weird):           1,
		key("den_tool_errors_total", "tool", "unknown"):       1,

		le("0.01"):                        1,
		le("0.05"):                        2,
		le("0.1"):                         2,
		le("0.5"):                         2,
		le("1"):                           2,
		le("5"):                           3,
		le("10"):                          3,
		le("30"):                          3,
		le("60"):                          3,
		le("300"):                         3,
		le("+Inf"):                        4,
		"den_tool_duration_seconds_sum":   0.03 + 2 + 400,
		"den_tool_duration_seconds_count": 4,

		lat("0.25"): 2, lat("0.5"): 2, lat("1"): 3, lat("2.5"): 3, lat("5"): 4, lat("10"): 4,
		lat("30"): 4, lat("60"): 4, lat("120"): 4, lat("300"): 4, lat("+Inf"): 4,
		"den_model_request_duration_seconds_sum":   3.8,
		"den_model_request_duration_seconds_count": 4,

		key("den_model_requests_total", "model", sonnet):         2,
		key("den_model_requests_total", "model", "openai/gpt-9"): 1,
		key("den_model_requests_total", "model", "unknown"):      1,

		tok(sonnet, "input"):               110,
		tok(sonnet, "output"):              25,
		tok(sonnet, "cache_read"):          1000,
		tok(sonnet, "cache_write"):         50,
		tok("openai/gpt-9", "input"):       7,
		tok("openai/gpt-9", "output"):      3,
		tok("openai/gpt-9", "cache_read"):  0,
		tok("openai/gpt-9", "cache_write"): 0,
		tok("unknown", "input"):            0,
		tok("unknown", "output"):           1,
		tok("unknown", "cache_read"):       0,
		tok("unknown", "cache_write"):      0,

		key("den_cost_usd_total", "model", sonnet):         0.375,
		key("den_cost_usd_total", "model", "openai/gpt-9"): 0.5,
		key("den_cost_usd_total", "model", "unknown"):      0,

		key("den_model_retries_total", "model", sonnet, "reason", "rate_limit"):         2,
		key("den_model_retries_total", "model", "openai/gpt-9", "reason", "overloaded"): 1,
		key("den_model_retries_total", "model", "openai/gpt-9", "reason", "stall"):      1,
		key("den_model_retries_total", "model", "openai/gpt-9", "reason", "unknown"):    1,

		"den_errors_total": 2,
		key("den_approvals_total", "decision", "allow"): 1,
		key("den_approvals_total", "decision", "deny"):  1,
		"den_active_sessions":                           2,
		"den_sse_clients":                               5,
		"den_queue_depth":                               0,
	}
	if d := cmp.Diff(want, x.samples(), cmpopts.EquateApprox(0, 1e-9)); d != "" {
		t.Errorf("samples (-want +got):\n%s", d)
	}
}

// TestEscaping: a label value with a quote, a backslash and a newline
// is written escaped, exactly as the format says.
func TestEscaping(t *testing.T) {
	m := metrics.New()
	m.Observe(ev(t, "s1", &agent.ToolCallEvent{ID: "c1", Name: weird}))
	rec := httptest.NewRecorder()
	m.Handler(metrics.Gauges{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	line := `den_tool_calls_total{tool="we\"ird\\tool\nx"} 1` + "\n"
	if !strings.Contains(rec.Body.String(), line) {
		t.Errorf("no line %q in:\n%s", line, rec.Body.String())
	}
}

// TestCardinality: a label takes at most MaxLabelValues values; the
// rest count as other; a long value is cut.
func TestCardinality(t *testing.T) {
	m := metrics.New()
	const extra = 50
	for i := range metrics.MaxLabelValues + extra {
		m.Observe(ev(t, "s1", &agent.ToolCallEvent{ID: fmt.Sprint("c", i), Name: fmt.Sprint("tool_", i)}))
		m.Observe(ev(t, "s1", &agent.UsageEvent{Usage: llm.Usage{InputTokens: 2}, Model: fmt.Sprint("m", i)}))
	}
	// Values already seen keep their series past the cap.
	m.Observe(ev(t, "s1", &agent.ToolCallEvent{ID: "again", Name: "tool_0"}))
	x := scrape(t, m, metrics.Gauges{})
	calls := x.families["den_tool_calls_total"].samples
	if len(calls) != metrics.MaxLabelValues+1 {
		t.Errorf("%d tool series, want %d and other", len(calls), metrics.MaxLabelValues)
	}
	if v := calls[key("den_tool_calls_total", "tool", "other")]; v != extra {
		t.Errorf("other: %v calls, want %d", v, extra)
	}
	if v := calls[key("den_tool_calls_total", "tool", "tool_0")]; v != 2 {
		t.Errorf("tool_0: %v calls, want 2", v)
	}
	if _, ok := calls[key("den_tool_calls_total", "tool", fmt.Sprint("tool_", metrics.MaxLabelValues))]; ok {
		t.Errorf("a tool past the cap has its own series")
	}
	tokens := x.families["den_tokens_total"].samples
	if len(tokens) != (metrics.MaxLabelValues+1)*4 {
		t.Errorf("%d token series, want %d models and other, 4 kinds each", len(tokens), metrics.MaxLabelValues)
	}
	if v := tokens[key("den_tokens_total", "model", "other", "kind", "input")]; v != 2*extra {
		t.Errorf("other's input tokens: %v, want %d", v, 2*extra)
	}

	long := strings.Repeat("é", 100) // 200 bytes
	m2 := metrics.New()
	m2.Observe(ev(t, "s1", &agent.ToolCallEvent{ID: "long", Name: long}))
	x = scrape(t, m2, metrics.Gauges{})
	cut := strings.Repeat("é", metrics.MaxLabelLen/2)
	if v := x.families["den_tool_calls_total"].samples[key("den_tool_calls_total", "tool", cut)]; v != 1 {
		t.Errorf("a %d-byte tool name is not cut to %d bytes: %v", len(long), metrics.MaxLabelLen, x.families["den_tool_calls_total"].samples)
	}
}

// TestPendingCallsBounded: the calls waiting for their result are
// bounded: a result whose call was forgotten counts as unknown, a
// recent one by its tool.
func TestPendingCallsBounded(t *testing.T) {
	m := metrics.New()
	const n = 5000
	for i := range n {
		m.Observe(ev(t, "s1", &agent.ToolCallEvent{ID: fmt.Sprint("c", i), Name: "shell_execute"}))
	}
	m.Observe(ev(t, "s1", &agent.ToolResultEvent{ID: "c0", IsError: true}))
	m.Observe(ev(t, "s1", &agent.ToolResultEvent{ID: fmt.Sprint("c", n-1), IsError: true}))
	got := scrape(t, m, metrics.Gauges{}).families["den_tool_errors_total"].samples
	want := map[string]float64{
		key("den_tool_errors_total", "tool", "unknown"):       1,
		key("den_tool_errors_total", "tool", "shell_execute"): 1,
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("tool errors (-want +got):\n%s", d)
	}
}

// TestNilGauges: a gauge with no callback is left out; den_up is there.
func TestNilGauges(t *testing.T) {
	x := scrape(t, metrics.New(), metrics.Gauges{SSEClients: func() int { return 3 }})
	for _, name := range []string{"den_active_sessions", "den_queue_depth"} {
		if _, ok := x.families[name]; ok {
			t.Errorf("%s present without a callback", name)
		}
	}
	if v := x.families["den_sse_clients"].samples["den_sse_clients"]; v != 3 {
		t.Errorf("den_sse_clients %v", v)
	}
	if v := x.families["den_up"].samples["den_up"]; v != 1 {
		t.Errorf("den_up %v", v)
	}
}

// TestConcurrent: Observe from many goroutines while scrapes run loses
// nothing (and, under -race, races nothing).
func TestConcurrent(t *testing.T) {
	m := metrics.New()
	const workers, each = 8, 500
	evs := make([][]store.Event, workers)
	for w := range workers {
		s := fmt.Sprint("s", w)
		for i := range each {
			id := fmt.Sprint("c", i)
			evs[w] = append(evs[w],
				ev(t, s, &event.Status{Status: event.Running}),
				ev(t, s, &agent.ToolCallEvent{ID: id, Name: "shell_execute"}),
				ev(t, s, &agent.ToolResultEvent{ID: id, IsError: true, Duration: time.Second}),
				ev(t, s, &agent.UsageEvent{Usage: llm.Usage{InputTokens: 1}, CostUSD: 0.5, Model: sonnet}),
				ev(t, s, &event.Status{Status: event.Idle}))
		}
	}
	h := m.Handler(metrics.Gauges{ActiveSessions: func() int { return 1 }})
	stop := make(chan struct{})
	var scrapes sync.WaitGroup
	scrapes.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			if _, err := parse(rec.Body.String()); err != nil {
				t.Errorf("a scrape during the writes: %v", err)
				return
			}
		}
	})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for _, e := range evs[w] {
				m.Observe(e)
			}
		})
	}
	wg.Wait()
	close(stop)
	scrapes.Wait()
	got := scrape(t, m, metrics.Gauges{}).samples()
	n := float64(workers * each)
	for k, v := range map[string]float64{
		"den_turns_total": n,
		key("den_tool_calls_total", "tool", "shell_execute"):      n,
		key("den_tool_errors_total", "tool", "shell_execute"):     n,
		"den_tool_duration_seconds_count":                         n,
		"den_tool_duration_seconds_sum":                           n,
		key("den_tokens_total", "model", sonnet, "kind", "input"): n,
		key("den_cost_usd_total", "model", sonnet):                n / 2,
	} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
}
