package mcpclient

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/anthropic"
	"den.dev/den/internal/llm/gemini"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/llm/openai"
	"den.dev/den/internal/llm/openairesponses"
	"den.dev/den/internal/tool"
)

// hostile holds what MCP servers send that den's subset cannot say
// as it is: a schema as zod-to-json-schema writes it, $refs, a
// nullable field, a union of types, an array without items, an enum
// without a type, allOf, const, and a recursive type.
const hostile = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "properties": {
    "query": {"type": "string", "minLength": 1, "description": "What to look for"},
    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
    "since": {"type": ["string", "null"], "format": "date-time"},
    "sort": {"anyOf": [{"type": "string", "enum": ["asc"]}, {"type": "string", "enum": ["desc"]}]},
    "mode": {"enum": ["fast", "exact"]},
    "owner": {"$ref": "#/$defs/person"},
    "value": {"anyOf": [{"type": "string"}, {"type": "number"}], "description": "A string or a number"},
    "tags": {"type": "array"},
    "kind": {"const": "issue"},
    "filter": {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}, {"properties": {"b": {"type": "boolean"}}}]},
    "tree": {"$ref": "#/$defs/node"},
    "labels": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "null"}]}}
  },
  "required": ["query", "value"],
  "additionalProperties": false,
  "$defs": {
    "person": {"type": "object", "properties": {"login": {"type": "string"}}, "required": ["login"]},
    "node": {"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}
  }
}`

// TestConvertSchema: what den can say is kept as it is (order too),
// what it cannot check is said in descriptions, what it cannot say at
// all moves to the description with the object left open, and the
// result is a schema den's registry takes.
func TestConvertSchema(t *testing.T) {
	s, err := convertSchema(json.RawMessage(hostile))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tool.ParseSchema(mustJSON(s)); err != nil {
		t.Fatalf("den's parser refuses the result: %v", err)
	}
	var names []string
	for _, p := range s.Properties {
		names = append(names, p.Name+":"+p.Schema.Type)
	}
	if got := strings.Join(names, " "); got != "query:string limit:integer since:string sort:string mode:string owner:object kind:string filter:object tree:object labels:array" {
		t.Errorf("properties: %s", got)
	}
	if fmt.Sprint(s.Required) != "[query]" {
		t.Errorf("required %v (value, which den cannot say, is left to the description)", s.Required)
	}
	if s.AdditionalProperties != nil {
		t.Error("additionalProperties false kept, so the model could not send value")
	}
	for _, want := range []string{`"value" (required) takes any JSON value: A string or a number`, `"tags" takes any JSON value`} {
		if !strings.Contains(s.Description, want) {
			t.Errorf("the description does not say %s: %q", want, s.Description)
		}
	}
	get := func(name string) *tool.Schema { return s.Properties.Get(name) }
	if d := get("query").Description; d != `What to look for (minLength 1)` {
		t.Errorf("query: %q", d)
	}
	if l := get("limit"); *l.Minimum != 1 || *l.Maximum != 100 || l.Description != "(default 10)" {
		t.Errorf("limit: %+v %q", l, l.Description)
	}
	if d := get("since").Description; d != `(format "date-time")` {
		t.Errorf("since: %q", d)
	}
	if e := get("sort").Enum; fmt.Sprint(e) != "[asc desc]" {
		t.Errorf("sort: %v", e)
	}
	if e := get("kind").Enum; fmt.Sprint(e) != "[issue]" {
		t.Errorf("kind: %v", e)
	}
	if o := get("owner"); o.Properties.Get("login") == nil || fmt.Sprint(o.Required) != "[login]" {
		t.Errorf("owner: %+v", o)
	}
	if f := get("filter"); f.Properties.Get("a") == nil || f.Properties.Get("b") == nil || fmt.Sprint(f.Required) != "[a]" {
		t.Errorf("filter: %+v", f)
	}
	if l := get("labels"); l.Items == nil || l.Items.Type != "string" {
		t.Errorf("labels: %+v", l)
	}
	// The recursive type ends where den stops following it.
	depth := 0
	for n := get("tree"); n != nil; depth++ {
		c := n.Properties.Get("children")
		if c == nil {
			break
		}
		n = c.Items
	}
	if depth < 3 || depth > maxSchemaDepth {
		t.Errorf("the recursive type is followed %d levels", depth)
	}

	// What den validates against is what it shows: a call the server
	// would take passes, a wrong type is refused.
	ok := map[string]any{"query": "x", "value": json.Number("3"), "limit": json.Number("5"), "owner": map[string]any{"login": "me"}}
	if err := s.Validate(ok); err != nil {
		t.Errorf("a good call: %v", err)
	}
	bad := map[string]any{"query": json.Number("1"), "mode": "slow"}
	if err := s.Validate(bad); err == nil || !strings.Contains(err.Error(), "query: want a string") || !strings.Contains(err.Error(), `"slow" is not one of`) {
		t.Errorf("a bad call: %v", err)
	}
}

func TestConvertSchemaEdges(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{``, `{"type":"object"}`},
		{`{}`, `{"type":"object"}`},
		{`{"type": "object", "properties": {}}`, `{"type":"object"}`},
		{`{"properties": {"a": {"type": "string"}}}`, `{"type":"object","properties":{"a":{"type":"string"}}}`},
		{`{"type": "object", "required": ["missing"]}`, `{"type":"object"}`},
		{`{"type": "object", "properties": {"n": {"type": "number", "enum": [1, 2.5, "x"]}}}`, `{"type":"object","properties":{"n":{"type":"number","enum":[1,2.5]}}}`},
	} {
		s, err := convertSchema(json.RawMessage(tt.in))
		if err != nil {
			t.Errorf("%s: %v", tt.in, err)
			continue
		}
		if got := string(mustJSON(s)); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.in, got, tt.want)
		}
	}
	for _, in := range []string{`{"type": "string"}`, `[1]`, `{"type": ["string", "integer"]}`} {
		if _, err := convertSchema(json.RawMessage(in)); err == nil {
			t.Errorf("%s: converted", in)
		}
	}
}

// TestSchemasReachEveryProvider: tools with converted schemas and
// names from ModelNames are sent to each provider's fake, which refuses
// what the real API refuses.
func TestSchemasReachEveryProvider(t *testing.T) {
	s, err := convertSchema(json.RawMessage(hostile))
	if err != nil {
		t.Fatal(err)
	}
	names := ModelNames([]ToolRef{{"github", "search.issues"}, {"github", "search_issues"}, {"a-very-long-server-name-indeed", "a_tool_with_a_name_well_past_the_limit"}})
	var tools []llm.Tool
	for _, n := range names {
		tools = append(tools, llm.Tool{Name: n, Description: "d", Schema: mustJSON(s)})
	}
	targets := []struct {
		name, model string
		fake        func(testing.TB, ...llmtest.Turn) *llmtest.Server
		open        func(url string) (llm.Model, error)
	}{
		{"anthropic", "claude-sonnet-4-5", llmtest.NewAnthropic, func(u string) (llm.Model, error) {
			return anthropic.New(llm.Provider{Name: "a", Type: "anthropic", BaseURL: u, APIKey: "k"})
		}},
		{"openai", "gpt-5", llmtest.NewOpenAI, func(u string) (llm.Model, error) {
			return openai.New(llm.Provider{Name: "o", Type: "openai", BaseURL: u + "/v1", APIKey: "k"})
		}},
		{"openai-responses", "gpt-5", llmtest.NewResponses, func(u string) (llm.Model, error) {
			return openairesponses.New(llm.Provider{Name: "r", Type: "openai-responses", BaseURL: u + "/v1", APIKey: "k"})
		}},
		{"gemini", "gemini-2.5-pro", llmtest.NewGemini, func(u string) (llm.Model, error) {
			return gemini.New(llm.Provider{Name: "g", Type: "gemini", BaseURL: u, APIKey: "k"})
		}},
	}
	for _, tg := range targets {
		fake := tg.fake(t, llmtest.Turn{Text: "ok"})
		m, err := tg.open(fake.URL)
		if err != nil {
			t.Fatal(err)
		}
		req := &llm.Request{Model: tg.model, MaxTokens: 100, Tools: tools, Messages: []llm.Message{{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "hi"}}}}}
		for _, err := range m.Stream(context.Background(), req) {
			if err != nil {
				t.Errorf("%s: %v", tg.name, err)
				break
			}
		}
	}
}

func TestModelNames(t *testing.T) {
	refs := []ToolRef{
		{"everything", "echo"},
		{"everything", "get-tiny-image"},
		{"github", "search.issues"}, {"github", "search_issues"}, // one name once sanitized
		{"a", "b__c"}, {"a__b", "c"}, // one name as written
		{"files", "read.file"},
		{"a-very-long-server-name-indeed", "a_tool_with_a_name_well_past_the_limit"},
		{"x", "naïve tool"},
	}
	got := ModelNames(refs)
	if got[ToolRef{"everything", "echo"}] != "mcp__everything__echo" || got[ToolRef{"everything", "get-tiny-image"}] != "mcp__everything__get-tiny-image" {
		t.Errorf("plain names changed: %v", got)
	}
	if got[ToolRef{"files", "read.file"}] != "mcp__files__read_file" {
		t.Errorf("a name sanitized without a clash: %s", got[ToolRef{"files", "read.file"}])
	}
	seen := map[string]ToolRef{}
	for r, n := range got {
		if !strings.HasPrefix(n, Prefix) || len(n) > 64 || strings.Trim(n, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != "" {
			t.Errorf("%v: %q is not a name every provider takes", r, n)
		}
		if o, dup := seen[n]; dup {
			t.Errorf("%v and %v share %s", r, o, n)
		}
		seen[n] = r
	}
	for _, r := range []ToolRef{{"github", "search.issues"}, {"github", "search_issues"}, {"a", "b__c"}, {"a__b", "c"}} {
		if n := got[r]; !strings.HasPrefix(n, "mcp__"+sanitize(r.Server)+"__") || len(n) != len("mcp__"+sanitize(r.Server)+"__"+sanitize(r.Tool))+9 {
			t.Errorf("%v: %s, want its name and a hash", r, n)
		}
	}
	// The order the refs come in changes nothing.
	rev := make([]ToolRef, len(refs))
	for i, r := range refs {
		rev[len(refs)-1-i] = r
	}
	for r, n := range ModelNames(rev) {
		if got[r] != n {
			t.Errorf("%v: %s in one order, %s in the other", r, got[r], n)
		}
	}
}
