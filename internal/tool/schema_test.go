package tool_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"den.dev/den/internal/tool"
)

const testSchema = `{
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "count": {"type": "integer", "minimum": 1, "maximum": 10},
    "ratio": {"type": "number"},
    "on": {"type": "boolean"},
    "mode": {"type": "string", "enum": ["fast", "slow"]},
    "tags": {"type": "array", "items": {"type": "string"}},
    "opts": {"type": "object", "properties": {"deep": {"type": "boolean"}}, "required": ["deep"], "additionalProperties": false}
  },
  "required": ["name"],
  "additionalProperties": false
}`

func TestSchemaValidate(t *testing.T) {
	s, err := tool.ParseSchema(json.RawMessage(testSchema))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		input string
		want  []string // substrings of the error; none: valid
	}{
		{`{"name": "a"}`, nil},
		{`{"name": "a", "count": 3, "ratio": 0.5, "on": true, "mode": "fast", "tags": ["x"], "opts": {"deep": false}}`, nil},
		{`{"name": "a", "count": null}`, nil},
		{`{}`, []string{`missing required field "name"`}},
		{`{"name": null}`, []string{`missing required field "name"`}},
		{`{"name": 5}`, []string{"name: want a string, got the number 5"}},
		{`{"name": "a", "count": "3"}`, []string{`count: want an integer, got the string "3"`}},
		{`{"name": "a", "count": 2.5}`, []string{"count: want an integer, got 2.5"}},
		{`{"name": "a", "count": 0}`, []string{"count: 0 is below the minimum 1"}},
		{`{"name": "a", "count": 11}`, []string{"count: 11 is above the maximum 10"}},
		{`{"name": "a", "ratio": "x"}`, []string{"ratio: want a number"}},
		{`{"name": "a", "on": "yes"}`, []string{"on: want true or false"}},
		{`{"name": "a", "mode": "medium"}`, []string{`mode: "medium" is not one of "fast", "slow"`}},
		{`{"name": "a", "tags": "x"}`, []string{"tags: want an array"}},
		{`{"name": "a", "tags": ["x", 1]}`, []string{"tags[1]: want a string"}},
		{`{"name": "a", "opts": {}}`, []string{`missing required field "deep" in opts`}},
		{`{"name": "a", "opts": {"deep": true, "x": 1}}`, []string{`unknown field "x" in opts (allowed: deep)`}},
		{`{"name": "a", "nmae": "b", "zz": 1}`, []string{`unknown fields "nmae", "zz" (allowed: name, count, ratio, on, mode, tags, opts)`}},
		{`{"count": 0, "x": 1}`, []string{`missing required field "name"`, "count: 0 is below", `unknown field "x"`}},
	}
	for _, tt := range tests {
		dec := json.NewDecoder(strings.NewReader(tt.input))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		err := s.Validate(v)
		if len(tt.want) == 0 {
			if err != nil {
				t.Errorf("%s: unexpected error %v", tt.input, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: no error, want %q", tt.input, tt.want)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not contain %q", tt.input, err, w)
			}
		}
	}
}

func TestSchemaKeepsOrder(t *testing.T) {
	s, err := tool.ParseSchema(json.RawMessage(testSchema))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	json.Compact(&compact, []byte(testSchema))
	if string(b) != compact.String() {
		t.Errorf("round trip:\n got %s\nwant %s", b, compact.String())
	}
}

func TestParseSchemaRejects(t *testing.T) {
	for _, s := range []string{
		`{"type": "string"}`,
		`{"type": "object", "properties": {"a": {"type": "date"}}}`,
		`{"type": "object", "required": ["a"]}`,
		`[1]`,
	} {
		if _, err := tool.ParseSchema(json.RawMessage(s)); err == nil {
			t.Errorf("%s: accepted", s)
		}
	}
}

func TestBuiltinSchemas(t *testing.T) {
	r, err := tool.NewRegistry(tool.Builtin()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, spec := range r.Specs() {
		s, err := tool.ParseSchema(spec.Schema)
		if err != nil {
			t.Errorf("%s: %v", spec.Name, err)
			continue
		}
		if ts := s.Properties.Get(tool.TitleField); ts == nil || ts.Type != "string" {
			t.Errorf("%s: no tool_title in the schema shown to the model", spec.Name)
		}
		for _, r := range s.Required {
			if r == tool.TitleField {
				t.Errorf("%s: tool_title is required", spec.Name)
			}
		}
	}
	if _, err := tool.NewRegistry(tool.FileRead{}, tool.FileRead{}); err == nil {
		t.Error("duplicate tool accepted")
	}
}

func TestResolvePath(t *testing.T) {
	for in, want := range map[string]string{
		"a.txt":            "/workspace/a.txt",
		"./sub/../b":       "/workspace/b",
		"/etc/passwd":      "/etc/passwd",
		"~":                "/root",
		"~/notes.md":       "/root/notes.md",
		"/workspace//x/./": "/workspace/x",
		"../tmp/x":         "/tmp/x",
	} {
		if got := tool.ResolvePath(in); got != want {
			t.Errorf("ResolvePath(%q) = %q, want %q", in, got, want)
		}
	}
}
