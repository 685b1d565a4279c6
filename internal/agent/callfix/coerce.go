package callfix

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"den.dev/den/internal/tool"
)

// fieldAliases are names models give den's common fields, by field.
var fieldAliases = map[string][]string{
	"command": {"cmd", "script", "shell_command", "bash_command"},
	"path":    {"file_path", "filepath", "file", "filename", "file_name", "image_path"},
	"content": {"contents", "file_content", "file_text"},
}

// coercer converts values to the types a schema asks for, where the
// intent is clear, noting each change.
type coercer struct{ notes []string }

func (c *coercer) note(at, format string, args ...any) {
	c.notes = append(c.notes, at+": "+fmt.Sprintf(format, args...))
}

func (c *coercer) coerce(s *tool.Schema, v any, at string) any {
	if v == nil {
		return nil
	}
	switch s.Type {
	case "object":
		if str, ok := v.(string); ok {
			if inner, err := decode([]byte(strings.TrimSpace(str))); err == nil {
				if m, ok := inner.(map[string]any); ok {
					c.note(where(at), "a JSON object inside a string was decoded")
					v = m
				}
			}
		}
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		c.renameFields(s, m, at)
		for _, p := range s.Properties {
			if x, ok := m[p.Name]; ok {
				m[p.Name] = c.coerce(p.Schema, x, join(at, p.Name))
			}
		}
		return m
	case "array":
		if str, ok := v.(string); ok {
			if inner, err := decode([]byte(strings.TrimSpace(str))); err == nil {
				if a, ok := inner.([]any); ok {
					c.note(where(at), "a JSON array inside a string was decoded")
					v = a
				}
			}
		}
		a, ok := v.([]any)
		if !ok || s.Items == nil {
			return v
		}
		for i := range a {
			a[i] = c.coerce(s.Items, a[i], at+"["+strconv.Itoa(i)+"]")
		}
		return a
	case "integer", "number":
		switch x := v.(type) {
		case string:
			t := strings.TrimSpace(x)
			if !numberRE.MatchString(t) {
				return v
			}
			n := json.Number(t)
			if s.Type == "integer" {
				n = integral(n)
			}
			c.note(at, "the string %q was read as the number %s", x, n)
			return n
		case json.Number:
			if s.Type == "integer" {
				if n := integral(x); n != x {
					c.note(at, "%s was read as the integer %s", x, n)
					return n
				}
			}
		}
	case "boolean":
		if x, ok := v.(string); ok {
			switch strings.ToLower(strings.TrimSpace(x)) {
			case "true":
				c.note(at, "the string %q was read as true", x)
				return true
			case "false":
				c.note(at, "the string %q was read as false", x)
				return false
			}
		}
	case "string":
		switch x := v.(type) {
		case json.Number:
			c.note(at, "the number %s was read as the string %q", x, x.String())
			v = x.String()
		case bool:
			c.note(at, "%v was read as the string %q", x, strconv.FormatBool(x))
			v = strconv.FormatBool(x)
		}
		if x, ok := v.(string); ok && len(s.Enum) > 0 {
			return c.enumCase(s, x, at)
		}
	}
	return v
}

// integral writes a number with an integral value (5.0, 1e3) as an
// integer; others are returned unchanged.
func integral(n json.Number) json.Number {
	if _, err := n.Int64(); err == nil {
		return n
	}
	f, err := n.Float64()
	if err != nil || f != float64(int64(f)) || f > 1<<53 || f < -(1<<53) {
		return n
	}
	return json.Number(strconv.FormatInt(int64(f), 10))
}

// enumCase fixes the case of a string that matches one enum value
// but for case.
func (c *coercer) enumCase(s *tool.Schema, x, at string) any {
	var match string
	n := 0
	for _, e := range s.Enum {
		es, ok := e.(string)
		if !ok {
			continue
		}
		if es == x {
			return x
		}
		if strings.EqualFold(es, strings.TrimSpace(x)) {
			match = es
			n++
		}
	}
	if n == 1 {
		c.note(at, "%q was read as %q", x, match)
		return match
	}
	return x
}

// renameFields gives a field the model misnamed its schema name: a
// field that is not in the schema, and matches exactly one missing one
// but for case and separators, or is a known alias of it.
func (c *coercer) renameFields(s *tool.Schema, m map[string]any, at string) {
	for _, k := range sortedKeys(m) {
		if s.Properties.Get(k) != nil || k == tool.TitleField {
			continue
		}
		var target string
		n := 0
		for _, p := range s.Properties {
			if _, taken := m[p.Name]; taken {
				continue
			}
			if normName(p.Name) == normName(k) || containsFold(fieldAliases[p.Name], k) {
				target = p.Name
				n++
			}
		}
		if n == 1 {
			m[target] = m[k]
			delete(m, k)
			c.note(join(at, k), "the field was read as %q", target)
		}
	}
}

func containsFold(ss []string, s string) bool {
	for _, x := range ss {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func join(at, name string) string {
	if at == "" {
		return name
	}
	return at + "." + name
}

func where(at string) string {
	if at == "" {
		return "the arguments"
	}
	return at
}
