package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"den.dev/den/internal/llm"
)

// TitleField is the optional input field, accepted by every tool, that
// labels a call for the user.
const TitleField = "tool_title"

var titleSchema = &Schema{
	Type:        "string",
	Description: "A short label for this call (3-8 words, in the user's language), shown to the user.",
}

// Registry is the set of tools of a session. It validates calls before
// a tool sees them and turns every failure of a call into a result the
// model can act on. It is safe for concurrent use.
type Registry struct {
	tools   map[string]Tool
	schemas map[string]*Schema // the tool's own schema
	specs   []llm.Tool         // with tool_title added
	names   []string
}

// NewRegistry makes a registry of tools, in the order given. It fails
// when two tools share a name or a schema is not a supported object
// schema.
func NewRegistry(tools ...Tool) (*Registry, error) {
	r := &Registry{tools: make(map[string]Tool), schemas: make(map[string]*Schema)}
	for _, t := range tools {
		spec := t.Spec()
		if _, dup := r.tools[spec.Name]; dup {
			return nil, fmt.Errorf("tool: duplicate tool %q", spec.Name)
		}
		s, err := ParseSchema(spec.Schema)
		if err != nil {
			return nil, fmt.Errorf("tool: %s: %w", spec.Name, err)
		}
		shown := *s
		if s.Properties.Get(TitleField) == nil {
			shown.Properties = append(append(Properties(nil), s.Properties...), Property{Name: TitleField, Schema: titleSchema})
		}
		spec.Schema, err = json.Marshal(&shown)
		if err != nil {
			return nil, fmt.Errorf("tool: %s: %w", spec.Name, err)
		}
		r.tools[spec.Name] = t
		r.schemas[spec.Name] = s
		r.specs = append(r.specs, spec)
		r.names = append(r.names, spec.Name)
	}
	return r, nil
}

// Specs returns the tools as the model sees them, tool_title included.
func (r *Registry) Specs() []llm.Tool {
	return append([]llm.Tool(nil), r.specs...)
}

// Tool returns the named tool.
func (r *Registry) Tool(name string) (Tool, bool) {
	t, ok := r.tools[name]
	return t, ok
}

// ReadOnly reports whether call may run beside the other calls of its
// turn: its tool knows it and its input is valid. A call that will fail
// validation counts as read-only, since it will change nothing.
func (r *Registry) ReadOnly(call llm.ToolCall) bool {
	t, ok := r.tools[call.Name]
	if !ok {
		return true
	}
	input, problem := r.prepare(call)
	if problem != "" {
		return true
	}
	return t.ReadOnly(input)
}

// Call runs one tool call against env and answers it. Unknown tools,
// malformed or invalid input and a panicking tool all give an error
// result for the model. concurrent says the call runs beside other
// calls of its turn (shell commands then run as fresh processes).
//
// The error is for what must end the turn — the computer is gone, ctx
// was canceled — and the result then still describes the failure, for
// a caller that records it. The registry runs what it is given; a
// caller running calls concurrently must keep writes to one file in
// call order (run only ReadOnly calls side by side, or run writes one
// after another in the order the model made them).
func (r *Registry) Call(ctx context.Context, env *Env, call llm.ToolCall, concurrent bool) (llm.ToolResult, error) {
	res, _, err := r.Run(ctx, env, call, concurrent)
	return res, err
}

// Run is Call that also returns a shell command's exit status (nil for
// other tools, and for calls that did not run).
func (r *Registry) Run(ctx context.Context, env *Env, call llm.ToolCall, concurrent bool) (llm.ToolResult, *int, error) {
	res, err := r.call(ctx, env, call, concurrent)
	return llm.ToolResult{CallID: call.ID, Name: call.Name, Content: res.Content, IsError: res.IsError}, res.ExitCode, err
}

func (r *Registry) call(ctx context.Context, env *Env, call llm.ToolCall, concurrent bool) (res Result, err error) {
	t, ok := r.tools[call.Name]
	if !ok {
		return Errorf("Unknown tool %q. The available tools are: %s.", call.Name, strings.Join(r.names, ", ")), nil
	}
	input, problem := r.prepare(call)
	if problem != "" {
		return Errorf("Invalid input for %s: %s. Fix the input and call the tool again.", call.Name, problem), nil
	}
	e := *env
	e.Concurrent = concurrent
	defer func() {
		if p := recover(); p != nil {
			res, err = Errorf("%s failed with an internal error (%v); this is a bug in den, not in your input.", call.Name, p), nil
		}
	}()
	res, err = t.Run(ctx, &e, input)
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return Errorf("%s was canceled.", call.Name), err
		}
		return Errorf("%s could not run: %v", call.Name, err), err
	}
	if len(res.Content) == 0 {
		res.Content = []llm.Part{&llm.Text{Text: "(no output)"}}
	}
	return res, nil
}

// prepare decodes a call's input, drops tool_title and validates the
// rest, returning the input the tool gets or a problem for the model.
func (r *Registry) prepare(call llm.ToolCall) (json.RawMessage, string) {
	raw := bytes.TrimSpace(call.Input)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, "the input is not valid JSON (" + err.Error() + ")"
	}
	if dec.More() {
		return nil, "the input holds more than one JSON value; send one JSON object"
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, "the input must be a JSON object, got " + describe(v)
	}
	delete(m, TitleField)
	if err := r.schemas[call.Name].Validate(m); err != nil {
		return nil, err.Error()
	}
	for k, x := range m {
		if x == nil {
			delete(m, k) // null means "not given"
		}
	}
	input, err := json.Marshal(m)
	if err != nil {
		return nil, err.Error()
	}
	return input, ""
}

// Title returns the label a call gives itself in tool_title, or the
// tool's name when it gave none. It is meant for the user's view of a
// call, which exists before any result.
func Title(call llm.ToolCall) string {
	var in struct {
		Title any `json:"tool_title"`
	}
	if json.Unmarshal(call.Input, &in) == nil {
		if s, ok := in.Title.(string); ok && strings.TrimSpace(s) != "" {
			return strings.TrimSpace(s)
		}
	}
	return call.Name
}

// Builtin returns den's own tools: shell_execute, file_read,
// file_write, file_edit and read_image.
func Builtin() []Tool {
	return []Tool{ShellExecute{}, FileRead{}, FileWrite{}, FileEdit{}, ReadImage{}}
}
