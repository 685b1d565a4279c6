package callfix

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/tool"
	"github.com/google/go-cmp/cmp"
)

var _ Catalog = (*tool.Registry)(nil)

func builtin(t testing.TB) *tool.Registry {
	t.Helper()
	reg, err := tool.NewRegistry(tool.Builtin()...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// catalog is a hand-made Catalog.
type catalog []llm.Tool

func (c catalog) Specs() []llm.Tool { return c }

func TestResolve(t *testing.T) {
	reg := builtin(t)
	tests := []struct {
		name, want string
	}{
		{"shell_execute", "shell_execute"},
		{"Shell_Execute", "shell_execute"},
		{"shell-execute", "shell_execute"},
		{"SHELL EXECUTE", "shell_execute"},
		{"functions.shell_execute", "shell_execute"},
		{"default_api:file_read", "file_read"},
		{"bash", "shell_execute"},
		{"shell", "shell_execute"},
		{"exec", "shell_execute"},
		{"Bash", "shell_execute"},
		{"read_file", "file_read"},
		{"write_file", "file_write"},
		{"edit-file", "file_edit"},
		{"str_replace", "file_edit"},
		{"image_read", "read_image"},
		{"file_raed", "file_read"},
		{"fileread", "file_read"},
		{"shell_exeucte", "shell_execute"},
		{"read_imag", "read_image"},
		{"file", ""}, // close to every file tool: ambiguous
		{"file_rite", "file_write"},
		{"browser_use", ""},  // not in the catalog
		{"", ""},             // no name
		{"sh_execute", ""},   // distance 3
		{"memory_write", ""}, // distance > 2 from everything
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call := &llm.ToolCall{ID: "1", Name: tt.name, Input: json.RawMessage(`{"path":"x","command":"ls","content":"","old_string":"a","new_string":"b"}`)}
			spec, note, err := resolve(call.Name, reg.Specs())
			if tt.want == "" {
				if !errors.Is(err, ErrUnknownTool) || !strings.Contains(err.Error(), "The available tools are: shell_execute, file_read") {
					t.Errorf("resolve(%q) = %q, %v; want ErrUnknownTool", tt.name, spec.Name, err)
				}
				return
			}
			if err != nil || spec.Name != tt.want {
				t.Fatalf("resolve(%q) = %q, %v; want %q", tt.name, spec.Name, err, tt.want)
			}
			if (note == "") != (tt.name == tt.want) {
				t.Errorf("note = %q", note)
			}
		})
	}
	// Aliases point only at tools that exist.
	if _, _, err := resolve("bash", catalog{{Name: "file_read"}}); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("bash without shell_execute: %v", err)
	}
	// A near miss must be unique.
	if _, _, err := resolve("foo_c", catalog{{Name: "foo_a"}, {Name: "foo_b"}}); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("ambiguous near miss: %v", err)
	}
}

