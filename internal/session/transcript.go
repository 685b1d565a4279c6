package session

import (
	"fmt"
	"strings"

	"den.dev/den/internal/llm"
)

// Transcript renders messages as role and readable text.
func Transcript(msgs []llm.Message) []map[string]string {
	var out []map[string]string
	for _, m := range msgs {
		out = append(out, map[string]string{"role": string(m.Role), "text": Text(m)})
	}
	return out
}

// Text is a message as readable text: its text, thinking, calls with
// their arguments, results and images, one per line.
func Text(m llm.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		WritePart(&b, p)
	}
	return strings.TrimSpace(b.String())
}

// WritePart renders one part of a message as readable text.
func WritePart(b *strings.Builder, p llm.Part) {
	switch p := p.(type) {
	case *llm.Text:
		b.WriteString(p.Text)
	case *llm.Thinking:
		if p.Text != "" {
			fmt.Fprintf(b, "(thinking) %s\n", p.Text)
		}
	case *llm.ToolCall:
		fmt.Fprintf(b, "→ %s %s\n", p.Name, string(p.Input))
	case *llm.ToolResult:
		status := "←"
		if p.IsError {
			status = "← error"
		}
		fmt.Fprintf(b, "%s %s\n", status, strings.TrimSpace(llm.TextOf(llm.Message{Parts: p.Content})))
	case *llm.Image:
		fmt.Fprintf(b, "[image %s]\n", p.MediaType)
	}
}
