package ctxwin

import (
	"context"
	"fmt"
	"strings"

	"den.dev/den/internal/llm"
)

// OffloadDir is where offloaded outputs go in the computer; a Saver
// returns paths inside it.
const OffloadDir = "/den/offloads"

// candidate is a tool output that may be offloaded.
type candidate struct {
	msg    int // index in live
	key    partKey
	tokens int // its estimate in the request, overhead included
	done   bool
}

// applyStubs replaces, in msgs (the requests' copies of live), every
// output offloaded before by its stub, and returns the outputs that
// could be offloaded now, oldest first. Messages are copied before they
// change; live's are never written.
func (w *Window) applyStubs(msgs []llm.Message, live []StoredMsg) []candidate {
	var cands []candidate
	minBytes := w.minOffload()
	for i, sm := range live {
		for j, p := range sm.Message.Parts {
			r, ok := p.(*llm.ToolResult)
			if !ok {
				continue
			}
			for k, c := range r.Content {
				key := partKey{sm.ID, j, k}
				if s, ok := w.saved[key]; ok {
					msgs[i] = replaced(msgs[i], j, k, &llm.Text{Text: s.stub})
					continue
				}
				if n := contentBytes(c); n >= minBytes {
					cands = append(cands, candidate{msg: i, key: key, tokens: EstimatePart(c)})
				}
			}
		}
	}
	return cands
}

func contentBytes(p llm.Part) int {
	switch p := p.(type) {
	case *llm.Text:
		return len(p.Text)
	case *llm.Image:
		return len(p.Data)
	}
	return 0
}

// offload saves one output and returns its stub, remembering both.
func (w *Window) offload(ctx context.Context, c *candidate, sm StoredMsg) (llm.Part, error) {
	r := sm.Message.Parts[c.key.part].(*llm.ToolResult)
	var data []byte
	var ext, what, how string
	switch p := r.Content[c.key.content].(type) {
	case *llm.Text:
		data, ext, what, how = []byte(p.Text), "txt", "tool output", "read it with file_read"
	case *llm.Image:
		data, ext, what, how = p.Data, imageExt(p.MediaType), "image", "view it with read_image"
	}
	name := offloadName(r.Name, c.key, ext)
	path, err := w.Saver.Save(ctx, name, data)
	if err != nil {
		return nil, fmt.Errorf("ctxwin: offload %s: %w", name, err)
	}
	s := saved{path: path, bytes: len(data),
		stub: fmt.Sprintf("[%s of %d bytes saved to %s; %s if needed]", what, len(data), path, how)}
	if w.saved == nil {
		w.saved = map[partKey]saved{}
	}
	w.saved[c.key] = s
	return &llm.Text{Text: s.stub}, nil
}

// offloadName names an output's file after its tool, message, part and
// content index, so that a later process saving the same output writes
// the same file and shows the same stub.
func offloadName(tool string, k partKey, ext string) string {
	name := fmt.Sprintf("%s-%s-%d", safeName(tool), safeName(k.msg), k.part)
	if k.content > 0 {
		name += fmt.Sprintf("-%d", k.content)
	}
	return name + "." + ext
}

// safeName keeps letters, digits, '-' and '_', and at most 40 of them.
func safeName(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 40 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "tool"
	}
	return b.String()
}

func imageExt(mediaType string) string {
	switch mediaType {
	case "image/png":
		return "png"
	case "image/jpeg":
		return "jpg"
	case "image/gif":
		return "gif"
	case "image/webp":
		return "webp"
	}
	return "bin"
}

// replaced returns m with content k of tool result j replaced by p,
// copying what it changes: the parts slice, the result, its content.
func replaced(m llm.Message, j, k int, p llm.Part) llm.Message {
	parts := append([]llm.Part(nil), m.Parts...)
	r := *parts[j].(*llm.ToolResult)
	r.Content = append([]llm.Part(nil), r.Content...)
	r.Content[k] = p
	parts[j] = &r
	return llm.Message{Role: m.Role, Parts: parts}
}
