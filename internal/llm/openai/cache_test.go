package openai_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/internal/openaiapi/openaiapitest"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/llm/openai"
)

// claudeConversation is conversation() asked of Claude through a gateway.
func claudeConversation() *llm.Request {
	req := conversation()
	req.Model = "anthropic/claude-sonnet-4.5"
	return req
}

// The gateway+Claude request, byte for byte: cache_control on the system
// prompt and on the last message of each of the last two user turns.
func TestRequestGoldenClaudeGateway(t *testing.T) {
	srv := llmtest.NewOpenAI(t, llmtest.Turn{Text: "ok"})
	m := newModel(t, srv)
	for range 2 {
		if _, err := openaiapitest.Run(t, m, claudeConversation()); err != nil {
			t.Fatal(err)
		}
	}
	reqs := srv.Requests()
	openaiapitest.Golden(t, filepath.Join("testdata", "request_claude_gateway.golden"), reqs[0].Body, *update)
	// The cache is keyed on the prefix's bytes.
	if string(reqs[0].Body) != string(reqs[1].Body) {
		t.Error("the same request marshalled twice differs")
	}
}

// OpenAI itself caches by itself: prompt_cache_key, no cache_control,
// the system prompt a plain string.
func TestRequestGoldenOpenAI(t *testing.T) {
	body, err := openai.OfficialBody(conversation())
	if err != nil {
		t.Fatal(err)
	}
	openaiapitest.Golden(t, filepath.Join("testdata", "request_openai.golden"), body, *update)
	if got := breakpoints(t, body); len(got) != 0 {
		t.Errorf("cache_control sent to OpenAI at %v", got)
	}
	// Not even for a model named claude: api.openai.com serves none.
	body, err = openai.OfficialBody(claudeConversation())
	if err != nil {
		t.Fatal(err)
	}
	if got := breakpoints(t, body); len(got) != 0 {
		t.Errorf("cache_control sent to OpenAI at %v", got)
	}
}

func TestCacheBreakpoints(t *testing.T) {
	text := func(role llm.Role, s string) llm.Message {
		return llm.Message{Role: role, Parts: []llm.Part{&llm.Text{Text: s}}}
	}
	call := func(ids ...string) llm.Message {
		m := llm.Message{Role: llm.Assistant}
		for _, id := range ids {
			m.Parts = append(m.Parts, &llm.ToolCall{ID: id, Name: "shell", Input: json.RawMessage(`{}`), API: "openai"})
		}
		return m
	}
	results := func(texts ...string) llm.Message {
		m := llm.Message{Role: llm.User}
		for i, s := range texts {
			m.Parts = append(m.Parts, &llm.ToolResult{CallID: "c" + strconv.Itoa(i), Name: "shell", Content: []llm.Part{&llm.Text{Text: s}}})
		}
		return m
	}
	loop := []llm.Message{ // wire: system, user, assistant, tool, tool, assistant, tool
		text(llm.User, "u1"), call("c0", "c1"), results("r0", "r1"), call("c0"), results("r2"),
	}
	tests := []struct {
		name, model, system, key string
		msgs                     []llm.Message
		want                     []string // JSON paths carrying cache_control
	}{
		{"claude, no cache key", "anthropic/claude-sonnet-4.5", "You are den.", "", loop, nil},
		{"claude", "anthropic/claude-sonnet-4.5", "You are den.", "s1", loop,
			[]string{"messages.0.content.0", "messages.4.content.0", "messages.6.content.0"}},
		{"bare claude id", "claude-opus-4-1", "You are den.", "s1", loop,
			[]string{"messages.0.content.0", "messages.4.content.0", "messages.6.content.0"}},
		{"bedrock-style id", "us.anthropic.claude-sonnet-4-5-v1:0", "You are den.", "s1", loop,
			[]string{"messages.0.content.0", "messages.4.content.0", "messages.6.content.0"}},
		{"not claude", "deepseek-chat", "You are den.", "s1", loop, nil},
		{"openai model through a gateway", "openai/gpt-5", "You are den.", "s1", loop, nil},
		{"first turn", "anthropic/claude-haiku-4.5", "You are den.", "s1", loop[:1],
			[]string{"messages.0.content.0", "messages.1.content.0"}},
		{"no system prompt", "anthropic/claude-haiku-4.5", "", "s1", loop,
			[]string{"messages.3.content.0", "messages.5.content.0"}},
		// An empty tool result has no text to mark: the tool message
		// before it in the same turn takes the breakpoint.
		{"empty last result", "anthropic/claude-haiku-4.5", "You are den.", "s1",
			[]llm.Message{text(llm.User, "u1"), call("c0", "c1"), results("r0", "")},
			[]string{"messages.0.content.0", "messages.1.content.0", "messages.3.content.0"}},
		// A user message marks its last text part, never an image.
		{"text then image", "anthropic/claude-haiku-4.5", "", "s1",
			[]llm.Message{{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "what is this?"}, &llm.Image{MediaType: "image/png", Data: []byte("png")}}}},
			[]string{"messages.0.content.0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := llmtest.NewOpenAI(t, llmtest.Turn{Text: "ok"})
			req := &llm.Request{Model: tt.model, System: tt.system, Messages: tt.msgs, CacheKey: tt.key}
			if _, err := openaiapitest.Run(t, newModel(t, srv), req); err != nil {
				t.Fatal(err)
			}
			body := srv.Requests()[0].Body
			got := breakpoints(t, body)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("cache breakpoints (-want +got):\n%s", diff)
			}
			if len(got) > 4 {
				t.Errorf("%d breakpoints; Anthropic allows 4", len(got))
			}
			if strings.Contains(string(body), "prompt_cache_key") {
				t.Error("prompt_cache_key sent to a server that is not OpenAI")
			}
		})
	}
}

