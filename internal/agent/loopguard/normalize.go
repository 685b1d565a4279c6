package loopguard

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// What changes between two polls of an unchanged world, replaced by
// placeholders before results are compared. The patterns run in this
// order: ids first (a UUID holds digit groups that look like other
// things), then times, then durations.
var (
	uuidRE = regexp.MustCompile(`(?i)\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`)
	// 2026-01-02T15:04:05.123Z, 2026-01-02 15:04:05+01:00, 2026-01-02T15:04
	isoRE = regexp.MustCompile(`\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2}\b)?`)
	// 20260102-150405, 20260102T150405Z (file names, den's offloads)
	compactRE = regexp.MustCompile(`\b(?:19|20)\d{6}[T_-]\d{6}Z?\b`)
	// 15:04:05, 15:04:05.123, 0:01, 10:32 — but not file.go:12:34, where
	// the colon before the digits gives a position away.
	clockRE = regexp.MustCompile(`(^|[^\w:.])(\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?)\b`)
	// Hex ids: 16 or more hex digits holding both a digit and a letter.
	hexRE = regexp.MustCompile(`(?i)\b[0-9a-f]{16,}\b`)
	// Numbers that may be Unix times in s, ms, µs or ns.
	epochRE = regexp.MustCompile(`\b\d{10}(?:\d{3}|\d{6}|\d{9})?(?:\.\d+)?\b`)
	// 12ms, 3.2s, 1m30s, 1h2m3.5s, 850µs
	durRE = regexp.MustCompile(`\b(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|h|m|s))+\b`)
	// 12 ms, 3.2 seconds, 5 min
	durWordsRE = regexp.MustCompile(`(?i)\b\d+(?:\.\d+)?\s?(?:ns|µs|us|ms|msecs?|secs?|seconds?|mins?|minutes?|hours?|hrs?)\b`)
	// pid 123, PID: 123, pid=123
	pidRE    = regexp.MustCompile(`(?i)\b(pid[\s:=]+)\d+`)
	numberRE = regexp.MustCompile(`\b\d+\b`)
	// den's offload files.
	offloadRE = regexp.MustCompile(`/den/offloads/[^\s\]\)"']+`)
	// Lines of ps aux (USER PID %CPU %MEM VSZ RSS …) and of ps -ef
	// (UID PID PPID C STIME TTY TIME …) without their header, as after
	// ps aux | grep.
	psAuxRE = regexp.MustCompile(`^\S+\s+\d+\s+\d+(?:\.\d+)?\s+\d+(?:\.\d+)?\s+\d+\s+\d+\s`)
	psEfRE  = regexp.MustCompile(`^\S+\s+\d+\s+\d+\s+\d+\s+\S+\s+\S+\s+\d+:\d{2}:\d{2}\s`)
)

// psVolatile are the ps columns that change while nothing happens.
var psVolatile = map[string]bool{
	"PID": true, "PPID": true, "PGID": true, "SID": true, "TGID": true, "LWP": true,
	"%CPU": true, "%MEM": true, "C": true, "VSZ": true, "RSS": true, "SZ": true, "TIME": true,
}

// normalize rewrites a tool's text so that two results of an unchanged
// world compare equal. pids says the whole output is process ids
// (pgrep, pidof).
func normalize(s string, now time.Time, pids bool) string {
	s = normalizePS(s)
	if pids {
		s = numberRE.ReplaceAllString(s, "<pid>")
	}
	s = offloadRE.ReplaceAllString(s, "/den/offloads/<file>")
	s = uuidRE.ReplaceAllString(s, "<id>")
	s = isoRE.ReplaceAllString(s, "<time>")
	s = compactRE.ReplaceAllString(s, "<time>")
	s = clockRE.ReplaceAllString(s, "${1}<time>")
	s = hexRE.ReplaceAllStringFunc(s, func(h string) string {
		if strings.ContainsAny(h, "0123456789") && strings.ContainsAny(h, "abcdefABCDEF") {
			return "<id>"
		}
		return h
	})
	s = epochRE.ReplaceAllStringFunc(s, func(n string) string {
		if nearNow(n, now) {
			return "<time>"
		}
		return n
	})
	s = durRE.ReplaceAllString(s, "<dur>")
	s = durWordsRE.ReplaceAllString(s, "<dur>")
	s = pidRE.ReplaceAllString(s, "${1}<pid>")
	return s
}

// nearNow says whether n, read as Unix seconds, milliseconds,
// microseconds or nanoseconds by its number of digits, is within five
// years of now.
func nearNow(n string, now time.Time) bool {
	digits, _, _ := strings.Cut(n, ".")
	v, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return false
	}
	var t time.Time
	switch len(digits) {
	case 10:
		t = time.Unix(v, 0)
	case 13:
		t = time.UnixMilli(v)
	case 16:
		t = time.UnixMicro(v)
	case 19:
		t = time.Unix(0, v)
	default:
		return false
	}
	d := t.Sub(now)
	const span = 5 * 365 * 24 * time.Hour
	return d > -span && d < span
}

// normalizePS blanks the volatile columns of ps-like tables: after a
// header naming PID, by column; without one, lines shaped like ps aux
// or ps -ef output.
func normalizePS(s string) string {
	if !strings.Contains(s, "PID") && !strings.Contains(s, ".") && !strings.Contains(s, ":") {
		return s
	}
	lines := strings.Split(s, "\n")
	var cols []bool // volatile columns of the current table
	changed := false
	for i, line := range lines {
		f := strings.Fields(line)
		if len(f) == 0 {
			cols = nil
			continue
		}
		if isPSHeader(f) {
			cols = make([]bool, len(f))
			for j, name := range f {
				cols[j] = psVolatile[name]
			}
			continue
		}
		var blank []bool
		switch {
		case cols != nil:
			blank = cols
		case psAuxRE.MatchString(line):
			blank = []bool{false, true, true, true, true, true}
		case psEfRE.MatchString(line):
			blank = []bool{false, true, true, true, false, false, true}
		default:
			continue
		}
		// The last column (the command) may hold spaces: keep it whole.
		n := min(len(blank), len(f)-1)
		for j := 0; j < n; j++ {
			if blank[j] && isNumberish(f[j]) {
				f[j] = "<n>"
			}
		}
		lines[i] = strings.Join(f, " ")
		changed = true
	}
	if !changed {
		return s
	}
	return strings.Join(lines, "\n")
}

func isPSHeader(f []string) bool {
	for _, name := range f {
		if name == "PID" {
			return true
		}
	}
	return false
}

func isNumberish(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && r != '.' && r != ':' && r != '-' {
			return false
		}
	}
	return true
}
