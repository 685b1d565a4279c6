package metrics_test

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// exposition is a parsed text exposition (format 0.0.4).
type exposition struct {
	families map[string]*family
	order    []string // family names as they came
}

type family struct {
	help, typ string
	samples   map[string]float64 // by series key: name{l="v",...}, labels sorted
}

var (
	metricName = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
)

// parse reads the text format strictly: every line a HELP, a TYPE or a
// sample (no other comments, no blank lines, no timestamps, which den
// never writes); HELP and TYPE at most once per family and before its
// samples; a family's samples together; no series twice; counters named
// _total; histograms with cumulative buckets in order, +Inf last and
// equal to _count, and _sum.
func parse(text string) (*exposition, error) {
	x := &exposition{families: map[string]*family{}}
	if !strings.HasSuffix(text, "\n") {
		return nil, fmt.Errorf("the exposition does not end with a newline")
	}
	var current string // the family whose lines come now
	done := map[string]bool{}
	get := func(name string) (*family, error) {
		if name != current {
			if done[name] {
				return nil, fmt.Errorf("family %s comes again after another family", name)
			}
			if current != "" {
				done[current] = true
			}
			current = name
		}
		f := x.families[name]
		if f == nil {
			f = &family{samples: map[string]float64{}}
			x.families[name] = f
			x.order = append(x.order, name)
		}
		return f, nil
	}
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		n++
		switch {
		case strings.HasPrefix(line, "# HELP "), strings.HasPrefix(line, "# TYPE "):
			kind := line[2:6]
			name, rest, ok := strings.Cut(line[7:], " ")
			if !ok || !metricName.MatchString(name) {
				return nil, fmt.Errorf("line %d: bad %s line %q", n, kind, line)
			}
			f, err := get(name)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			if len(f.samples) > 0 {
				return nil, fmt.Errorf("line %d: %s of %s after its samples", n, kind, name)
			}
			if kind == "HELP" {
				if f.help != "" {
					return nil, fmt.Errorf("line %d: a second HELP for %s", n, name)
				}
				h, err := unescape(rest, false)
				if err != nil {
					return nil, fmt.Errorf("line %d: %w", n, err)
				}
				f.help = h
				continue
			}
			if f.typ != "" {
				return nil, fmt.Errorf("line %d: a second TYPE for %s", n, name)
			}
			switch rest {
			case "counter", "gauge", "histogram", "summary", "untyped":
			default:
				return nil, fmt.Errorf("line %d: unknown type %q", n, rest)
			}
			f.typ = rest
		case strings.HasPrefix(line, "#"), line == "":
			return nil, fmt.Errorf("line %d: unexpected line %q", n, line)
		default:
			name, key, value, err := parseSample(line)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			fam := name
			if f := x.families[current]; f != nil && f.typ == "histogram" {
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if strings.HasSuffix(name, suffix) && strings.TrimSuffix(name, suffix) == current {
						fam = current
					}
				}
			}
			f, err := get(fam)
			if err != nil {
				return nil, fmt.Errorf("line %d: %w", n, err)
			}
			if f.typ == "" {
				return nil, fmt.Errorf("line %d: a sample of %s before its TYPE", n, fam)
			}
			if f.typ == "counter" && !strings.HasSuffix(name, "_total") {
				return nil, fmt.Errorf("line %d: counter %s not named _total", n, name)
			}
			if _, dup := f.samples[key]; dup {
				return nil, fmt.Errorf("line %d: series %s twice", n, key)
			}
			f.samples[key] = value
		}
	}
	for name, f := range x.families {
		if f.help == "" || f.typ == "" {
			return nil, fmt.Errorf("family %s has no HELP or no TYPE", name)
		}
		if f.typ == "histogram" {
			if err := checkHistogram(name, f); err != nil {
				return nil, err
			}
		}
	}
	return x, nil
}

