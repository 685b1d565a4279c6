package openaiapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3/shared"

	"den.dev/den/internal/llm"
)

// ReasoningModel reports whether model is an OpenAI reasoning model: the
// o-series (not o1-mini or o1-preview) and gpt-N for N >= 5, so gpt-5*
// and the GPT-6 family (not the -chat variants). A "vendor/" prefix is
// ignored.
func ReasoningModel(model string) bool {
	m := bareModel(model)
	switch {
	case strings.HasPrefix(m, "o1-mini"), strings.HasPrefix(m, "o1-preview"), strings.Contains(m, "-chat"):
		return false
	case llm.Generation(m, "gpt-") >= 5:
		return true
	case len(m) >= 2 && m[0] == 'o' && m[1] >= '1' && m[1] <= '9':
		return true
	}
	return false
}

// ToolsNeedNoReasoning reports whether model takes function tools in Chat
// Completions only with reasoning_effort "none": the GPT-6 family and
// later, which reason with tools only through the Responses API.
func ToolsNeedNoReasoning(model string) bool {
	return llm.Generation(bareModel(model), "gpt-") >= 6
}

// bareModel is model in lower case without any "vendor/" prefix.
func bareModel(model string) string {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	return m
}

// Effort maps a thinking level to a reasoning effort: low, medium and
// high as they are, max clamped to high, "" for off.
func Effort(level llm.ThinkingLevel) shared.ReasoningEffort {
	switch level {
	case llm.ThinkingLow:
		return shared.ReasoningEffortLow
	case llm.ThinkingMedium:
		return shared.ReasoningEffortMedium
	case llm.ThinkingHigh, llm.ThinkingMax:
		return shared.ReasoningEffortHigh
	}
	return ""
}

// Parameters is t's JSON Schema as a function's parameters, its values
// kept as raw JSON; a tool without a schema takes an empty object.
func Parameters(t llm.Tool) (map[string]any, error) {
	if len(t.Schema) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(t.Schema, &raw); err != nil {
		return nil, fmt.Errorf("tool %s: schema: %w", t.Name, err)
	}
	params := make(map[string]any, len(raw))
	for k, v := range raw {
		params[k] = v
	}
	return params, nil
}

// Arguments is a tool call's arguments as sent and stored: args, or {}
// when args is blank.
func Arguments(args string) string {
	if strings.TrimSpace(args) == "" {
		return "{}"
	}
	return args
}

// DataURL is an image as a data: URL.
func DataURL(img *llm.Image) string {
	return "data:" + img.MediaType + ";base64," + base64.StdEncoding.EncodeToString(img.Data)
}
