package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
)

// ParseValue reads VALUE as `den config set KEY VALUE` does: when
// "x = VALUE" is a TOML document holding only x, and x is a string,
// integer, float, boolean or an array of those, that value; otherwise
// VALUE itself, as a string. So `100` is an integer, `"100"` and `abc`
// are strings, and text spanning several lines that would add other
// keys or tables is one string. It fails only for text that is not
// valid UTF-8, which TOML cannot hold.
func ParseValue(raw string) (any, error) {
	if !utf8.ValidString(raw) {
		return nil, fmt.Errorf("%w: value %q is not valid UTF-8", ErrBadValue, raw)
	}
	var doc map[string]any
	if _, err := toml.Decode("x = "+raw, &doc); err == nil && len(doc) == 1 {
		if v, ok := doc["x"]; ok {
			if v, err := normalize(v); err == nil {
				return v, nil
			}
		}
	}
	return raw, nil
}

// normalize returns v in the form decoding TOML gives (string, int64,
// float64, bool, []any of those), or an error for any other type, a
// nested array, or a string that is not valid UTF-8.
func normalize(v any) (any, error) {
	switch v := v.(type) {
	case string, bool, int64, float64:
		if s, ok := v.(string); ok && !utf8.ValidString(s) {
			return nil, fmt.Errorf("%w: value %q is not valid UTF-8", ErrBadValue, s)
		}
		return v, nil
	case int:
		return int64(v), nil
	case int32:
		return int64(v), nil
	case uint32:
		return int64(v), nil
	case float32:
		return float64(v), nil
	case []any, []string, []int64, []int, []float64, []bool:
		rv := reflect.ValueOf(v)
		out := make([]any, rv.Len())
		for i := range out {
			e, err := normalize(rv.Index(i).Interface())
			if err != nil {
				return nil, err
			}
			if _, nested := e.([]any); nested {
				return nil, fmt.Errorf("%w: arrays of arrays cannot be set", ErrBadValue)
			}
			out[i] = e
		}
		return out, nil
	}
	return nil, fmt.Errorf("%w: a %T cannot be set: want a string, integer, float, boolean or an array of those", ErrBadValue, v)
}

// encode writes a value as one line of TOML. SetValue writes only
// normalized values, which encode writes itself.
func encode(v any) string {
	switch v := v.(type) {
	case string:
		return basicString(v)
	case bool:
		return strconv.FormatBool(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		switch {
		case math.IsNaN(v):
			return "nan"
		case math.IsInf(v, 1):
			return "inf"
		case math.IsInf(v, -1):
			return "-inf"
		}
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0" // 1.0 stays a float
		}
		return s
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = encode(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	// Only Get shows other values (datetimes, arrays of tables): it
	// lets the TOML encoder write them.
	b, err := toml.Marshal(map[string]any{"x": v})
	if s, ok := strings.CutPrefix(strings.TrimSuffix(string(b), "\n"), "x = "); err == nil && ok && !strings.Contains(s, "\n") {
		return s
	}
	return fmt.Sprint(v)
}

// basicString writes s as a TOML basic string: quote, backslash and
// every control character escaped (\b \t \n \f \r, else \uXXXX), so the
// result is one line however many lines s has.
func basicString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// equal reports whether two decoded TOML values are the same, counting
// NaN equal to NaN.
func equal(a, b any) bool {
	switch a := a.(type) {
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, av := range a {
			bv, ok := b[k]
			if !ok || !equal(av, bv) {
				return false
			}
		}
		return true
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equal(a[i], b[i]) {
				return false
			}
		}
		return true
	case []map[string]any:
		b, ok := b.([]map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !equal(a[i], b[i]) {
				return false
			}
		}
		return true
	case float64:
		b, ok := b.(float64)
		return ok && (a == b && math.Signbit(a) == math.Signbit(b) || math.IsNaN(a) && math.IsNaN(b))
	}
	return reflect.DeepEqual(a, b)
}
