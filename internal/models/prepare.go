package models

import "den.dev/den/internal/llm"

// Prepare fits a request to a target: its model name, a max output
// clamped to what the model allows (and to the window left after the
// estimated input), and no thinking for a model without it.
func Prepare(t Target, req *llm.Request, estInput int64) *llm.Request {
	r := *req
	r.Model = t.Model
	limit := t.Info.MaxOutput
	if limit <= 0 {
		limit = 8192
	}
	if free := int64(t.Info.ContextWindow) - estInput; t.Info.ContextWindow > 0 && free < int64(limit) {
		limit = int(max(free, 1024))
	}
	if r.MaxTokens <= 0 {
		r.MaxTokens = min(limit, 32_000)
	}
	r.MaxTokens = min(r.MaxTokens, limit)
	if !t.Info.Thinking && r.Thinking != "" {
		r.Thinking = llm.ThinkingOff
	}
	return &r
}