// breakpoints returns the JSON paths of body, in document order, whose
// objects carry cache_control, failing t on any value but ephemeral.
func breakpoints(t *testing.T, body []byte) []string {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal(body, &root); err != nil {
		t.Fatal(err)
	}
	var got []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			if cc, ok := v["cache_control"]; ok {
				if !cmp.Equal(cc, map[string]any{"type": "ephemeral"}) {
					t.Errorf("%s: cache_control = %v", path, cc)
				}
				got = append(got, strings.TrimPrefix(path, "."))
			}
			for _, k := range []string{"messages", "content", "tools"} { // the only places one may be
				if e, ok := v[k]; ok {
					walk(path+"."+k, e)
				}
			}
		case []any:
			for i, e := range v {
				walk(path+"."+strconv.Itoa(i), e)
			}
		}
	}
	walk("", root)
	return got
}

// Cache tokens as gateways report them land in CacheReadTokens and
// CacheWriteTokens, and InputTokens leaves them out.
func TestGatewayCacheUsage(t *testing.T) {
	tests := []struct {
		name  string
		usage string // the final chunk's usage object
		want  llm.Usage
	}{
		// OpenRouter (openrouter.ai/docs/use-cases/usage-accounting):
		// prompt_tokens counts cache reads and writes.
		{"openrouter", `{"prompt_tokens":2194,"completion_tokens":12,"total_tokens":2206,"cost":0.00123,
			"is_byok":false,"cost_details":{"upstream_inference_cost":null},
			"prompt_tokens_details":{"cached_tokens":1800,"cache_write_tokens":300,"audio_tokens":0},
			"completion_tokens_details":{"reasoning_tokens":0,"image_tokens":0}}`,
			llm.Usage{InputTokens: 94, OutputTokens: 12, CacheReadTokens: 1800, CacheWriteTokens: 300}},
		// LiteLLM (docs.litellm.ai/docs/completion/prompt_caching):
		// writes only in the Anthropic-style cache_creation_input_tokens.
		{"litellm", `{"prompt_tokens":2006,"completion_tokens":300,"total_tokens":2306,
			"prompt_tokens_details":{"cached_tokens":1920},"completion_tokens_details":{"reasoning_tokens":0},
			"cache_creation_input_tokens":50,"cache_read_input_tokens":1920}`,
			llm.Usage{InputTokens: 36, OutputTokens: 300, CacheReadTokens: 1920, CacheWriteTokens: 50}},
		{"litellm, reads only top-level", `{"prompt_tokens":1000,"completion_tokens":1,"total_tokens":1001,
			"cache_creation_input_tokens":0,"cache_read_input_tokens":900}`,
			llm.Usage{InputTokens: 100, OutputTokens: 1, CacheReadTokens: 900}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			usage := strings.Join(strings.Fields(tt.usage), "")
			srv := llmtest.NewServer(t, []llmtest.Turn{{}}, func(w http.ResponseWriter, r *http.Request, _ llmtest.Turn) {
				w.Header().Set("Content-Type", "text/event-stream")
				// OpenRouter keeps the connection alive with SSE comments.
				w.Write([]byte(": OPENROUTER PROCESSING\n\n"))
				head := `{"id":"gen-1","provider":"Anthropic","model":"anthropic/claude-sonnet-4.5","object":"chat.completion.chunk","created":1700000000,`
				llmtest.SSE(w, "", head+`"choices":[{"index":0,"delta":{"role":"assistant","content":"Hi."},"finish_reason":null,"native_finish_reason":null,"logprobs":null}]}`)
				llmtest.SSE(w, "", head+`"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop","native_finish_reason":"end_turn","logprobs":null}]}`)
				// The usage chunk repeats an empty delta.
				llmtest.SSE(w, "", head+`"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null,"native_finish_reason":null,"logprobs":null}],"usage":`+usage+`}`)
				llmtest.SSE(w, "", "[DONE]")
			})
			req := &llm.Request{Model: "anthropic/claude-sonnet-4.5", CacheKey: "s1", Messages: []llm.Message{openaiapitest.User("hi")}}
			got, err := openaiapitest.Run(t, newModel(t, srv), req)
			if err != nil {
				t.Fatal(err)
			}
			if got.Text != "Hi." || got.Stop != llm.StopEndTurn {
				t.Errorf("text %q, stop %q", got.Text, got.Stop)
			}
			if diff := cmp.Diff(&tt.want, got.Usage); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}