// parseSample reads name{labels} value, returning the series' key with
// its labels sorted.
func parseSample(line string) (name, key string, value float64, err error) {
	i := strings.IndexAny(line, "{ ")
	if i < 0 {
		return "", "", 0, fmt.Errorf("bad sample %q", line)
	}
	name, rest := line[:i], line[i:]
	if !metricName.MatchString(name) {
		return "", "", 0, fmt.Errorf("bad metric name %q", name)
	}
	var labels []string
	if strings.HasPrefix(rest, "{") {
		rest = rest[1:]
		seen := map[string]bool{}
		for !strings.HasPrefix(rest, "}") {
			eq := strings.Index(rest, `="`)
			if eq < 0 {
				return "", "", 0, fmt.Errorf("bad labels in %q", line)
			}
			l := rest[:eq]
			if !labelName.MatchString(l) || seen[l] {
				return "", "", 0, fmt.Errorf("bad or repeated label %q in %q", l, line)
			}
			seen[l] = true
			rest = rest[eq+2:]
			// The value runs to the first quote not escaped.
			end := -1
			for j := 0; j < len(rest); j++ {
				if rest[j] == '\\' {
					j++
					continue
				}
				if rest[j] == '"' {
					end = j
					break
				}
			}
			if end < 0 {
				return "", "", 0, fmt.Errorf("unterminated label value in %q", line)
			}
			v, err := unescape(rest[:end], true)
			if err != nil {
				return "", "", 0, err
			}
			labels = append(labels, l+"="+strconv.Quote(v))
			rest = rest[end+1:]
			if strings.HasPrefix(rest, ",") {
				rest = rest[1:]
				if strings.HasPrefix(rest, "}") {
					return "", "", 0, fmt.Errorf("a trailing comma in %q", line)
				}
			} else if !strings.HasPrefix(rest, "}") {
				return "", "", 0, fmt.Errorf("bad labels in %q", line)
			}
		}
		rest = rest[1:]
	}
	if !strings.HasPrefix(rest, " ") || strings.Count(rest, " ") != 1 {
		return "", "", 0, fmt.Errorf("want one space and a value (no timestamp) in %q", line)
	}
	value, err = parseFloat(rest[1:])
	if err != nil {
		return "", "", 0, fmt.Errorf("bad value in %q: %w", line, err)
	}
	slices.Sort(labels)
	return name, key0(name, labels), value, nil
}

func key0(name string, labels []string) string {
	if len(labels) == 0 {
		return name
	}
	return name + "{" + strings.Join(labels, ",") + "}"
}

// key is a series' key as parse makes it, from name and label=value
// pairs.
func key(name string, kv ...string) string {
	var labels []string
	for i := 0; i < len(kv); i += 2 {
		labels = append(labels, kv[i]+"="+strconv.Quote(kv[i+1]))
	}
	slices.Sort(labels)
	return key0(name, labels)
}

func parseFloat(s string) (float64, error) {
	switch s {
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	if strings.ContainsAny(s, "_xXpP") || strings.EqualFold(s, "inf") || strings.EqualFold(s, "infinity") {
		return 0, fmt.Errorf("%q is not in the format's float syntax", s)
	}
	return strconv.ParseFloat(s, 64)
}

// unescape undoes the format's escapes: \\ and \n, and \" in a label
// value; any other backslash, and in a label value a raw newline or
// quote, is an error.
func unescape(s string, label bool) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\n' || (label && c == '"'):
			return "", fmt.Errorf("unescaped %q in %q", c, s)
		case c != '\\':
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(s) {
			return "", fmt.Errorf("a trailing backslash in %q", s)
		}
		switch s[i] {
		case '\\':
			b.WriteByte('\\')
		case 'n':
			b.WriteByte('\n')
		case '"':
			if !label {
				return "", fmt.Errorf(`\" in a HELP text %q`, s)
			}
			b.WriteByte('"')
		default:
			return "", fmt.Errorf("unknown escape \\%c in %q", s[i], s)
		}
	}
	return b.String(), nil
}

