package skill

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Index budget: 2% of the context window, at 4 characters a token, and
// never more than MaxIndexChars.
const (
	MaxIndexChars  = 8000
	charsPerToken  = 4
	indexPercent   = 2
	maxDescription = 200
	// recentDays is how long a skill installed or changed but never used
	// yet ranks above the other unused ones.
	recentDays = 7
)

// IndexBudget is how many characters the skills index may take for a
// model with a context window of contextTokens: 2% of it at 4
// characters a token, at most 8000 (8k tokens: 640; 200k and more:
// 8000).
func IndexBudget(contextTokens int) int {
	return min(MaxIndexChars, contextTokens*charsPerToken*indexPercent/100)
}

const (
	indexOpen  = "<available_skills>\n"
	indexClose = "</available_skills>\n"
	indexHelp  = "Skills are folders of instructions, scripts and resources for particular tasks. Before using one, read its SKILL.md with file_read; it says what else to read or run.\n"
)

// Index is the text of the <available_skills> block of the system
// prompt: one line per skill with its name, its description cut at 200
// characters, and the path of its SKILL.md in the computer, and a line
// telling the model to read a skill's SKILL.md before using it. It lists
// skills (pass only usable ones) in order of most recent use, then those
// installed or changed in the last seven days, newest first, then by
// name, as many as fit in IndexBudget(contextTokens) characters (runes);
// when some do not fit, a last line says how many more there are and
// where to see them. The text never exceeds the budget: when not even
// the frame fits, Index is "". It is "" too when there are no skills.
func Index(skills []Entry, contextTokens int, now time.Time) string {
	budget := IndexBudget(contextTokens)
	if len(skills) == 0 {
		return ""
	}
	ranked := slices.Clone(skills)
	slices.SortStableFunc(ranked, func(a, b Entry) int { return rank(a, b, now) })
	// As many as fit, leaving room, while any are left out, for the
	// line that says how many.
	used := runes(indexOpen) + runes(indexHelp) + runes(indexClose)
	var lines []string
	for k, s := range ranked {
		line := entryLine(s)
		need := runes(line)
		if left := len(ranked) - k - 1; left > 0 {
			need += runes(moreLine(left))
		}
		if used+need > budget {
			more := moreLine(len(ranked) - k)
			if used+runes(more) > budget {
				return "" // only when not one skill fits
			}
			lines = append(lines, more)
			break
		}
		lines = append(lines, line)
		used += runes(line)
	}
	var b strings.Builder
	b.WriteString(indexOpen)
	b.WriteString(indexHelp)
	for _, l := range lines {
		b.WriteString(l)
	}
	b.WriteString(indexClose)
	return b.String()
}

// rank orders skills for the index: the most recently used first; then,
// among those never used, those installed or updated in the last
// recentDays, newest first; then by name.
func rank(a, b Entry, now time.Time) int {
	la, lb := lastUsed(a), lastUsed(b)
	if c := lb.Compare(la); c != 0 {
		return c
	}
	ra, rb := recent(a, now), recent(b, now)
	if c := rb.Compare(ra); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

func lastUsed(e Entry) time.Time {
	if e.Record == nil {
		return time.Time{}
	}
	return e.Record.LastUsed
}

// recent is when e was installed or updated, if within recentDays of
// now.
func recent(e Entry, now time.Time) time.Time {
	if e.Record == nil || now.Sub(e.Record.Updated) > recentDays*24*time.Hour {
		return time.Time{}
	}
	return e.Record.Updated
}

// entryLine is one skill's line in the index.
func entryLine(e Entry) string {
	desc := ""
	if e.Manifest != nil {
		desc = e.Manifest.Description
	}
	return "<skill><name>" + e.Name + "</name><description>" + escape(summary(desc, maxDescription)) +
		"</description><path>" + GuestDir + "/" + e.Name + "/" + ManifestFile + "</path></skill>\n"
}

// moreLine says how many skills the index leaves out.
func moreLine(n int) string {
	s := "s are"
	if n == 1 {
		s = " is"
	}
	return fmt.Sprintf("%d more skill%s not listed here: list %s (or run den skills list on the host) to see them all.\n", n, s, GuestDir)
}

// summary is s on one line, cut at max runes with "…" when cut: runs of
// whitespace, newlines included, become one space, and control and
// format characters "?".
func summary(s string, max int) string {
	var b strings.Builder
	n, space := 0, false
	for i, r := range s {
		if unicode.IsSpace(r) {
			space = n > 0
			continue
		}
		if n == max {
			b.WriteString("…")
			break
		}
		if space {
			if n+1 == max {
				b.WriteString("…")
				break
			}
			b.WriteByte(' ')
			n++
			space = false
		}
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size <= 1 {
				r = '?'
			}
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			r = '?'
		}
		b.WriteRune(r)
		n++
	}
	return b.String()
}

func runes(s string) int { return utf8.RuneCountInString(s) }

// escape keeps a description from closing the block or a tag early.
func escape(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Usable returns the entries that may be offered to the model (see
// Entry.Usable).
func Usable(entries []Entry) []Entry {
	var out []Entry
	for _, e := range entries {
		if e.Usable() {
			out = append(out, e)
		}
	}
	return out
}

// Prompt lists the skills as seen from session and returns the Index
// of the usable ones: what the agent loop puts in the system prompt
// each turn. Skills whose files have not changed since the last call
// cost no file reads.
func (c *Catalog) Prompt(session string, contextTokens int, now time.Time) (string, error) {
	entries, err := c.List(session, now)
	if err != nil {
		return "", err
	}
	return Index(Usable(entries), contextTokens, now), nil
}
