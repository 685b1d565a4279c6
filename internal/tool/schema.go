package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Schema is the subset of JSON Schema den's tools use: object,
// properties, required, type (string, integer, number, boolean, array,
// object), items, enum, minimum, maximum and additionalProperties
// false. Properties keep their order, so a schema marshals back exactly
// as it was written.
type Schema struct {
	Type                 string     `json:"type,omitempty"`
	Description          string     `json:"description,omitempty"`
	Properties           Properties `json:"properties,omitempty"`
	Required             []string   `json:"required,omitempty"`
	Items                *Schema    `json:"items,omitempty"`
	Enum                 []any      `json:"enum,omitempty"`
	Minimum              *float64   `json:"minimum,omitempty"`
	Maximum              *float64   `json:"maximum,omitempty"`
	AdditionalProperties *bool      `json:"additionalProperties,omitempty"`
}

// Property is one named property of an object schema.
type Property struct {
	Name   string
	Schema *Schema
}

// Properties are an object's properties, in order.
type Properties []Property

// Get returns the schema of the named property, or nil.
func (ps Properties) Get(name string) *Schema {
	for _, p := range ps {
		if p.Name == name {
			return p.Schema
		}
	}
	return nil
}

// MarshalJSON writes the properties as a JSON object, in order.
func (ps Properties) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range ps {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(p.Name)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(p.Schema)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads a JSON object of schemas, keeping its order.
func (ps *Properties) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return fmt.Errorf("properties: want an object")
	}
	*ps = nil
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		name, _ := t.(string)
		var s Schema
		if err := dec.Decode(&s); err != nil {
			return fmt.Errorf("property %s: %w", name, err)
		}
		*ps = append(*ps, Property{Name: name, Schema: &s})
	}
	_, err := dec.Token()
	return err
}

// ParseSchema reads a tool's input schema, which must describe an
// object, and checks that it uses only the supported subset.
func ParseSchema(raw json.RawMessage) (*Schema, error) {
	var s Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("schema: want type object, got %q", s.Type)
	}
	if err := s.check(""); err != nil {
		return nil, err
	}
	return &s, nil
}

func (s *Schema) check(at string) error {
	switch s.Type {
	case "string", "integer", "number", "boolean", "array", "object":
	default:
		return fmt.Errorf("schema: %s: unsupported type %q", where(at), s.Type)
	}
	for _, p := range s.Properties {
		if err := p.Schema.check(join(at, p.Name)); err != nil {
			return err
		}
	}
	for _, r := range s.Required {
		if s.Properties.Get(r) == nil {
			return fmt.Errorf("schema: %s: required property %q is not defined", where(at), r)
		}
	}
	if s.Items != nil {
		return s.Items.check(at + "[]")
	}
	return nil
}

// Validate checks v, a value decoded with json.Decoder.UseNumber, and
// returns every violation found, each naming the field and what was
// expected, in words a model can act on. A null given for an optional
// property counts as leaving it out.
func (s *Schema) Validate(v any) error {
	var errs []string
	s.validate("", v, &errs)
	if len(errs) == 0 {
		return nil
	}
	return &ValidationError{Problems: errs}
}

// ValidationError lists what is wrong with an input.
type ValidationError struct {
	Problems []string
}

func (e *ValidationError) Error() string { return strings.Join(e.Problems, "; ") }

func (s *Schema) validate(at string, v any, errs *[]string) {
	fail := func(format string, args ...any) {
		*errs = append(*errs, where(at)+": "+fmt.Sprintf(format, args...))
	}
	switch s.Type {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			fail("want an object, got %s", describe(v))
			return
		}
		for _, r := range s.Required {
			if x, ok := m[r]; !ok || x == nil {
				*errs = append(*errs, fmt.Sprintf("missing required field %q%s", r, in(at)))
			}
		}
		var unknown []string
		for _, k := range sortedKeys(m) {
			ps := s.Properties.Get(k)
			switch {
			case ps != nil && m[k] == nil:
				// null for an optional property means "not given".
			case ps != nil:
				ps.validate(join(at, k), m[k], errs)
			case s.AdditionalProperties != nil && !*s.AdditionalProperties:
				unknown = append(unknown, k)
			}
		}
		if len(unknown) > 0 {
			names := make([]string, len(s.Properties))
			for i, p := range s.Properties {
				names[i] = p.Name
			}
			*errs = append(*errs, fmt.Sprintf("unknown field%s %s%s (allowed: %s)",
				plural(len(unknown)), quoteAll(unknown), in(at), strings.Join(names, ", ")))
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			fail("want an array, got %s", describe(v))
			return
		}
		if s.Items != nil {
			for i, x := range a {
				s.Items.validate(at+"["+strconv.Itoa(i)+"]", x, errs)
			}
		}
	case "string":
		if _, ok := v.(string); !ok {
			fail("want a string, got %s", describe(v))
			return
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			fail("want true or false, got %s", describe(v))
			return
		}
	case "integer", "number":
		n, ok := v.(json.Number)
		if !ok {
			fail("want %s, got %s", article(s.Type), describe(v))
			return
		}
		f, err := n.Float64()
		if err != nil || math.IsInf(f, 0) {
			fail("%s is out of range", n)
			return
		}
		if s.Type == "integer" {
			if _, err := n.Int64(); err != nil {
				fail("want an integer, got %s", n)
				return
			}
		}
		if s.Minimum != nil && f < *s.Minimum {
			fail("%s is below the minimum %s", n, num(*s.Minimum))
		}
		if s.Maximum != nil && f > *s.Maximum {
			fail("%s is above the maximum %s", n, num(*s.Maximum))
		}
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return equal(e, v) }) {
		opts := make([]string, len(s.Enum))
		for i, e := range s.Enum {
			b, _ := json.Marshal(e)
			opts[i] = string(b)
		}
		b, _ := json.Marshal(v)
		fail("%s is not one of %s", b, strings.Join(opts, ", "))
	}
}

// equal compares an enum value (decoded without UseNumber) with an
// input value (decoded with it).
func equal(e, v any) bool {
	if n, ok := v.(json.Number); ok {
		f, err := n.Float64()
		ef, ok := e.(float64)
		return err == nil && ok && f == ef
	}
	return e == v
}

func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		if len(x) > 40 {
			x = x[:40] + "…"
		}
		return "the string " + strconv.Quote(x)
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return "the number " + x.String()
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func article(typ string) string {
	if typ == "integer" {
		return "an integer"
	}
	return "a " + typ
}

func num(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func join(at, name string) string {
	if at == "" {
		return name
	}
	return at + "." + name
}

func where(at string) string {
	if at == "" {
		return "input"
	}
	return at
}

func in(at string) string {
	if at == "" {
		return ""
	}
	return " in " + at
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = strconv.Quote(s)
	}
	return strings.Join(q, ", ")
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
