package mcpclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"den.dev/den/internal/tool"
)

// Limits of a converted schema.
const (
	maxSchemaDepth  = 12   // objects and arrays nested deeper are taken as they come
	maxDescription  = 4096 // a tool's or a field's description, in bytes
	maxRefExpansion = 64   // $refs followed in one schema
)

// convertSchema turns an MCP tool's input schema, any JSON Schema, into
// the subset den's tools use (tool.Schema), which den validates calls
// against and every provider accepts:
//   - local $refs (#/$defs/X, #/definitions/X) are followed, allOf
//     merged, a type list or anyOf/oneOf with one type besides null
//     becomes that type, const becomes a one-value enum, and a missing
//     type is read from properties, items or enum;
//   - what den cannot check (format, pattern, lengths, defaults, a
//     choice of several types) is said in the field's description;
//   - a field den cannot express at all (any JSON value, types that
//     differ) leaves properties and is described in its object's
//     description instead, and that object then takes fields it does
//     not list, so that the model can still send it.
func convertSchema(raw json.RawMessage) (*tool.Schema, error) {
	var v any
	if len(bytes.TrimSpace(raw)) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		n, err := parseTree(raw)
		if err != nil {
			return nil, fmt.Errorf("input schema: %w", err)
		}
		v = toAny(n)
	}
	root, _ := v.(map[string]any)
	if v != nil && root == nil {
		return nil, fmt.Errorf("input schema: not a JSON object")
	}
	if root == nil {
		root = map[string]any{}
	}
	if _, ok := root["type"]; !ok && typeOf(root) == "" && root["$ref"] == nil && root["anyOf"] == nil && root["oneOf"] == nil && root["allOf"] == nil {
		root["type"] = "object" // an input schema is an object's
	}
	c := &converter{root: root}
	s, ok := c.convert(root, 0)
	if !ok || s.Type != "object" {
		return nil, fmt.Errorf("input schema: not an object schema")
	}
	if _, err := tool.ParseSchema(mustJSON(s)); err != nil {
		return nil, err // a bug of the converter: say so, never send it
	}
	return s, nil
}

type converter struct {
	root map[string]any
	refs int
}

// resolve follows s's $ref, merges allOf, and picks the branch of an
// anyOf/oneOf or type list, returning the schema to convert, or nil
// when den cannot express it.
func (c *converter) resolve(s map[string]any, depth int) map[string]any {
	for range 8 {
		ref, ok := s["$ref"].(string)
		if !ok {
			break
		}
		c.refs++
		target := c.lookup(ref)
		if target == nil || c.refs > maxRefExpansion {
			return nil
		}
		merged := map[string]any{}
		for k, v := range target {
			merged[k] = v
		}
		for k, v := range s {
			if k != "$ref" {
				merged[k] = v
			}
		}
		s = merged
	}
	if all, ok := s["allOf"].([]any); ok {
		merged := map[string]any{}
		for k, v := range s {
			if k != "allOf" {
				merged[k] = v
			}
		}
		for _, x := range all {
			sub, _ := x.(map[string]any)
			if sub == nil {
				continue
			}
			sub = c.resolve(sub, depth+1)
			mergeInto(merged, sub)
		}
		s = merged
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		alts, ok := s[key].([]any)
		if !ok {
			continue
		}
		var kept []map[string]any
		for _, a := range alts {
			sub, _ := a.(map[string]any)
			if sub == nil {
				continue
			}
			sub = c.resolve(sub, depth+1)
			if sub == nil || typeOf(sub) == "null" {
				continue
			}
			kept = append(kept, sub)
		}
		rest := map[string]any{}
		for k, v := range s {
			if k != key {
				rest[k] = v
			}
		}
		switch {
		case len(kept) == 1:
			mergeInto(rest, kept[0])
			if d, ok := s["description"].(string); ok {
				rest["description"] = d
			}
			s = rest
		case len(kept) > 1 && sameType(kept):
			// One type, several shapes (enums, formats): the type, with
			// every enum value.
			mergeInto(rest, kept[0])
			var enum []any
			for _, k := range kept {
				e, ok := k["enum"].([]any)
				if !ok {
					enum = nil
					break
				}
				enum = append(enum, e...)
			}
			delete(rest, "enum")
			if enum != nil {
				rest["enum"] = enum
			}
			if d, ok := s["description"].(string); ok {
				rest["description"] = d
			}
			s = rest
		default:
			return nil // several types: den cannot say it
		}
	}
	if list, ok := s["type"].([]any); ok {
		var types []string
		for _, t := range list {
			if ts, ok := t.(string); ok && ts != "null" {
				types = append(types, ts)
			}
		}
		if len(types) != 1 {
			return nil
		}
		s2 := map[string]any{}
		for k, v := range s {
			s2[k] = v
		}
		s2["type"] = types[0]
		s = s2
	}
	return s
}

