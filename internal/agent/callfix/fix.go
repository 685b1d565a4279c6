package callfix

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/tool"
)

// Catalog is the tools a call may name, as the model sees them: names
// and JSON schemas. *tool.Registry and the loop's agent.Tools satisfy
// it.
type Catalog interface {
	Specs() []llm.Tool
}

// TruncatedNote starts the note of a call that runs although its
// arguments were cut off in transit (a string or number cut, a member
// dropped). The loop should mark its result as an error.
const TruncatedNote = "Arguments truncated in transit"

// Fix repairs a tool call before it runs. It returns the call to run
// and a note for the model saying what was repaired (empty when
// nothing was), or an *Error (wrapping ErrUnknownTool, ErrTruncated,
// ErrMalformed or ErrInvalid) whose text tells the model what to send
// instead; the call must then not run. Fix never modifies *call; when
// nothing needed repair it returns call itself. A fixed call's input
// is one JSON object that passes its tool's schema (when the schema is
// one tool.ParseSchema reads; otherwise only the JSON is repaired).
func Fix(call *llm.ToolCall, tools Catalog) (fixed *llm.ToolCall, note string, err error) {
	specs := tools.Specs()
	spec, nameNote, err := resolve(call.Name, specs)
	if err != nil {
		return nil, "", err
	}
	name := spec.Name
	var notes []string // repairs of the input
	var truncNote string

	raw := bytes.TrimSpace(call.Input)
	if fenced, ok := unfence(raw); ok {
		raw = fenced
		notes = append(notes, "the arguments were wrapped in a Markdown code fence")
	}
	rep, serr := repairJSON(raw)
	if serr != nil {
		line, col := position(raw, serr.Off)
		return nil, "", &Error{Kind: ErrMalformed, Msg: fmt.Sprintf(
			"%s was not run: its arguments are not valid JSON: %s at byte %d (line %d, column %d), near %s. Send the arguments again as one valid JSON object.",
			name, serr.Msg, serr.Off, line, col, near(raw, serr.Off))}
	}
	notes = append(notes, rep.fixes...)

	v, err := decode(rep.out)
	if err != nil { // repairJSON wrote something encoding/json rejects: a bug
		return nil, "", &Error{Kind: ErrMalformed, Msg: fmt.Sprintf("%s was not run: its arguments are not valid JSON (%v). Send them again as one valid JSON object.", name, err)}
	}
	if s, ok := v.(string); ok {
		if inner, err := decode([]byte(s)); err == nil {
			if _, ok := inner.(map[string]any); ok {
				v = inner
				notes = append(notes, "the arguments were a JSON object inside a string and were decoded")
			}
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, "", &Error{Kind: ErrMalformed, Msg: fmt.Sprintf("%s was not run: its arguments must be one JSON object, got %s.", name, kind(v))}
	}

	if rep.truncated {
		if msg := refuseTruncated(name, rep, m, len(raw)); msg != "" {
			return nil, "", &Error{Kind: ErrTruncated, Msg: msg}
		}
		if rep.lossy {
			truncNote = TruncatedNote + ": the JSON ended " + rep.cutIn + " and was closed up, so the call ran with only what arrived; its result may be incomplete or wrong."
		} else {
			notes = append(notes, "the JSON lacked its closing brackets, which were added")
		}
	}

	if schema, err := tool.ParseSchema(spec.Schema); err == nil {
		if len(m) == 0 && len(schema.Required) > 0 {
			return nil, "", &Error{Kind: ErrInvalid, Msg: fmt.Sprintf(
				"Tool call rejected before execution: %s was called with empty arguments, but %s %s required. Do not retry with the same empty arguments: send %s.",
				name, quoteList(schema.Required), plural(len(schema.Required), "is", "are"), quoteList(schema.Required))}
		}
		c := coercer{}
		v = c.coerce(schema, m, "")
		notes = append(notes, c.notes...)
		if err := schema.Validate(v); err != nil {
			return nil, "", &Error{Kind: ErrInvalid, Msg: fmt.Sprintf(
				"Invalid input for %s: %v. The call was not run; fix the input and call the tool again.", name, err)}
		}
	}

	if nameNote == "" && len(notes) == 0 && truncNote == "" {
		return call, "", nil
	}
	out := *call
	out.Name = name
	if len(notes) > 0 || truncNote != "" {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, "", &Error{Kind: ErrMalformed, Msg: fmt.Sprintf("%s was not run: its arguments could not be encoded (%v).", name, err)}
		}
		out.Input = json.RawMessage(bytes.TrimSpace(b.Bytes()))
	}
	if nameNote != "" {
		notes = append([]string{nameNote}, notes...)
	}
	note = truncNote
	if len(notes) > 0 {
		note = strings.TrimSpace(note + " den repaired this call before running it: " + strings.Join(notes, "; ") + ".")
	}
	return &out, note, nil
}

// refuseTruncated says why a call whose arguments were cut off must
// not run, or "" when it may: a file_write or file_edit never runs cut
// (closed up, it would write a silently cut file), and a shell command
// does not run when the command itself (or another value) was cut.
func refuseTruncated(name string, rep repaired, m map[string]any, size int) string {
	where := ""
	if p, ok := m["path"].(string); ok && p != "" {
		where = " for " + p
	}
	switch {
	case name == "file_write":
		pieces := "."
		if size >= 4000 {
			pieces = fmt.Sprintf(", each well under %d bytes.", size/2)
		}
		return fmt.Sprintf("file_write%s was NOT executed: its arguments were cut off in transit after %d bytes (the JSON ended %s), so the file would have been written incomplete. "+
			"Send the content in smaller pieces: one file_write with the first part, then file_write with append=true for each further part%s",
			where, size, rep.cutIn, pieces)
	case name == "file_edit":
		return fmt.Sprintf("file_edit%s was NOT executed: its arguments were cut off in transit after %d bytes (the JSON ended %s), and a cut old_string or new_string would edit the file wrongly. "+
			"Make smaller edits (several file_edit calls, each with a short old_string and new_string), or write the file in pieces with file_write (append=true for each further piece).",
			where, size, rep.cutIn)
	case name == "shell_execute" && rep.lossy:
		return fmt.Sprintf("shell_execute was NOT executed: its arguments were cut off in transit after %d bytes (the JSON ended %s), and running part of a command could do the wrong thing. "+
			"Send a shorter command; put a long script in a file first (file_write, then file_write with append=true for further pieces) and run the file.",
			size, rep.cutIn)
	}
	return ""
}

func decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// unfence removes a Markdown code fence around the arguments.
func unfence(raw []byte) ([]byte, bool) {
	if !bytes.HasPrefix(raw, []byte("```")) || !bytes.HasSuffix(raw, []byte("```")) || len(raw) < 6 {
		return raw, false
	}
	body := raw[3 : len(raw)-3]
	if i := bytes.IndexByte(body, '\n'); i >= 0 && !bytes.ContainsAny(body[:i], "{[\"") {
		body = body[i+1:] // the language tag
	}
	return bytes.TrimSpace(body), true
}

func near(in []byte, off int) string {
	lo, hi := max(off-20, 0), min(off+20, len(in))
	return fmt.Sprintf("%q", in[lo:hi])
}

func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case []any:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

func quoteList(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " and " + q[len(q)-1]
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
