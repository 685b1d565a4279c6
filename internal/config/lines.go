package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// editLines returns data with the key at parts set to lit, a value
// already written as one line of TOML. It walks the file's headers and
// key lines (asking the TOML decoder what each one says, and skipping
// the further lines of values that span several), then:
//   - replaces the value of the line that sets the key, keeping what
//     comes before the value and a comment after it;
//   - or adds a line after the last key of the key's table (written
//     relative to that line's table, with its indentation), or after
//     the table's header when it has no keys;
//   - or adds the table at the end of the file.
//
// It fails for a file it cannot follow; SetValue checks what it returns
// in any case.
func editLines(data []byte, parts []string, lit string) ([]byte, error) {
	text := string(data)
	lines := strings.Split(text, "\n")
	table, want := []string(nil), parts[:len(parts)-1]
	inArray := false
	header, sibling, siblingStart := -1, -1, -1
	var siblingTable []string
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "" || line[0] == '#' {
			continue
		}
		if line[0] == '[' {
			path, array, ok := headerPath(line)
			if !ok {
				return nil, fmt.Errorf("cannot read the table header on line %d", i+1)
			}
			table, inArray = path, array
			if !array && slices.Equal(path, want) {
				header = i
			}
			continue
		}
		path, eq, end, err := readKeyLine(lines, i)
		if err != nil {
			return nil, err
		}
		if !inArray {
			full := append(table[:len(table):len(table)], path...)
			switch {
			case slices.Equal(full, parts):
				lines[i] = replaceValue(lines[i:end+1], eq, lit)
				lines = slices.Delete(lines, i+1, end+1)
				return []byte(strings.Join(lines, "\n")), nil
			case len(full) < len(parts) && slices.Equal(full, parts[:len(full)]):
				return nil, fmt.Errorf("%s is written as an inline table on line %d", keyString(full), i+1)
			case slices.Equal(full[:len(full)-1], want):
				siblingStart, sibling, siblingTable = i, end, table
			}
		}
		i = end
	}
	switch {
	case sibling >= 0:
		start := lines[siblingStart]
		indent := start[:len(start)-len(strings.TrimLeft(start, " \t"))]
		line := indent + keyString(parts[len(siblingTable):]) + " = " + lit + crOf(lines[sibling])
		lines = slices.Insert(lines, sibling+1, line)
	case header >= 0:
		lines = slices.Insert(lines, header+1, keyString(parts[len(parts)-1:])+" = "+lit+crOf(lines[header]))
	default:
		var b strings.Builder
		b.WriteString(text)
		if text != "" && !strings.HasSuffix(text, "\n") {
			b.WriteString("\n")
		}
		if strings.TrimSpace(text) != "" && !strings.HasSuffix(text, "\n\n") {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "[%s]\n%s = %s\n", keyString(want), keyString(parts[len(parts)-1:]), lit)
		return []byte(b.String()), nil
	}
	return []byte(strings.Join(lines, "\n")), nil
}

// crOf is "\r" for a line of a file with CRLF line ends.
func crOf(line string) string {
	if strings.HasSuffix(line, "\r") {
		return "\r"
	}
	return ""
}

// replaceValue is the first of lines (a key line whose value, the text
// after eq, ends on the last of lines) with the value lit instead: the
// key as written stays, and so does a comment after the value.
func replaceValue(lines []string, eq int, lit string) string {
	first := lines[0]
	last := lines[len(lines)-1]
	cr := crOf(last)
	rest := strings.TrimSuffix(strings.Join(append([]string{first[eq+1:]}, lines[1:]...), "\n"), cr)
	space := rest[:len(rest)-len(strings.TrimLeft(rest, " \t"))]
	if space == "" {
		space = " "
	}
	tail := ""
	for j := 0; j < len(rest); j++ {
		if rest[j] == '#' && single("x = "+rest[:j]) {
			tail = rest[len(strings.TrimRight(rest[:j], " \t")):]
			break
		}
	}
	return first[:eq+1] + space + lit + tail + cr
}

// readKeyLine reads lines[i], a key line (not blank, a comment or a
// header): the key path as written (relative to the line's table), the
// index of its '=' and the index of the line its value ends on, which
// is past i for a value that spans several lines. The error names the
// line and what on it could not be read.
func readKeyLine(lines []string, i int) (path []string, eq, end int, err error) {
	eq = findEq(lines[i])
	if eq < 0 {
		return nil, 0, 0, fmt.Errorf("cannot read line %d", i+1)
	}
	path, ok := keyPath(lines[i][:eq])
	if !ok {
		return nil, 0, 0, fmt.Errorf("cannot read the key on line %d", i+1)
	}
	end, ok = valueEnd(lines, i, eq)
	if !ok {
		return nil, 0, 0, fmt.Errorf("cannot read the value on line %d", i+1)
	}
	return path, eq, end, nil
}

// valueEnd is the last line of the value that starts after eq on line
// i: the first line at which the text from there decodes as a value
// (line ends CRLF or LF).
func valueEnd(lines []string, i, eq int) (int, bool) {
	text := strings.TrimSuffix(lines[i][eq+1:], "\r")
	for end := i; end < len(lines); end++ {
		if end > i {
			text += "\n" + strings.TrimSuffix(lines[end], "\r")
		}
		if single("x = " + text) {
			return end, true
		}
	}
	return 0, false
}

// single reports whether doc is a TOML document that sets only x.
func single(doc string) bool {
	var m map[string]any
	_, err := toml.Decode(doc, &m)
	_, ok := m["x"]
	return err == nil && len(m) == 1 && ok
}

// keyPath reads a key as written in a file (a."b.c".d) into its parts.
func keyPath(written string) ([]string, bool) {
	var v any
	var m map[string]any
	if _, err := toml.Decode(written+" = 0", &m); err != nil {
		return nil, false
	}
	var parts []string
	for v = m; ; {
		t, ok := v.(map[string]any)
		if !ok || len(t) != 1 {
			break
		}
		for k, e := range t {
			parts, v = append(parts, k), e
		}
	}
	return parts, v == int64(0) && len(parts) > 0
}

// headerPath reads a table header line ([a.b] or [[a.b]], with an
// optional comment) into the table's parts.
func headerPath(line string) (parts []string, array, ok bool) {
	var m map[string]any
	if _, err := toml.Decode(line, &m); err != nil {
		return nil, false, false
	}
	var v any = m
	for {
		switch t := v.(type) {
		case map[string]any:
			if len(t) == 0 {
				return parts, false, len(parts) > 0
			}
			if len(t) != 1 {
				return nil, false, false
			}
			for k, e := range t {
				parts, v = append(parts, k), e
			}
		case []map[string]any:
			return parts, true, len(parts) > 0
		default:
			return nil, false, false
		}
	}
}

// findEq is the index of the first '=' in line outside quotes, or -1.
func findEq(line string) int {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote == '"' && c == '\\':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '=':
			return i
		case c == '#':
			return -1
		}
	}
	return -1
}
