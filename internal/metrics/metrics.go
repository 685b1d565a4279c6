package metrics

import (
	"encoding/json"
	"strings"
	"sync"
	"unicode/utf8"

	"den.dev/den/internal/store"
)

// MaxLabelValues bounds the distinct values of each label of a family;
// further values are counted under "other".
const MaxLabelValues = 200

// MaxLabelLen bounds a label value's length in bytes; a longer one is
// cut (at a character boundary).
const MaxLabelLen = 128

// Other is the label value that stands for those past MaxLabelValues.
const Other = "other"

// Unknown is the label value for a tool or model an event does not
// name (a result whose call came before the daemon started).
const Unknown = "unknown"

const (
	// maxPendingCalls bounds the tool calls remembered until their
	// result.
	maxPendingCalls = 4096
	// maxSessions bounds the sessions whose last status is remembered.
	maxSessions = 4096
)

// durationBuckets are den_tool_duration_seconds' upper bounds, in
// seconds.
var durationBuckets = []float64{.01, .05, .1, .5, 1, 5, 10, 30, 60, 300}

// latencyBuckets are den_model_request_duration_seconds' upper bounds,
// in seconds: a model's answer takes from a fraction of a second to
// minutes of thinking.
var latencyBuckets = []float64{.25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// tokenKinds are den_tokens_total's kinds, in the order of usage's
// fields.
var tokenKinds = [4]string{"input", "output", "cache_read", "cache_write"}

// Metrics counts what den's events tell. The zero value is not usable:
// use New.
type Metrics struct {
	mu sync.Mutex

	turns      float64
	errors     float64
	toolCalls  *vec // tool
	toolErrors *vec // tool
	requests   *vec // model
	tokens     *vec // model, kind
	cost       *vec // model
	retries    *vec // model, reason
	approvals  *vec // decision
	duration   histogram
	latency    histogram // model requests

	calls    *bounded // session+call id → tool name
	statuses *bounded // session → last status
}

// New returns a collector with every counter at zero.
func New() *Metrics {
	return &Metrics{
		toolCalls:  newVec("tool"),
		toolErrors: newVec("tool"),
		requests:   newVec("model"),
		tokens:     newVec("model", "kind"),
		cost:       newVec("model"),
		retries:    newVec("model", "reason"),
		approvals:  newVec("decision"),
		duration:   histogram{bounds: durationBuckets, counts: make([]uint64, len(durationBuckets))},
		latency:    histogram{bounds: latencyBuckets, counts: make([]uint64, len(latencyBuckets))},
		calls:      newBounded(maxPendingCalls),
		statuses:   newBounded(maxSessions),
	}
}

// data is the union of the event fields Observe reads (see
// event.Encode for each type's).
type data struct {
	Status           string  `json:"status"`
	ID               string  `json:"id"`
	Name             string  `json:"name"`
	IsError          bool    `json:"is_error"`
	DurationMS       int64   `json:"duration_ms"`
	LatencyMS        int64   `json:"latency_ms"`
	Model            string  `json:"model"`
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	Reason           string  `json:"reason"`
	Decision         string  `json:"decision"`
	Approved         bool    `json:"approved"`
}

// observed reports whether Observe counts events of type typ; the
// others (text and thinking, the most frequent) are not even decoded.
func observed(typ string) bool {
	switch typ {
	case "status", "tool_call", "tool_result", "usage", "retry", "error", "approval_resolved":
		return true
	}
	return false
}

// Observe counts a stored event. Events it cannot read are ignored: a
// metric is no reason to fail anything.
func (m *Metrics) Observe(e store.Event) {
	if !observed(e.Type) {
		return
	}
	var d data
	if err := json.Unmarshal(e.Data, &d); err != nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch e.Type {
	case "status":
		// A turn starts with running; a turn that waited for a person
		// (an approval) says running again when it goes on.
		prev, _ := m.statuses.get(e.Session)
		if d.Status == "running" && prev != "waiting" {
			m.turns++
		}
		m.statuses.put(e.Session, d.Status)
	case "tool_call":
		name := orUnknown(d.Name)
		m.toolCalls.add(1, name)
		m.calls.put(e.Session+"\x00"+d.ID, name)
	case "tool_result":
		key := e.Session + "\x00" + d.ID
		name, ok := m.calls.get(key)
		if !ok {
			name = Unknown
		}
		m.calls.remove(key)
		if d.IsError {
			m.toolErrors.add(1, name)
		}
		m.duration.observe(float64(d.DurationMS) / 1000)
	case "usage":
		model := orUnknown(d.Model)
		m.requests.add(1, model)
		for i, n := range [4]int64{d.InputTokens, d.OutputTokens, d.CacheReadTokens, d.CacheWriteTokens} {
			m.tokens.add(float64(n), model, tokenKinds[i])
		}
		m.cost.add(d.CostUSD, model)
		m.latency.observe(float64(d.LatencyMS) / 1000)
	case "retry":
		m.retries.add(1, orUnknown(d.Model), reasonClass(d.Reason))
	case "error":
		m.errors++
	case "approval_resolved":
		decision := d.Decision
		if decision == "" {
			decision = "deny"
			if d.Approved {
				decision = "allow"
			}
		}
		m.approvals.add(1, decision)
	}
}

// reasonClass is the class a retry's reason starts with ("rate_limit:
// 429 Too Many Requests" is rate_limit).
func reasonClass(reason string) string {
	class, _, ok := strings.Cut(reason, ":")
	class = strings.TrimSpace(class)
	if !ok || class == "" {
		return Unknown
	}
	return class
}

// truncate cuts s to at most n bytes, at a character boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func orUnknown(s string) string {
	if s == "" {
		return Unknown
	}
	return s
}

