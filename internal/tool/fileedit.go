package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"den.dev/den/internal/llm"
)

// FileEdit is the file_edit tool: replace an exact piece of a file.
type FileEdit struct{}

// Spec implements Tool.
func (FileEdit) Spec() llm.Tool {
	return llm.Tool{
		Name: "file_edit",
		Description: "Replace exact text in a file in your computer. old_string must match the file exactly, whitespace and indentation included, " +
			"and occur exactly once unless replace_all is true; include enough surrounding lines to make it unique. " +
			"Read the file first. Relative paths start at /workspace.",
		Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The file to edit."},
    "old_string": {"type": "string", "description": "The exact text to replace."},
    "new_string": {"type": "string", "description": "The text to put in its place (may be empty)."},
    "replace_all": {"type": "boolean", "description": "Replace every occurrence instead of exactly one (default false)."}
  },
  "required": ["path", "old_string", "new_string"],
  "additionalProperties": false
}`),
	}
}

// ReadOnly implements Tool.
func (FileEdit) ReadOnly(json.RawMessage) bool { return false }

// Run implements Tool. The file is read, edited in den and written back
// in place, so it keeps its mode.
func (FileEdit) Run(ctx context.Context, env *Env, input json.RawMessage) (Result, error) {
	var in struct {
		Path       string `json:"path"`
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return Errorf("invalid input: %v", err), nil
	}
	if strings.TrimSpace(in.Path) == "" {
		return Errorf("path is empty"), nil
	}
	if in.OldString == "" {
		return Errorf("old_string is empty; give the exact text to replace (to create or overwrite a file, use file_write)"), nil
	}
	if in.OldString == in.NewString {
		return Errorf("old_string and new_string are the same; nothing to change"), nil
	}
	p := ResolvePath(in.Path)
	data, problem, err := readFile(ctx, env, p, maxFileBytes)
	if err != nil {
		return Result{}, err
	}
	if problem != "" {
		return Errorf("%s", problem), nil
	}
	old := []byte(in.OldString)
	n := bytes.Count(data, old)
	switch {
	case n == 0:
		msg := fmt.Sprintf("old_string was not found in %s. Read the file again (file_read) and copy the exact text, whitespace and indentation included.", p)
		if bytes.Contains(data, []byte("\r\n")) && strings.Contains(in.OldString, "\n") && !strings.Contains(in.OldString, "\r\n") {
			msg += " The file uses CRLF (\\r\\n) line endings."
		}
		return Errorf("%s", msg), nil
	case n > 1 && !in.ReplaceAll:
		return Errorf("old_string occurs %d times in %s (at lines %s). Include more surrounding lines to make it unique, or set replace_all to true.",
			n, p, lineList(data, old, 10)), nil
	}
	first := lineOf(data, bytes.Index(data, old))
	edited := bytes.ReplaceAll(data, old, []byte(in.NewString))
	if problem, err := writeFile(ctx, env, p, edited, false); err != nil || problem != "" {
		if err != nil {
			return Result{}, err
		}
		return Errorf("%s", problem), nil
	}
	if n == 1 {
		return located(Text(fmt.Sprintf("Edited %s: replaced 1 occurrence at line %d; the file now has %d bytes.", p, first, len(edited))), p), nil
	}
	return located(Text(fmt.Sprintf("Edited %s: replaced %d occurrences (the first at line %d); the file now has %d bytes.", p, n, first, len(edited))), p), nil
}

// lineOf is the 1-based line of the byte at offset i.
func lineOf(data []byte, i int) int { return bytes.Count(data[:i], []byte("\n")) + 1 }

// lineList lists the lines where sub starts in data, at most max of them.
func lineList(data, sub []byte, most int) string {
	var lines []string
	for off := 0; ; {
		i := bytes.Index(data[off:], sub)
		if i < 0 {
			break
		}
		if len(lines) == most {
			lines = append(lines, "…")
			break
		}
		lines = append(lines, strconv.Itoa(lineOf(data, off+i)))
		off += i + len(sub)
	}
	return strings.Join(lines, ", ")
}
