package cli

import (
	"regexp"
	"strings"
)

// markdown renders streamed Markdown for a terminal, a line at a time:
// headings and **bold** in bold, `code` and fenced code blocks in cyan,
// list bullets as •. Text is held until its line ends, so that a marker
// split across deltas still renders.
type markdown struct {
	line   strings.Builder
	inCode bool
}

const (
	ansiBold  = "\033[1m"
	ansiCyan  = "\033[36m"
	ansiReset = "\033[0m"
)

var (
	boldRE   = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	codeRE   = regexp.MustCompile("`([^`]+)`")
	bulletRE = regexp.MustCompile(`^(\s*)[-*] `)
)

// feed takes more text and returns what can be shown now.
func (m *markdown) feed(s string) string {
	var out strings.Builder
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			m.line.WriteString(s)
			return out.String()
		}
		m.line.WriteString(s[:i])
		out.WriteString(m.render(m.line.String()))
		out.WriteByte('\n')
		m.line.Reset()
		s = s[i+1:]
	}
}

// flush renders what is held (the end of a turn).
func (m *markdown) flush() string {
	if m.line.Len() == 0 {
		return ""
	}
	s := m.render(m.line.String())
	m.line.Reset()
	return s
}

func (m *markdown) render(line string) string {
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, "```") {
		m.inCode = !m.inCode
		return ansiCyan + line + ansiReset
	}
	if m.inCode {
		return ansiCyan + line + ansiReset
	}
	if strings.HasPrefix(t, "#") {
		return ansiBold + strings.TrimLeft(t, "# ") + ansiReset
	}
	line = bulletRE.ReplaceAllString(line, "$1• ")
	line = boldRE.ReplaceAllString(line, ansiBold+"$1"+ansiReset)
	return codeRE.ReplaceAllString(line, ansiCyan+"$1"+ansiReset)
}