// vec is a family's values by their labels.
type vec struct {
	names  []string
	seen   []map[string]bool // per label: the values taken (at most MaxLabelValues)
	series map[string]*series
}

type series struct {
	labels []string
	value  float64
}

func newVec(names ...string) *vec {
	v := &vec{names: names, seen: make([]map[string]bool, len(names)), series: map[string]*series{}}
	for i := range v.seen {
		v.seen[i] = map[string]bool{}
	}
	return v
}

// add adds d to the series of values (one per label), a value past
// a label's cap standing as Other.
func (v *vec) add(d float64, values ...string) {
	vals := make([]string, len(values))
	for i, s := range values {
		s = truncate(s, MaxLabelLen)
		switch {
		case v.seen[i][s]:
		case len(v.seen[i]) < MaxLabelValues:
			v.seen[i][s] = true
		default:
			s = Other
		}
		vals[i] = s
	}
	key := strings.Join(vals, "\xff")
	s := v.series[key]
	if s == nil {
		s = &series{labels: vals}
		v.series[key] = s
	}
	s.value += d
}

// histogram counts observations by the buckets' upper bounds (not
// cumulative: the exposition sums them).
type histogram struct {
	bounds []float64
	counts []uint64 // counts[i]: observations in (bounds[i-1], bounds[i]]
	count  uint64
	sum    float64
}

func (h *histogram) observe(x float64) {
	for i, b := range h.bounds {
		if x <= b {
			h.counts[i]++
			break
		}
	}
	h.count++
	h.sum += x
}

// bounded is a map of at most n entries: putting one more forgets the
// oldest put.
type bounded struct {
	m    map[string]slot
	ring []ringKey // keys in the order put; ring[next] is the oldest
	next int
}

type ringKey struct {
	key  string
	used bool
}

type slot struct {
	value string
	at    int // the ring index that holds the key
}

func newBounded(n int) *bounded {
	return &bounded{m: map[string]slot{}, ring: make([]ringKey, n)}
}

func (b *bounded) get(k string) (string, bool) {
	s, ok := b.m[k]
	return s.value, ok
}

func (b *bounded) put(k, v string) {
	if s, ok := b.m[k]; ok {
		b.m[k] = slot{value: v, at: s.at}
		return
	}
	if old := b.ring[b.next]; old.used {
		if s, ok := b.m[old.key]; ok && s.at == b.next {
			delete(b.m, old.key)
		}
	}
	b.ring[b.next] = ringKey{k, true}
	b.m[k] = slot{value: v, at: b.next}
	b.next = (b.next + 1) % len(b.ring)
}

func (b *bounded) remove(k string) { delete(b.m, k) }
