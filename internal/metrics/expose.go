package metrics

import (
	"bytes"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// ContentType is the text exposition format's media type.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Gauges are read at every scrape; a nil one is left out.
type Gauges struct {
	ActiveSessions func() int // sessions running a turn in the daemon
	SSEClients     func() int // open event streams
	QueueDepth     func() int // messages queued behind running turns
}

// Handler serves the metrics, with g's gauges, in the text exposition
// format.
func (m *Metrics) Handler(g Gauges) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b := m.render(g)
		w.Header().Set("Content-Type", ContentType)
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
		if r.Method == http.MethodHead {
			return
		}
		w.Write(b.Bytes())
	})
}

// render writes every family, in a fixed order, each series sorted by
// its labels.
func (m *Metrics) render(g Gauges) *bytes.Buffer {
	// The callbacks take other components' locks: never under m.mu.
	gauges := []struct {
		name, help string
		f          func() int
	}{
		{"den_active_sessions", "Sessions running a turn in this daemon.", g.ActiveSessions},
		{"den_sse_clients", "Open Server-Sent Event streams.", g.SSEClients},
		{"den_queue_depth", "Messages queued behind running turns.", g.QueueDepth},
	}
	values := make([]int, len(gauges))
	for i, gg := range gauges {
		if gg.f != nil {
			values[i] = gg.f()
		}
	}

	var b bytes.Buffer
	m.mu.Lock()
	defer m.mu.Unlock()
	header(&b, "den_up", "gauge", "1 while den serves.")
	sample(&b, "den_up", nil, nil, 1)
	header(&b, "den_turns_total", "counter", "Turns started (a turn resuming after an approval is the same turn).")
	sample(&b, "den_turns_total", nil, nil, m.turns)
	m.toolCalls.write(&b, "den_tool_calls_total", "Tool calls, by tool.")
	m.toolErrors.write(&b, "den_tool_errors_total", "Tool calls whose result is an error, by tool.")
	m.duration.write(&b, "den_tool_duration_seconds", "How long tool calls took.")
	m.requests.write(&b, "den_model_requests_total", "Model requests that reported usage, by model.")
	m.latency.write(&b, "den_model_request_duration_seconds", "How long model requests took, from sending to the stream's end.")
	m.tokens.write(&b, "den_tokens_total", "Tokens of model requests, by model and kind (input, output, cache_read, cache_write).")
	m.cost.write(&b, "den_cost_usd_total", "Estimated cost of model requests in US dollars, by model.")
	m.retries.write(&b, "den_model_retries_total", "Model requests retried, by the model tried next and the failure's class.")
	header(&b, "den_errors_total", "counter", "Error events: turns that failed or ran out of budget.")
	sample(&b, "den_errors_total", nil, nil, m.errors)
	m.approvals.write(&b, "den_approvals_total", "Approvals answered, by decision (allow, deny).")
	for i, gg := range gauges {
		if gg.f == nil {
			continue
		}
		header(&b, gg.name, "gauge", gg.help)
		sample(&b, gg.name, nil, nil, float64(values[i]))
	}
	return &b
}

// write writes a counter family.
func (v *vec) write(b *bytes.Buffer, name, help string) {
	header(b, name, "counter", help)
	all := make([]*series, 0, len(v.series))
	for _, s := range v.series {
		all = append(all, s)
	}
	slices.SortFunc(all, func(x, y *series) int { return slices.Compare(x.labels, y.labels) })
	for _, s := range all {
		sample(b, name, v.names, s.labels, s.value)
	}
}

// write writes the histogram: cumulative buckets, +Inf, sum and count.
func (h *histogram) write(b *bytes.Buffer, name, help string) {
	header(b, name, "histogram", help)
	var cum uint64
	for i, bound := range h.bounds {
		cum += h.counts[i]
		sample(b, name+"_bucket", []string{"le"}, []string{formatFloat(bound)}, float64(cum))
	}
	sample(b, name+"_bucket", []string{"le"}, []string{"+Inf"}, float64(h.count))
	sample(b, name+"_sum", nil, nil, h.sum)
	sample(b, name+"_count", nil, nil, float64(h.count))
}

func header(b *bytes.Buffer, name, typ, help string) {
	b.WriteString("# HELP ")
	b.WriteString(name)
	b.WriteByte(' ')
	b.WriteString(helpEscaper.Replace(help))
	b.WriteString("\n# TYPE ")
	b.WriteString(name)
	b.WriteByte(' ')
	b.WriteString(typ)
	b.WriteByte('\n')
}

// sample writes one line: name{label="value",...} value.
func sample(b *bytes.Buffer, name string, labels, values []string, v float64) {
	b.WriteString(name)
	if len(labels) > 0 {
		b.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(l)
			b.WriteString(`="`)
			b.WriteString(labelEscaper.Replace(values[i]))
			b.WriteByte('"')
		}
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.WriteString(formatFloat(v))
	b.WriteByte('\n')
}

// The text format's escapes: a label value escapes backslash, double
// quote and newline; a HELP text backslash and newline.
var (
	labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
)

// formatFloat writes a value as the format's parsers read it (Go's
// float syntax, with +Inf, -Inf and NaN).
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
