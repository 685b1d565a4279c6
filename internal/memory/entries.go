package memory

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"den.dev/den/internal/store"
)

// The files of a memory folder den gives a meaning to.
const (
	Global = "GLOBAL.md"
	Soul   = "SOUL.md"
)

// dayLayout names a daily log: 2026-12-02.md.
const dayLayout = "2006-01-02"

// logDay is the day a file name is the log of, "" when it is none (an
// archived log, archive/2026-11-20.md, is one).
func logDay(name string) string {
	day, ok := strings.CutSuffix(path.Base(name), ".md")
	if !ok || len(day) != len(dayLayout) {
		return ""
	}
	if _, err := time.Parse(dayLayout, day); err != nil {
		return ""
	}
	return day
}

// LogName is the name of the log of the day t falls on in loc.
func LogName(t time.Time, loc *time.Location) string {
	return t.In(loc).Format(dayLayout) + ".md"
}

// markerRE is an entry's marker line: the time, then key=value words
// (session, message) and bare words (summary).
var markerRE = regexp.MustCompile(`^<!-- den: (\S+)((?: [a-z]+(?:=[A-Za-z0-9_.-]+)?)*) -->$`)

// marker is the marker line of an entry written at t.
func marker(t time.Time, session, message string, words ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- den: %s", t.Format(time.RFC3339))
	if session != "" {
		fmt.Fprintf(&b, " session=%s", session)
	}
	if message != "" {
		fmt.Fprintf(&b, " message=%s", message)
	}
	for _, w := range words {
		b.WriteString(" " + w)
	}
	b.WriteString(" -->")
	return b.String()
}

// maxEntry bounds an entry's text in the index (the file keeps it all).
const maxEntry = 8 << 10

// parse splits a memory file into its entries.
func parse(name, text string) []store.MemoryEntry {
	day := logDay(name)
	lines := strings.Split(text, "\n")
	var out []store.MemoryEntry
	var cur *store.MemoryEntry
	var body []string
	flush := func() {
		if cur != nil {
			cur.Body = clip(strings.TrimSpace(strings.Join(body, "\n")))
			if cur.Body != "" {
				cur.Seq = len(out)
				out = append(out, *cur)
			}
		} else {
			for _, block := range blocks(body) {
				out = append(out, store.MemoryEntry{File: name, Day: day, Seq: len(out), Body: clip(block)})
			}
		}
		body = body[:0]
	}
	for _, line := range lines {
		if m := markerRE.FindStringSubmatch(strings.TrimSpace(line)); m != nil && day != "" {
			flush()
			e := store.MemoryEntry{File: name, Day: day}
			if t, err := time.Parse(time.RFC3339, m[1]); err == nil {
				e.At = t
			}
			for _, w := range strings.Fields(m[2]) {
				k, v, _ := strings.Cut(w, "=")
				switch k {
				case "session":
					e.Session = v
				case "message":
					e.Message = v
				}
			}
			cur = &e
			continue
		}
		body = append(body, line)
	}
	flush()
	return out
}

// blocks splits lines at blank lines; a heading stays with the block
// under it, and a log's title heading alone is no entry.
func blocks(lines []string) []string {
	var out []string
	var cur []string
	push := func() {
		b := strings.TrimSpace(strings.Join(cur, "\n"))
		cur = cur[:0]
		if b == "" || (strings.HasPrefix(b, "#") && !strings.Contains(b, "\n") && len(out) == 0 && logTitle(b)) {
			return
		}
		out = append(out, b)
	}
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			if len(cur) > 0 && !strings.HasPrefix(strings.TrimSpace(cur[len(cur)-1]), "#") {
				push()
			}
			continue
		}
		cur = append(cur, l)
	}
	push()
	return out
}

// logTitle reports whether a heading is a log's own ("# 2026-12-02").
func logTitle(h string) bool {
	return logDay(strings.TrimSpace(strings.TrimLeft(h, "#"))+".md") != ""
}

func clip(s string) string {
	if len(s) <= maxEntry {
		return s
	}
	cut := maxEntry
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

// without is text with the entries drop picks left out (markers and
// bodies), and how many it left out. drop is given each entry's session
// and message.
func without(text string, drop func(session, message string) bool) (string, int) {
	lines := strings.Split(text, "\n")
	var kept []string
	dropping := false
	n := 0
	for _, line := range lines {
		if m := markerRE.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			var session, message string
			for _, w := range strings.Fields(m[2]) {
				switch k, v, _ := strings.Cut(w, "="); k {
				case "session":
					session = v
				case "message":
					message = v
				}
			}
			dropping = drop(session, message)
			if dropping {
				n++
			}
		}
		if !dropping {
			kept = append(kept, line)
		}
	}
	return strings.Join(kept, "\n"), n
}

// shown is a log's text as the model reads it in the prompt: each
// marker becomes a short "[14:03]" line.
func shown(text string, loc *time.Location) string {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if m := markerRE.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
			stamp := "[entry]"
			if t, err := time.Parse(time.RFC3339, m[1]); err == nil {
				stamp = "[" + t.In(loc).Format("15:04") + "]"
			}
			if strings.Contains(m[2], " summary") {
				stamp += " (summary of an earlier part of a conversation)"
			}
			lines[i] = stamp
		}
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// defang keeps text from forging a marker line of its own.
func defang(text string) string {
	return strings.ReplaceAll(text, "<!-- den:", "<!-- den :")
}