func TestRepairJSON(t *testing.T) {
	tests := []struct {
		name, in, out    string
		truncated, lossy bool
		cutIn            string
	}{
		{name: "valid", in: `{"a":1,"b":[true,null,"x"]}`, out: `{"a":1,"b":[true,null,"x"]}`},
		{name: "empty", in: ``, out: `{}`},
		{name: "missing brace", in: `{"command":"ls -la"`, out: `{"command":"ls -la"}`, truncated: true, cutIn: "after a member"},
		{name: "missing brackets", in: `{"a":[1,2,{"b":"c"`, out: `{"a":[1,2,{"b":"c"}]}`, truncated: true, cutIn: "after a member"},
		{name: "dangling comma", in: `{"a":1,`, out: `{"a":1}`, truncated: true, cutIn: "after a comma"},
		{name: "unterminated string", in: `{"path":"/tmp/fi`, out: `{"path":"/tmp/fi"}`, truncated: true, lossy: true, cutIn: "inside a string"},
		{name: "cut escape", in: `{"a":"x\`, out: `{"a":"x"}`, truncated: true, lossy: true, cutIn: "inside a string"},
		{name: "cut unicode escape", in: `{"a":"x\u00`, out: `{"a":"x"}`, truncated: true, lossy: true, cutIn: "inside a string"},
		{name: "cut utf-8", in: "{\"a\":\"h\xc3", out: `{"a":"h"}`, truncated: true, lossy: true, cutIn: "inside a string"},
		{name: "cut key", in: `{"a":1,"tim`, out: `{"a":1}`, truncated: true, lossy: true, cutIn: "inside a field name"},
		{name: "key without colon", in: `{"a":1,"timeout"`, out: `{"a":1}`, truncated: true, lossy: true, cutIn: "after a field name"},
		{name: "key without value", in: `{"a":1,"timeout": `, out: `{"a":1}`, truncated: true, lossy: true, cutIn: "before a field's value"},
		{name: "first member cut", in: `{"com`, out: `{}`, truncated: true, lossy: true, cutIn: "inside a field name"},
		{name: "cut number", in: `{"n":12`, out: `{"n":12}`, truncated: true, lossy: true, cutIn: "inside a number"},
		{name: "cut number dot", in: `{"n":1.`, out: `{"n":1}`, truncated: true, lossy: true, cutIn: "inside a number"},
		{name: "cut minus", in: `{"n":-`, out: `{}`, truncated: true, lossy: true, cutIn: "inside a number"},
		{name: "cut literal", in: `{"b":tr`, out: `{"b":true}`, truncated: true, cutIn: "inside true"},
		{name: "cut in array", in: `{"a":["x","y`, out: `{"a":["x","y"]}`, truncated: true, lossy: true, cutIn: "inside a string"},
		{name: "trailing commas", in: `{"a":[1,2,],"b":3,}`, out: `{"a":[1,2],"b":3}`},
		{name: "raw newline", in: "{\"c\":\"a\nb\tc\"}", out: `{"c":"a\nb\tc"}`},
		{name: "bad escape", in: `{"re":"\d+\.go"}`, out: `{"re":"\\d+\\.go"}`},
		{name: "python literals", in: `{"a":True,"b":None}`, out: `{"a":true,"b":null}`},
		{name: "extra closer", in: `{"a":1}}`, out: `{"a":1}`},
		{name: "escaped quote kept", in: `{"a":"say \"hi\""}`, out: `{"a":"say \"hi\""}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, serr := repairJSON([]byte(tt.in))
			if serr != nil {
				t.Fatalf("repairJSON(%q): %v", tt.in, serr)
			}
			if string(got.out) != tt.out || got.truncated != tt.truncated || got.lossy != tt.lossy || got.cutIn != tt.cutIn {
				t.Errorf("repairJSON(%q) = %s truncated=%v lossy=%v cut %q; want %s %v %v %q",
					tt.in, got.out, got.truncated, got.lossy, got.cutIn, tt.out, tt.truncated, tt.lossy, tt.cutIn)
			}
			if !json.Valid(got.out) {
				t.Errorf("output %s is not valid JSON", got.out)
			}
		})
	}
}

func TestRepairJSONErrors(t *testing.T) {
	tests := []struct {
		in  string
		off int
	}{
		{`{"a" 1}`, 5},
		{`{a:1}`, 1},
		{`{'a':1}`, 1},
		{`{"a":1 "b":2}`, 7},
		{`{"a":01}`, 5},
		{`{"a":ls -la}`, 5},
		{`{"a":1} trailing`, 8},
		{`{"a":[1 2]}`, 8},
		{strings.Repeat("[", 300), 201},
	}
	for _, tt := range tests {
		_, serr := repairJSON([]byte(tt.in))
		if serr == nil || serr.Off != tt.off {
			t.Errorf("repairJSON(%.30q) = %v; want an error at %d", tt.in, serr, tt.off)
		}
	}
}

func TestFix(t *testing.T) {
	reg := builtin(t)
	tests := []struct {
		name      string
		tool      string
		input     string
		wantName  string
		wantInput string // "" with no error: the call comes back unchanged
		note      string // a substring of the note
		err       error
		errText   string // a substring of the error
	}{
		{name: "valid call unchanged", tool: "shell_execute", input: `{"command":"ls","tool_title":"List"}`},
		{name: "alias", tool: "bash", input: `{"command":"ls"}`, wantName: "shell_execute", wantInput: `{"command":"ls"}`, note: `"bash" was read as shell_execute`},
		{name: "integer from string", tool: "shell_execute", input: `{"command":"sleep 1","timeout":"5"}`, wantInput: `{"command":"sleep 1","timeout":5}`, note: `timeout: the string "5" was read as the number 5`},
		{name: "integer from 5.0", tool: "file_read", input: `{"path":"a","lines":5.0}`, wantInput: `{"lines":5,"path":"a"}`, note: "read as the integer 5"},
		{name: "bool from string", tool: "file_write", input: `{"path":"a","content":"x","append":"true"}`, wantInput: `{"append":true,"content":"x","path":"a"}`, note: "read as true"},
		{name: "bool from False", tool: "file_edit", input: `{"path":"a","old_string":"x","new_string":"y","replace_all":" False "}`, wantInput: `{"new_string":"y","old_string":"x","path":"a","replace_all":false}`},
		{name: "string from number", tool: "file_write", input: `{"path":"n.txt","content":42}`, wantInput: `{"content":"42","path":"n.txt"}`, note: `the number 42 was read as the string "42"`},
		{name: "string from bool", tool: "file_write", input: `{"path":"n.txt","content":true}`, wantInput: `{"content":"true","path":"n.txt"}`},
		{name: "title number", tool: "shell_execute", input: `{"command":"ls","tool_title":7}`, wantInput: `{"command":"ls","tool_title":"7"}`},
		{name: "arguments as a JSON string", tool: "shell_execute", input: `"{\"command\":\"ls\"}"`, wantInput: `{"command":"ls"}`, note: "inside a string"},
		{name: "misnamed field", tool: "file_read", input: `{"file_path":"a.txt"}`, wantInput: `{"path":"a.txt"}`, note: `file_path: the field was read as "path"`},
		{name: "field case", tool: "shell_execute", input: `{"Command":"ls"}`, wantInput: `{"command":"ls"}`},
		{name: "html kept readable", tool: "shell_execute", input: `{"command":"a && b > c","timeout":"3"}`, wantInput: `{"command":"a && b > c","timeout":3}`},
		{name: "missing brace runs", tool: "shell_execute", input: `{"command":"ls -la"`, wantInput: `{"command":"ls -la"}`, note: "lacked its closing brackets"},
		{name: "cut read runs, flagged", tool: "file_read", input: `{"path":"/workspace/READ`, wantInput: `{"path":"/workspace/READ"}`, note: TruncatedNote},
		{name: "cut optional member dropped", tool: "file_read", input: `{"path":"a.txt","off`, wantInput: `{"path":"a.txt"}`, note: TruncatedNote},
		{name: "code fence", tool: "shell_execute", input: "```json\n{\"command\":\"ls\"}\n```", wantInput: `{"command":"ls"}`, note: "code fence"},
		{name: "trailing comma", tool: "shell_execute", input: `{"command":"ls",}`, wantInput: `{"command":"ls"}`, note: "trailing commas"},
		{name: "raw newline", tool: "shell_execute", input: "{\"command\":\"echo a\necho b\"}", wantInput: `{"command":"echo a\necho b"}`},

		{name: "cut file_write refused", tool: "file_write", input: `{"path":"main.go","content":"package main\n\nfunc main() {`, err: ErrTruncated, errText: "file_write for main.go was NOT executed"},
		{name: "file_write missing only the brace refused", tool: "file_write", input: `{"path":"a","content":"done"`, err: ErrTruncated, errText: "append=true"},
		{name: "cut file_edit refused", tool: "file_edit", input: `{"path":"a.go","old_string":"x","new_string":"long`, err: ErrTruncated, errText: "file_edit for a.go was NOT executed"},
		{name: "aliased cut write refused", tool: "write_file", input: `{"path":"a","content":"abc`, err: ErrTruncated},
		{name: "cut command refused", tool: "shell_execute", input: `{"command":"rm -rf /tmp/build/ca`, err: ErrTruncated, errText: "shell_execute was NOT executed"},
		{name: "malformed", tool: "shell_execute", input: `{"command": ls -la}`, err: ErrMalformed, errText: "at byte 12 (line 1, column 13)"},
		{name: "malformed multiline", tool: "shell_execute", input: "{\n  \"command\": \"ls\"\n  \"timeout\": 5\n}", err: ErrMalformed, errText: "line 3, column 3"},
		{name: "not an object", tool: "shell_execute", input: `["ls"]`, err: ErrMalformed, errText: "must be one JSON object, got an array"},
		{name: "empty arguments", tool: "shell_execute", input: ``, err: ErrInvalid, errText: `Tool call rejected before execution: shell_execute was called with empty arguments, but "command" is required. Do not retry`},
		{name: "empty object", tool: "file_edit", input: `{}`, err: ErrInvalid, errText: `"path", "old_string" and "new_string" are required`},
		{name: "still invalid", tool: "shell_execute", input: `{"command":"ls","timeout":"soon"}`, err: ErrInvalid, errText: `timeout: want an integer, got the string "soon"`},
		{name: "out of range", tool: "shell_execute", input: `{"command":"ls","timeout":"0"}`, err: ErrInvalid, errText: "below the minimum"},
		{name: "unknown field", tool: "shell_execute", input: `{"command":"ls","cwd":"/"}`, err: ErrInvalid, errText: `unknown field "cwd"`},
		{name: "fractional integer", tool: "file_read", input: `{"path":"a","lines":2.5}`, err: ErrInvalid},
		{name: "unknown tool", tool: "browser_use", input: `{}`, err: ErrUnknownTool, errText: `Unknown tool "browser_use"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call := &llm.ToolCall{ID: "call_1", Name: tt.tool, Input: json.RawMessage(tt.input), Signature: "sig", API: "gemini"}
			orig := *call
			fixed, note, err := Fix(call, reg)
			if diff := cmp.Diff(orig, *call); diff != "" {
				t.Fatalf("Fix modified its argument:\n%s", diff)
			}
			if tt.err != nil {
				if !errors.Is(err, tt.err) || !strings.Contains(err.Error(), tt.errText) || fixed != nil {
					t.Fatalf("Fix = %v, %q, %v; want %v containing %q", fixed, note, err, tt.err, tt.errText)
				}
				return
			}
			if err != nil {
				t.Fatalf("Fix: %v", err)
			}
			if tt.wantInput == "" && tt.wantName == "" {
				if fixed != call || note != "" {
					t.Errorf("Fix = %+v, %q; want the call unchanged", fixed, note)
				}
				return
			}
			wantName := tt.wantName
			if wantName == "" {
				wantName = tt.tool
			}
			if fixed.Name != wantName || string(fixed.Input) != tt.wantInput || fixed.ID != "call_1" || fixed.Signature != "sig" || fixed.API != "gemini" {
				t.Errorf("Fix = %s %s (id %s); want %s %s", fixed.Name, fixed.Input, fixed.ID, wantName, tt.wantInput)
			}
			if !strings.Contains(note, tt.note) || note == "" {
				t.Errorf("note = %q; want it to contain %q", note, tt.note)
			}
			checkValid(t, reg, fixed)
		})
	}
}

func TestEnumCase(t *testing.T) {
	cat := catalog{{Name: "http", Schema: json.RawMessage(`{"type":"object","properties":{"method":{"type":"string","enum":["GET","POST"]},"tags":{"type":"array","items":{"type":"integer"}},"opts":{"type":"object","properties":{"n":{"type":"number"}}}},"required":["method"]}`)}}
	fixed, note, err := Fix(&llm.ToolCall{Name: "http", Input: json.RawMessage(`{"method":"post","tags":"[\"1\", 2]","opts":"{\"n\":\"1.5\"}"}`)}, cat)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"method":"POST","opts":{"n":1.5},"tags":[1,2]}`; string(fixed.Input) != want {
		t.Errorf("input = %s, want %s (note %q)", fixed.Input, want, note)
	}
	checkValid(t, cat, fixed)
}

// A tool whose schema den cannot read still gets its name and JSON
// repaired, with no validation.
func TestUnreadableSchema(t *testing.T) {
	cat := catalog{{Name: "read"}, {Name: "write"}}
	fixed, _, err := Fix(&llm.ToolCall{Name: "Read", Input: json.RawMessage(`{"x":"1"`)}, cat)
	if err != nil || fixed.Name != "read" || string(fixed.Input) != `{"x":"1"}` {
		t.Errorf("Fix = %+v, %v", fixed, err)
	}
}

// checkValid asserts the registry's view of a fixed call: a known tool
// and an input object that passes the schema.
func checkValid(t testing.TB, tools Catalog, call *llm.ToolCall) {
	t.Helper()
	var spec *llm.Tool
	for _, s := range tools.Specs() {
		if s.Name == call.Name {
			spec = &s
		}
	}
	if spec == nil {
		t.Fatalf("fixed call names %q, not in the catalog", call.Name)
	}
	dec := json.NewDecoder(bytes.NewReader(call.Input))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		t.Fatalf("fixed input %q is not one JSON value: %v", call.Input, err)
	}
	if _, ok := v.(map[string]any); !ok {
		t.Fatalf("fixed input %s is not an object", call.Input)
	}
	schema, err := tool.ParseSchema(spec.Schema)
	if err != nil {
		return
	}
	if err := schema.Validate(v); err != nil {
		t.Fatalf("fixed input %s fails the schema: %v", call.Input, err)
	}
}

// seeds are complete, valid calls: every prefix and some mutations of
// them are checked.
var seeds = []struct{ tool, input string }{
	{"shell_execute", `{"command":"cat > /tmp/x.sh <<'EOF'\necho \"hi\" \\\n  there\nEOF","timeout":"30","tool_title":"Write a script"}`},
	{"file_write", `{"path":"/workspace/main.go","content":"package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"héllo ✓\") }\n","append":false}`},
	{"file_edit", `{"path":"a.go","old_string":"x := 1","new_string":"x := 2","replace_all":"true"}`},
	{"file_read", `{"path":"log.txt","offset":10,"lines":"20","max_chars":1000}`},
	{"read_image", `{"path":"shot.png","tool_title":"Look"}`},
	{"bash", `{"cmd":"ls -la","timeout":5}`},
	{"read_file", `{"file_path":"x","offset":1.0}`},
}

// TestEveryPrefix cuts each seed at every byte: Fix must not panic, a
// cut file_write or file_edit must never run, and whatever runs must
// be valid.
func TestEveryPrefix(t *testing.T) {
	reg := builtin(t)
	for _, s := range seeds {
		for n := 0; n <= len(s.input); n++ {
			call := &llm.ToolCall{ID: "1", Name: s.tool, Input: json.RawMessage(s.input[:n])}
			fixed, note, err := Fix(call, reg)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || e.Msg == "" {
					t.Fatalf("%s %q: error %v is not a *Error", s.tool, s.input[:n], err)
				}
				continue
			}
			if n < len(s.input) && (fixed.Name == "file_write" || fixed.Name == "file_edit") {
				t.Fatalf("%s cut at %d ran: %s (note %q)", s.tool, n, fixed.Input, note)
			}
			if n < len(s.input) && fixed.Name == "shell_execute" && strings.HasPrefix(note, TruncatedNote) {
				t.Fatalf("a cut shell command ran: %s", fixed.Input)
			}
			checkValid(t, reg, fixed)
		}
		if _, _, err := Fix(&llm.ToolCall{Name: s.tool, Input: json.RawMessage(s.input)}, reg); err != nil {
			t.Errorf("the complete seed %s %s fails: %v", s.tool, s.input, err)
		}
	}
}

func FuzzFix(f *testing.F) {
	for _, s := range seeds {
		f.Add(s.tool, s.input)
	}
	for _, in := range []string{``, `{`, `"`, `{"a":[`, `{"command":"\u12`, `[1,2`, `nul`, `{"x":1}}}`, "```\n{}\n```", `"{\"command\":1}"`, `{"command":"ls","timeout":"1e3"}`} {
		f.Add("shell_execute", in)
	}
	reg := builtin(f)
	f.Fuzz(func(t *testing.T, name, input string) {
		call := &llm.ToolCall{ID: "1", Name: name, Input: json.RawMessage(input)}
		fixed, _, err := Fix(call, reg)
		if err != nil {
			if fixed != nil {
				t.Fatal("a fixed call with an error")
			}
			return
		}
		checkValid(t, reg, fixed)
	})
}

func BenchmarkFix(b *testing.B) {
	reg := builtin(b)
	call := &llm.ToolCall{Name: "shell_execute", Input: json.RawMessage(`{"command":"go test ./...","timeout":"120"}`)}
	for b.Loop() {
		Fix(call, reg)
	}
}