// checkHistogram checks an unlabeled histogram: buckets in increasing
// le with counts that never fall, +Inf equal to _count, and _sum.
func checkHistogram(name string, f *family) error {
	type bucket struct {
		le    float64
		count float64
	}
	var buckets []bucket
	for k, v := range f.samples {
		rest, ok := strings.CutPrefix(k, name+`_bucket{le=`)
		if !ok {
			continue
		}
		le, err := strconv.Unquote(strings.TrimSuffix(rest, "}"))
		if err != nil {
			return fmt.Errorf("%s: bucket %s: %w", name, k, err)
		}
		x, err := parseFloat(le)
		if err != nil {
			return fmt.Errorf("%s: bucket %s: %w", name, k, err)
		}
		buckets = append(buckets, bucket{x, v})
	}
	slices.SortFunc(buckets, func(a, b bucket) int {
		switch {
		case a.le < b.le:
			return -1
		case a.le > b.le:
			return 1
		}
		return 0
	})
	if len(buckets) == 0 || !math.IsInf(buckets[len(buckets)-1].le, 1) {
		return fmt.Errorf("%s: no +Inf bucket", name)
	}
	for i := 1; i < len(buckets); i++ {
		if buckets[i].count < buckets[i-1].count {
			return fmt.Errorf("%s: bucket le=%v has %v, less than the one before", name, buckets[i].le, buckets[i].count)
		}
	}
	count, ok := f.samples[name+"_count"]
	if !ok || count != buckets[len(buckets)-1].count {
		return fmt.Errorf("%s: _count %v (present %v), +Inf bucket %v", name, count, ok, buckets[len(buckets)-1].count)
	}
	if _, ok := f.samples[name+"_sum"]; !ok {
		return fmt.Errorf("%s: no _sum", name)
	}
	if len(f.samples) != len(buckets)+2 {
		return fmt.Errorf("%s: %d samples, want the buckets, _sum and _count", name, len(f.samples))
	}
	return nil
}

// TestParserRejects: the parser the tests read the exposition with
// fails on what the format, or den's own rules, forbid.
func TestParserRejects(t *testing.T) {
	const ok = "# HELP a_total A.\n# TYPE a_total counter\na_total{l=\"x\"} 1\n"
	if _, err := parse(ok); err != nil {
		t.Fatalf("a good exposition: %v", err)
	}
	for name, text := range map[string]string{
		"HELP twice":            "# HELP a_total A.\n# HELP a_total A.\n# TYPE a_total counter\na_total 1\n",
		"TYPE twice":            "# HELP a_total A.\n# TYPE a_total counter\n# TYPE a_total counter\na_total 1\n",
		"no TYPE":               "# HELP a_total A.\na_total 1\n",
		"no HELP":               "# TYPE a_total counter\na_total 1\n",
		"TYPE after samples":    "# HELP a_total A.\na_total 1\n# TYPE a_total counter\n",
		"family split":          ok + "# HELP b B.\n# TYPE b gauge\nb 1\na_total{l=\"y\"} 1\n",
		"series twice":          ok + "a_total{l=\"x\"} 2\n",
		"counter not _total":    "# HELP a A.\n# TYPE a counter\na 1\n",
		"raw quote in a label":  "# HELP a_total A.\n# TYPE a_total counter\na_total{l=\"x\"y\"} 1\n",
		"unknown escape":        "# HELP a_total A.\n# TYPE a_total counter\na_total{l=\"x\\t\"} 1\n",
		"raw newline in label":  "# HELP a_total A.\n# TYPE a_total counter\na_total{l=\"x\ny\"} 1\n",
		"bad value":             "# HELP a_total A.\n# TYPE a_total counter\na_total 0x1\n",
		"timestamp":             "# HELP a_total A.\n# TYPE a_total counter\na_total 1 1700000000\n",
		"no final newline":      strings.TrimSuffix(ok, "\n"),
		"blank line":            ok + "\n",
		"histogram not cumul.":  "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
		"histogram no +Inf":     "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",
		"histogram bad count":   "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 1\n",
		"histogram no sum":      "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_count 1\n",
		"a stray comment":       "# just saying\n" + ok,
		"trailing label comma":  "# HELP a_total A.\n# TYPE a_total counter\na_total{l=\"x\",} 1\n",
		"escaped quote in HELP": "# HELP a_total \\\"A\\\".\n# TYPE a_total counter\na_total 1\n",
	} {
		if _, err := parse(text); err == nil {
			t.Errorf("%s: accepted:\n%s", name, text)
		}
	}
}
