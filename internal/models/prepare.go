package models

import (
	"fmt"
	"slices"

	"den.dev/den/internal/llm"
)

// Prepare fits a request to a target: its model name, a max output
// clamped to what the model allows (and to the window left after the
// estimated input), no thinking for a model without it, and, for a
// model that takes no images (a fallback behind one that does), each
// image replaced by a note saying it was left out. req is not changed.
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
	if !t.Info.Images {
		r.Messages = withoutImages(r.Messages, t.Ref)
	}
	return &r
}

// withoutImages is msgs with every image, in a message or a tool
// result, replaced by a text note; messages without images are shared,
// not copied.
func withoutImages(msgs []llm.Message, ref string) []llm.Message {
	note := func(img *llm.Image) llm.Part {
		return &llm.Text{Text: fmt.Sprintf("[an %s image was left out: %s does not take images]", img.MediaType, ref)}
	}
	var out []llm.Message
	for i, m := range msgs {
		parts, changed := m.Parts, false
		for j, p := range m.Parts {
			var np llm.Part
			switch p := p.(type) {
			case *llm.Image:
				np = note(p)
			case *llm.ToolResult:
				if !slices.ContainsFunc(p.Content, isImage) {
					continue
				}
				r := *p
				r.Content = make([]llm.Part, len(p.Content))
				for k, c := range p.Content {
					if img, ok := c.(*llm.Image); ok {
						c = note(img)
					}
					r.Content[k] = c
				}
				np = &r
			default:
				continue
			}
			if !changed {
				parts, changed = slices.Clone(m.Parts), true
			}
			parts[j] = np
		}
		if !changed {
			continue
		}
		if out == nil {
			out = slices.Clone(msgs)
		}
		out[i].Parts = parts
	}
	if out == nil {
		return msgs
	}
	return out
}

func isImage(p llm.Part) bool {
	_, ok := p.(*llm.Image)
	return ok
}
