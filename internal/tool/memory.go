package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"den.dev/den/internal/llm"
)

// Memory is the agent's memory as the memory tools use it (a
// memory.Book).
type Memory interface {
	// Write appends text to today's log, marked with the session and
	// the message that wrote it, and returns the log's name.
	Write(ctx context.Context, session, message, text string, now time.Time) (string, error)
	// Get finds entries for query (all of them newest first when it is
	// empty) in scope, formatted for the model.
	Get(ctx context.Context, query, scope string, now time.Time) (string, error)
}

// MemoryWrite is the memory_write tool.
type MemoryWrite struct{}

// Spec implements Tool.
func (MemoryWrite) Spec() llm.Tool {
	return llm.Tool{
		Name: "memory_write",
		Description: "Save something worth remembering across all your sessions (a preference or fact about the user, a decision, " +
			"what you learned about their work) to today's log in /den/memory. Write it so it stands alone: who, what, and why it matters. " +
			"den dates it and shows recent logs to you in every session; memory_get finds older ones.",
		Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "content": {"type": "string", "description": "What to remember, in plain words (Markdown allowed)."}
  },
  "required": ["content"],
  "additionalProperties": false
}`),
	}
}

// ReadOnly implements Tool.
func (MemoryWrite) ReadOnly(json.RawMessage) bool { return false }

// Run implements Tool.
func (MemoryWrite) Run(ctx context.Context, env *Env, input json.RawMessage) (Result, error) {
	if env.Memory == nil {
		return Errorf("Memory is off for this session: the user turns it on with /memory."), nil
	}
	var in struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return Errorf("invalid input: %v", err), nil
	}
	name, err := env.Memory.Write(ctx, env.Session, env.Message, in.Content, time.Now())
	if err != nil {
		return Errorf("not saved: %v", err), nil
	}
	return Text(fmt.Sprintf("Saved to /den/memory/%s (%d characters).", name, len(strings.TrimSpace(in.Content)))), nil
}

// MemoryGet is the memory_get tool.
type MemoryGet struct{}

// Spec implements Tool.
func (MemoryGet) Spec() llm.Tool {
	return llm.Tool{
		Name: "memory_get",
		Description: "Search your memory in /den/memory: the daily logs, GLOBAL.md and SOUL.md. Entries that hold more of the words rank first, " +
			"and among those the more recent; each comes with its file, date and session. Without a query, the newest entries.",
		Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "query": {"type": "string", "description": "Words to look for (any of them; the last may be the start of a word)."},
    "scope": {"type": "string", "enum": ["all", "global", "soul", "daily"], "description": "Where to look (default all)."}
  },
  "additionalProperties": false
}`),
	}
}

// ReadOnly implements Tool.
func (MemoryGet) ReadOnly(json.RawMessage) bool { return true }

// Run implements Tool.
func (MemoryGet) Run(ctx context.Context, env *Env, input json.RawMessage) (Result, error) {
	if env.Memory == nil {
		return Errorf("Memory is off for this session: the user turns it on with /memory."), nil
	}
	var in struct {
		Query string `json:"query"`
		Scope string `json:"scope"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return Errorf("invalid input: %v", err), nil
	}
	out, err := env.Memory.Get(ctx, in.Query, in.Scope, time.Now())
	if err != nil {
		return Errorf("memory_get: %v", err), nil
	}
	return Text(out), nil
}

// MemoryTools are the tools present when memory is on.
func MemoryTools() []Tool { return []Tool{MemoryWrite{}, MemoryGet{}} }
