package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"den.dev/den/internal/llm"
)

// FileWrite is the file_write tool: create, replace or append to a file.
type FileWrite struct{}

// Spec implements Tool.
func (FileWrite) Spec() llm.Tool {
	return llm.Tool{
		Name: "file_write",
		Description: "Write a file in your computer, exactly as given: create it, replace it, or append to it. " +
			"Missing parent folders are created. Relative paths start at /workspace. To change part of an existing file, use file_edit.",
		Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "The file to write."},
    "content": {"type": "string", "description": "The complete content to write."},
    "append": {"type": "boolean", "description": "Add content at the end of the file instead of replacing it (default false)."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`),
	}
}

// ReadOnly implements Tool.
func (FileWrite) ReadOnly(json.RawMessage) bool { return false }

// Run implements Tool.
func (FileWrite) Run(ctx context.Context, env *Env, input json.RawMessage) (Result, error) {
	var in struct {
		Path    string `json:"path"`
		Content string `json:"content"`
		Append  bool   `json:"append"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return Errorf("invalid input: %v", err), nil
	}
	if strings.TrimSpace(in.Path) == "" {
		return Errorf("path is empty"), nil
	}
	p := ResolvePath(in.Path)
	problem, err := writeFile(ctx, env, p, []byte(in.Content), in.Append)
	if err != nil {
		return Result{}, err
	}
	if problem != "" {
		return Errorf("%s", problem), nil
	}
	verb := "Wrote"
	if in.Append {
		verb = "Appended"
	}
	return located(Text(fmt.Sprintf("%s %d bytes to %s", verb, len(in.Content), p)), p), nil
}