// lookup finds a local $ref.
func (c *converter) lookup(ref string) map[string]any {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		if ref == "#" {
			return c.root
		}
		return nil
	}
	var cur any = c.root
	for _, part := range strings.Split(p, "/") {
		part = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[part]
	}
	m, _ := cur.(map[string]any)
	return m
}

// mergeInto adds src's keywords to dst: properties and required are
// joined, others taken when dst has none.
func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		switch k {
		case "properties":
			props, _ := dst["properties"].(map[string]any)
			merged := map[string]any{}
			order, _ := props[orderKey].([]string)
			order = slices.Clone(order)
			for pk, pv := range props {
				merged[pk] = pv
			}
			if sp, ok := v.(map[string]any); ok {
				more, _ := sp[orderKey].([]string)
				for _, pk := range more {
					if !slices.Contains(order, pk) {
						order = append(order, pk)
					}
				}
				for pk, pv := range sp {
					merged[pk] = pv
				}
			}
			merged[orderKey] = order
			dst["properties"] = merged
		case "required":
			req, _ := dst["required"].([]any)
			if sr, ok := v.([]any); ok {
				for _, r := range sr {
					if !slices.Contains(req, r) {
						req = append(req, r)
					}
				}
			}
			dst["required"] = req
		default:
			if _, ok := dst[k]; !ok {
				dst[k] = v
			}
		}
	}
}

// typeOf is a schema's type, said or read from its keywords; "" for
// any value.
func typeOf(s map[string]any) string {
	if t, ok := s["type"].(string); ok {
		return t
	}
	switch {
	case s["properties"] != nil:
		return "object"
	case s["items"] != nil:
		return "array"
	}
	vals, _ := s["enum"].([]any)
	if c, ok := s["const"]; ok {
		vals = []any{c}
	}
	kind := ""
	for _, v := range vals {
		k := ""
		switch v.(type) {
		case string:
			k = "string"
		case json.Number:
			k = "number"
		case bool:
			k = "boolean"
		}
		if k == "" || (kind != "" && k != kind) {
			return ""
		}
		kind = k
	}
	return kind
}

func sameType(list []map[string]any) bool {
	t := typeOf(list[0])
	if t == "" || t == "object" || t == "array" {
		return false
	}
	for _, s := range list[1:] {
		if typeOf(s) != t {
			return false
		}
	}
	return true
}

