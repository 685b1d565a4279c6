package agent

import (
	"strings"
	"testing"

	"den.dev/den/internal/llm"
)

// TestBreakdown: the sections of the system prompt, the tools, the
// messages and their images are estimated apart; apportioned, they add
// up to the provider's count, in proportion.
func TestBreakdown(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x02\x00\x00\x00\x02\x00\x08\x02\x00\x00\x00")
	cfg := Config{Sections: []Section{{Name: "system", Text: strings.Repeat("a", 4000)}, {Name: "memory", Text: strings.Repeat("m", 2000)}}}
	msgs := []llm.Message{
		{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: strings.Repeat("h", 400)}, &llm.Image{MediaType: "image/png", Data: png}}},
		{Role: llm.User, Parts: []llm.Part{&llm.ToolResult{CallID: "c", Content: []llm.Part{&llm.Image{MediaType: "image/png", Data: png}}}}},
	}
	tools := []llm.Tool{{Name: "shell_execute", Description: "run", Schema: []byte(`{"type":"object"}`)}}
	est := breakdown(cfg, msgs, tools)
	if est["system"] < 1000 || est["memory"] < 500 || est["tools"] == 0 || est["history"] < 100 || est["attachments"] < 600 {
		t.Fatalf("estimates %v", est)
	}
	got := apportion(est, 10_000)
	var sum int64
	for _, v := range got {
		sum += v
	}
	if sum != 10_000 {
		t.Errorf("apportioned %v adds up to %d", got, sum)
	}
	if got["system"] < got["memory"] {
		t.Errorf("not in proportion: %v", got)
	}
	if len(apportion(est, 0)) != 0 || len(apportion(nil, 10)) != 0 {
		t.Error("nothing to share makes parts")
	}
}
