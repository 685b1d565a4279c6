package llmtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image"
	"image/color"
	"image/gif"
	"testing"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/anthropic"
	"den.dev/den/internal/llm/gemini"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/llm/openai"
	"den.dev/den/internal/llm/openairesponses"
)

// TestCrossProviderHistories sends each adapter conversations that any
// adapter could have left in den's history — a model switch or a
// fallback hands one API another's tool calls (with their ids,
// signatures and reasoning), images of every kind den makes, error
// results, a loop repaired after a kill (results and a new prompt in
// one message) — at every thinking level and with and without a token
// limit. The fakes refuse what the real APIs refuse, so this fails when
// an adapter sends a request its API would not take.
func TestCrossProviderHistories(t *testing.T) {
	type target struct {
		name, model string
		fake        func(testing.TB, ...llmtest.Turn) *llmtest.Server
		newModel    func(url string) (llm.Model, error)
	}
	targets := []target{
		{"anthropic", "claude-sonnet-4-5", llmtest.NewAnthropic, func(u string) (llm.Model, error) {
			return anthropic.New(llm.Provider{Name: "a", Type: "anthropic", BaseURL: u, APIKey: "k"})
		}},
		{"openai", "gpt-5", llmtest.NewOpenAI, func(u string) (llm.Model, error) {
			return openai.New(llm.Provider{Name: "o", Type: "openai", BaseURL: u + "/v1", APIKey: "k"})
		}},
		{"openai-responses", "gpt-5", llmtest.NewResponses, func(u string) (llm.Model, error) {
			return openairesponses.New(llm.Provider{Name: "r", Type: "openai-responses", BaseURL: u + "/v1", APIKey: "k"})
		}},
		{"gemini-pro", "gemini-2.5-pro", llmtest.NewGemini, func(u string) (llm.Model, error) {
			return gemini.New(llm.Provider{Name: "g", Type: "gemini", BaseURL: u, APIKey: "k"})
		}},
		{"gemini-flash-lite", "gemini-2.5-flash-lite", llmtest.NewGemini, func(u string) (llm.Model, error) {
			return gemini.New(llm.Provider{Name: "g", Type: "gemini", BaseURL: u, APIKey: "k"})
		}},
	}
	// origin is a tool call as an adapter's stream leaves it.
	type origin struct {
		name     string
		api, id  string
		thinking *llm.Thinking
		sig      string // on the call (Gemini)
	}
	origins := []origin{
		{"anthropic", "anthropic", "toolu_01A09q90qw90lq917835lq9", &llm.Thinking{Text: "t", Signature: "sig", API: "anthropic"}, ""},
		{"anthropic redacted", "anthropic", "toolu_01B", &llm.Thinking{Redacted: true, Opaque: json.RawMessage(`"EmwK"`), API: "anthropic"}, ""},
		{"anthropic unsigned", "anthropic", "toolu_01C", &llm.Thinking{Text: "cut short", API: "anthropic"}, ""},
		{"openai", "openai", "call_abc123", &llm.Thinking{Text: "t", API: "openai"}, ""},
		{"openai-compatible", "openai", "functions.shell_execute:0", nil, ""},
		{"openai-responses", "openai-responses", "call_xyz", &llm.Thinking{Text: "t", API: "openai-responses", Signature: "gpt-5",
			Opaque: json.RawMessage(`{"id":"rs_1","type":"reasoning","encrypted_content":"gAAAA","summary":[{"type":"summary_text","text":"t"}]}`)}, ""},
		{"gemini", "gemini", "gemini_call_0_0123456789ab", &llm.Thinking{Text: "t", Signature: "c2ln", API: "gemini"}, "Y2FsbA=="},
		{"gemini with id", "gemini", "fc-7", nil, ""},
	}
	var g bytes.Buffer
	if err := gif.Encode(&g, image.NewPaletted(image.Rect(0, 0, 1, 1), color.Palette{color.Black}), nil); err != nil {
		t.Fatal(err)
	}
	images := []*llm.Image{
		{MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n")},
		{MediaType: "image/jpeg", Data: []byte{0xff, 0xd8, 0xff}},
		{MediaType: "image/gif", Data: g.Bytes()},
		{MediaType: "image/webp", Data: []byte("RIFF\x00\x00\x00\x00WEBP")},
	}
	// history is one conversation; v picks its variations.
	history := func(o origin, v int) []llm.Message {
		call := func(id string) *llm.ToolCall {
			return &llm.ToolCall{ID: id, Name: "shell_execute", Input: json.RawMessage(`{"command":"ls"}`), API: o.api, Signature: o.sig}
		}
		var a []llm.Part
		if o.thinking != nil {
			a = append(a, o.thinking)
		}
		a = append(a, &llm.Text{Text: "Let me look."}, call(o.id))
		if v%2 == 1 {
			a = append(a, call(o.id+"b"))
		}
		msgs := []llm.Message{
			{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "hi"}, images[v%4]}},
			{Role: llm.Assistant, Parts: a},
		}
		var res []llm.Part
		for _, p := range a {
			if c, ok := p.(*llm.ToolCall); ok {
				res = append(res, &llm.ToolResult{CallID: c.ID, Name: c.Name, IsError: v%3 == 0,
					Content: []llm.Part{&llm.Text{Text: "out"}, images[(v+1)%4]}})
			}
		}
		if v >= 4 { // a loop repaired after a kill: results and a new prompt
			res = append(res, &llm.Text{Text: "and now?"})
		}
		msgs = append(msgs, llm.Message{Role: llm.User, Parts: res})
		if v >= 6 { // the loop ended; a new prompt
			msgs = append(msgs, llm.Message{Role: llm.Assistant, Parts: []llm.Part{&llm.Text{Text: "done"}}},
				llm.Message{Role: llm.User, Parts: []llm.Part{&llm.Text{}, &llm.Text{Text: "more"}}})
		}
		return msgs
	}
	for _, tg := range targets {
		for _, o := range origins {
			t.Run(tg.name+"/from "+o.name, func(t *testing.T) {
				s := tg.fake(t, llmtest.Turn{Text: "ok"})
				m, err := tg.newModel(s.URL)
				if err != nil {
					t.Fatal(err)
				}
				for v := range 8 {
					for _, level := range []llm.ThinkingLevel{"", llm.ThinkingOff, llm.ThinkingLow, llm.ThinkingMax} {
						for _, maxTokens := range []int{0, 2000, 64000} {
							req := &llm.Request{
								Model: tg.model, System: "You are den.", MaxTokens: maxTokens, Thinking: level, CacheKey: "session",
								Tools:    []llm.Tool{{Name: "shell_execute", Schema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)}},
								Messages: history(o, v),
							}
							for _, err := range m.Stream(context.Background(), req) {
								if err != nil {
									t.Errorf("request %d (variant %d, thinking %q, max tokens %d): %v",
										len(s.Requests())-1, v, level, maxTokens, err)
									break
								}
							}
						}
					}
				}
			})
		}
	}
}
