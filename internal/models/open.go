package models

import (
	"fmt"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/anthropic"
	"den.dev/den/internal/llm/gemini"
	"den.dev/den/internal/llm/openai"
	"den.dev/den/internal/llm/openairesponses"
)

// Open builds the adapter for a target's provider type.
func Open(t Target) (llm.Model, error) {
	switch t.Provider.Type {
	case "anthropic":
		return anthropic.New(t.Provider)
	case "openai":
		return openai.New(t.Provider)
	case "openai-responses":
		return openairesponses.New(t.Provider)
	case "gemini":
		return gemini.New(t.Provider)
	}
	return nil, fmt.Errorf("%w type %q", ErrUnknownProvider, t.Provider.Type)
}
