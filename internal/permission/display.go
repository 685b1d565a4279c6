package permission

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Everything a person reads about a call — the question, the audit
// line, a notification — comes from the computer, which may try to
// make it read as something else: an escape sequence that clears the
// line, a carriage return that writes over it, a right-to-left override
// that reverses it, an argument so long that the end scrolls away. So
// it is shown through Printable and CallLine, which make every such
// character visible and never cut silently.

// MaxShownArg is how much of one argument a one-line view shows; the
// rest is counted, and den approvals show ID prints it all.
const MaxShownArg = 200

// Printable returns s with every character that could change how a
// terminal or a page shows the text around it written as a visible
// escape: C0 and C1 controls (\n, \r, \t, \x1b, …), DEL, Unicode line
// and paragraph separators, bidirectional controls and zero-width
// characters (as \u202e and the like), and invalid UTF-8 bytes (\xff).
// A backslash is doubled, so an escape in the text cannot pose as one
// Printable made.
func Printable(s string) string {
	if isPlain(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case hidden(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// PrintableLines is Printable that keeps line breaks and tabs, for a
// notification's message.
func PrintableLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.ReplaceAll(Printable(strings.ReplaceAll(l, "\t", " ")), `\t`, "\t")
	}
	return strings.Join(lines, "\n")
}

func isPlain(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f || r == '\\' || r == utf8.RuneError || hidden(r) {
			return false
		}
	}
	return true
}

// hidden reports characters that change layout or direction without
// showing: C1 controls, line and paragraph separators, bidirectional
// marks, embeddings, overrides and isolates, zero-width characters and
// other format characters (Unicode category Cf).
func hidden(r rune) bool {
	return (r >= 0x80 && r < 0xa0) || r == 0x2028 || r == 0x2029 || unicode.Is(unicode.Cf, r)
}

// CallLine shows a call as one command line: each argument made
// Printable and quoted where a shell would need it, so that where one
// ends and the next begins is plain, and cut at max bytes (0: no cut)
// with how much is left said, never silently.
func CallLine(command string, args []string, max int) string {
	var b strings.Builder
	b.WriteString(Printable(command))
	for _, a := range args {
		b.WriteByte(' ')
		b.WriteString(ShowArg(a, max))
	}
	return b.String()
}

// ShowArg is one argument as CallLine shows it.
func ShowArg(a string, max int) string {
	more := 0
	if max > 0 && len(a) > max {
		n := max
		for n > 0 && !utf8.RuneStart(a[n]) {
			n--
		}
		more, a = len(a)-n, a[:n]
	}
	p := Printable(a)
	if p == "" || strings.ContainsAny(p, " \"'$`|&;<>()*?#~") || p != a {
		p = "'" + strings.ReplaceAll(p, "'", `'\''`) + "'"
	}
	if more > 0 {
		p += "…[" + strconv.Itoa(more) + " more bytes]"
	}
	return p
}
