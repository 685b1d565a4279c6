package anthropic

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/llmtest"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from what den sends")

// TestGoldenRequest pins the request body den sends for a fixed
// conversation, so that a change to the wire format shows in review.
// Run with -update to accept a change.
func TestGoldenRequest(t *testing.T) {
	req := &llm.Request{
		Model:     "claude-sonnet-4-5",
		System:    "You are den, an agent with a computer.",
		MaxTokens: 0,
		Thinking:  llm.ThinkingHigh,
		CacheKey:  "session-42",
		Tools: []llm.Tool{
			{Name: "shell_execute", Description: "Run a shell command in the sandbox.", Schema: json.RawMessage(`{
				"type": "object",
				"properties": {"command": {"type": "string", "description": "The command."}, "timeout": {"type": "integer"}},
				"required": ["command"]
			}`)},
			{Name: "read_image", Description: "Look at an image file.", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)},
		},
		Messages: []llm.Message{
			{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "What is in /tmp/dot.png?"}}},
			{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "And list /tmp <please>."}}},
			{Role: llm.Assistant, Parts: []llm.Part{
				&llm.Thinking{Text: "Two tools are needed.", Signature: "sig-abc", API: "anthropic"},
				&llm.Thinking{Text: "gpt reasoning", Opaque: json.RawMessage(`{"encrypted":"x"}`), API: "openai-responses"},
				&llm.Text{Text: "Let me look."},
				&llm.ToolCall{ID: "toolu_01", Name: "read_image", Input: json.RawMessage(`{"path": "/tmp/dot.png"}`), API: "anthropic"},
				&llm.ToolCall{ID: "toolu_02", Name: "shell_execute", Input: json.RawMessage(`{"command": "ls /tmp"`), API: "anthropic"},
			}},
			{Role: llm.User, Parts: []llm.Part{
				&llm.ToolResult{CallID: "toolu_01", Name: "read_image", Content: []llm.Part{
					&llm.Text{Text: "1x1 PNG"},
					&llm.Image{MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n")},
				}},
				&llm.ToolResult{CallID: "toolu_02", Name: "shell_execute", IsError: true, Content: []llm.Part{
					&llm.Text{Text: "invalid arguments: unexpected end of JSON input"},
				}},
			}},
			{Role: llm.Assistant, Parts: []llm.Part{
				&llm.Thinking{Redacted: true, Opaque: json.RawMessage(`"EmwKAhgBEgy3va3pzix"`), API: "anthropic"},
				&llm.Text{Text: "A red dot. Retrying the listing."},
			}},
			{Role: llm.User, Parts: []llm.Part{&llm.Image{MediaType: "image/jpeg", Data: []byte{0xff, 0xd8, 0xff}}, &llm.Text{Text: "Also this one."}}},
		},
	}
	s := llmtest.NewAnthropic(t, llmtest.Turn{Text: "ok"})
	if _, err := collect(t.Context(), newModel(t, s), req); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := json.Indent(&got, s.Requests()[0].Body, "", "  "); err != nil {
		t.Fatal(err)
	}
	got.WriteByte('\n')

	path := filepath.Join("testdata", "request.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got.String()); diff != "" {
		t.Errorf("request body differs from %s (-want +got); run with -update if the change is meant:\n%s", path, diff)
	}

	// Twice the same request, byte for byte: the cached prefix depends on it.
	if _, err := collect(t.Context(), newModel(t, s), req); err != nil {
		t.Fatal(err)
	}
	if a, b := s.Requests()[0].Body, s.Requests()[1].Body; !bytes.Equal(a, b) {
		t.Errorf("the same request encoded differently:\n%s\n%s", a, b)
	}
}