// convert makes den's schema of s; ok is false when den cannot express
// it.
func (c *converter) convert(s map[string]any, depth int) (*tool.Schema, bool) {
	s = c.resolve(s, depth)
	if s == nil || depth > maxSchemaDepth {
		return nil, false
	}
	out := &tool.Schema{Type: typeOf(s)}
	desc, _ := s["description"].(string)
	if desc == "" {
		desc, _ = s["title"].(string)
	}
	var hints []string
	switch out.Type {
	case "string", "boolean":
	case "integer", "number":
		if n, ok := number(s["minimum"]); ok {
			out.Minimum = &n
		}
		if n, ok := number(s["maximum"]); ok {
			out.Maximum = &n
		}
	case "array":
		items, _ := s["items"].(map[string]any)
		if items == nil {
			return nil, false // any items: providers refuse an array without them
		}
		is, ok := c.convert(items, depth+1)
		if !ok {
			return nil, false
		}
		out.Items = is
	case "object":
		props, _ := s["properties"].(map[string]any)
		required := map[string]bool{}
		if req, ok := s["required"].([]any); ok {
			for _, r := range req {
				if name, ok := r.(string); ok {
					required[name] = true
				}
			}
		}
		var loose []string
		for _, name := range propertyOrder(s, props) {
			ps, _ := props[name].(map[string]any)
			var sub *tool.Schema
			ok := false
			if ps != nil {
				sub, ok = c.convert(ps, depth+1)
			}
			if !ok {
				d := ""
				if ps != nil {
					d, _ = ps["description"].(string)
				}
				l := fmt.Sprintf("%q", name)
				if required[name] {
					l += " (required)"
				}
				l += " takes any JSON value"
				if d != "" {
					l += ": " + oneLine(d)
				}
				loose = append(loose, l)
				delete(required, name)
				continue
			}
			out.Properties = append(out.Properties, tool.Property{Name: name, Schema: sub})
		}
		for _, p := range out.Properties {
			if required[p.Name] {
				out.Required = append(out.Required, p.Name)
			}
		}
		if ap, ok := s["additionalProperties"].(bool); ok && !ap && len(loose) == 0 {
			out.AdditionalProperties = &ap
		}
		if len(loose) > 0 {
			hints = append(hints, "also: "+strings.Join(loose, "; "))
		}
	default:
		return nil, false
	}
	if e, ok := s["enum"].([]any); ok {
		out.Enum = enumValues(e, out.Type)
	} else if cv, ok := s["const"]; ok {
		out.Enum = enumValues([]any{cv}, out.Type)
	}
	for _, k := range []string{"format", "pattern", "minLength", "maxLength", "minItems", "maxItems", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "default"} {
		if v, ok := s[k]; ok {
			b, _ := json.Marshal(v)
			hints = append(hints, k+" "+string(b))
		}
	}
	if len(hints) > 0 {
		if desc != "" {
			desc += " "
		}
		desc += "(" + strings.Join(hints, "; ") + ")"
	}
	out.Description = clip(desc, maxDescription)
	return out, true
}

// orderKey holds, in each object toAny makes, its keys in the order
// the JSON gave them (no JSON key holds a NUL).
const orderKey = "\x00order"

// toAny is n as encoding/json decodes with UseNumber, objects keeping
// their keys' order under orderKey.
func toAny(n *node) any {
	switch n.kind {
	case '{':
		m := make(map[string]any, len(n.keys)+1)
		for i, k := range n.keys {
			m[k] = toAny(n.vals[i])
		}
		m[orderKey] = slices.Clone(n.keys)
		return m
	case '[':
		a := make([]any, len(n.vals))
		for i, v := range n.vals {
			a[i] = toAny(v)
		}
		return a
	case '"':
		return n.str
	case '0':
		return n.num
	case 't':
		return n.b
	}
	return nil
}

// propertyOrder lists an object's properties: the required ones as
// "required" lists them, then the others in the order the schema gives
// them (lost when the schema was decoded into a Go map on its way
// here), then by name.
func propertyOrder(s, props map[string]any) []string {
	var names []string
	add := func(k string) {
		if _, ok := props[k]; ok && k != orderKey && !slices.Contains(names, k) {
			names = append(names, k)
		}
	}
	req, _ := s["required"].([]any)
	for _, r := range req {
		if k, ok := r.(string); ok {
			add(k)
		}
	}
	order, _ := props[orderKey].([]string)
	for _, k := range order {
		add(k)
	}
	var rest []string
	for k := range props {
		if k != orderKey && !slices.Contains(names, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	return append(names, rest...)
}

// enumValues keeps the enum values that fit typ, as den's validator
// compares them (numbers as float64).
func enumValues(vals []any, typ string) []any {
	var out []any
	for _, v := range vals {
		switch x := v.(type) {
		case string:
			if typ == "string" {
				out = append(out, x)
			}
		case bool:
			if typ == "boolean" {
				out = append(out, x)
			}
		case json.Number:
			if f, err := x.Float64(); err == nil && (typ == "number" || typ == "integer") {
				out = append(out, f)
			}
		}
	}
	return out
}

func number(v any) (float64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	f, err := n.Float64()
	return f, err == nil
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && (s[i]&0xC0) == 0x80 {
		i--
	}
	return s[:i] + "…"
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // den's own types always marshal
	}
	return b
}
