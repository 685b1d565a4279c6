package models

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/config"
	"den.dev/den/internal/llm"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func ptr[T any](v T) *T { return &v }

func TestResolve(t *testing.T) {
	cfg := &config.Config{
		Providers: map[string]config.Provider{"local": {Type: "openai", BaseURL: "http://127.0.0.1:8080/v1", APIKeyEnv: "LOCAL_KEY"}},
		Groups:    map[string]config.Group{"fast": {Members: []string{"anthropic/claude-haiku-4-5", "openai/gpt-5-mini"}}},
		Models:    map[string]config.Model{"local/qwen": {ContextWindow: 32000}},
	}
	r := &Resolver{Config: cfg, Env: envOf(map[string]string{"ANTHROPIC_API_KEY": "sk-a", "LOCAL_KEY": "k", "ANTHROPIC_BASE_URL": "http://proxy"})}
	ts, err := r.Resolve("fast,local/qwen")
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 3 {
		t.Fatalf("targets %+v", ts)
	}
	if ts[0].Provider.APIKey != "sk-a" || ts[0].Provider.BaseURL != "http://proxy" || ts[0].Model != "claude-haiku-4-5" || ts[0].Info.PriceInput != 1 {
		t.Errorf("anthropic target %+v", ts[0])
	}
	if ts[1].Provider.APIKey != "" {
		t.Errorf("openai has no key here: %+v", ts[1].Provider)
	}
	if ts[2].Provider.Type != "openai" || ts[2].Provider.APIKey != "k" || ts[2].Info.ContextWindow != 32000 {
		t.Errorf("local target %+v", ts[2])
	}
	for _, bad := range []string{"nosuch/x", "gpt-5", "/x", "anthropic/"} {
		if _, err := r.Resolve(bad); err == nil {
			t.Errorf("%q resolved", bad)
		}
	}
	if _, err := r.Resolve("nosuch/x"); !errors.Is(err, ErrUnknownProvider) || !strings.Contains(err.Error(), "anthropic") {
		t.Errorf("unknown provider error does not list the known ones: %v", err)
	}
}

// TestResolveKnown: refs as users write them reach the catalog through
// Resolve, keeping the model name they wrote (the provider wants it).
func TestResolveKnown(t *testing.T) {
	r := &Resolver{Config: &config.Config{}, Env: envOf(nil)}
	for _, tc := range []struct{ ref, model, entry string }{
		{"anthropic/claude-sonnet-4-5-20250929", "claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"anthropic/claude-sonnet-4-0", "claude-sonnet-4-0", "claude-sonnet-4"},
		{"openai/gpt-5-2025-08-07", "gpt-5-2025-08-07", "gpt-5"},
		{"openai-responses/o3-2025-04-16", "o3-2025-04-16", "o3"},
		{"gemini/gemini-2.5-pro-preview-06-05", "gemini-2.5-pro-preview-06-05", "gemini-2.5-pro"},
		{"openrouter/anthropic/claude-sonnet-4.5", "anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"},
		{"openrouter/deepseek/deepseek-chat-v3.1", "deepseek/deepseek-chat-v3.1", "deepseek-chat"},
		{"xai/grok-4-0709", "grok-4-0709", "grok-4"},
		{"moonshot/kimi-k2-0905-preview", "kimi-k2-0905-preview", "kimi-k2"},
		{"groq/openai/gpt-oss-120b", "openai/gpt-oss-120b", "gpt-oss-120b"},
	} {
		ts, err := r.Resolve(tc.ref)
		if err != nil {
			t.Errorf("%s: %v", tc.ref, err)
			continue
		}
		if ts[0].Model != tc.model {
			t.Errorf("%s: model %q, want %q", tc.ref, ts[0].Model, tc.model)
		}
		if diff := cmp.Diff(catalog[tc.entry].info(), ts[0].Info); diff != "" {
			t.Errorf("%s: info (-want %s +got):\n%s", tc.ref, tc.entry, diff)
		}
		if e := r.Explain(ts[0]); e != "" {
			t.Errorf("%s: known model explained: %s", tc.ref, e)
		}
	}
}

// TestResolveUnknown: a model the catalog does not know gets the
// conservative window, no prices, and images only where its provider
// takes them.
func TestResolveUnknown(t *testing.T) {
	cfg := &config.Config{
		Providers: map[string]config.Provider{
			"local":  {Type: "openai", BaseURL: "http://127.0.0.1:8080/v1"},
			"acct2":  {Type: "openai"},
			"claude": {Type: "anthropic"},
			"vision": {Type: "openai", BaseURL: "http://127.0.0.1:8080/v1"},
		},
		Models: map[string]config.Model{"vision/llava": {Input: []string{"text", "image"}}, "openrouter/meta/x": {Input: []string{"text"}}},
	}
	r := &Resolver{Config: cfg, Env: envOf(nil)}
	for _, tc := range []struct {
		ref    string
		images bool
	}{
		{"anthropic/claude-next", true},
		{"openai/gpt-7", true},
		{"openai-responses/gpt-7", true},
		{"gemini/gemini-9-pro", true},
		{"openrouter/some-lab/some-model", true},
		{"acct2/gpt-7", true},
		{"claude/claude-next", true},
		{"deepseek/deepseek-v9", false},
		{"groq/qwen3.6-27b", false},
		{"moonshot/kimi-k9", false},
		{"ollama/llama3", false},
		{"xai/grok-9", false},
		{"local/qwen", false},
		{"vision/llava", true},
		{"openrouter/meta/x", false},
	} {
		ts, err := r.Resolve(tc.ref)
		if err != nil {
			t.Fatalf("%s: %v", tc.ref, err)
		}
		i := ts[0].Info
		want := Info{ContextWindow: 128_000, MaxOutput: 8_192, Images: tc.images}
		if diff := cmp.Diff(want, i); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.ref, diff)
		}
		if c := i.Cost(llm.Usage{InputTokens: 1e6, OutputTokens: 1e6}); c != 0 {
			t.Errorf("%s: cost %v of an unpriced model", tc.ref, c)
		}
	}
}

// TestOverrides: the config's [models] table wins over the catalog and
// the assumptions, also for a name found through a suffix rule; all
// four prices make an unknown model's prices known.
func TestOverrides(t *testing.T) {
	cfg := &config.Config{Models: map[string]config.Model{
		"anthropic/claude-sonnet-4-5-20250929": {ContextWindow: 1_000_000, PriceInput: ptr(6.0), Input: []string{"text"}},
		"openai/gpt-5":                         {Thinking: ptr(false), PriceCacheWrite: ptr(0.5)},
		"ollama/qwen3":                         {ContextWindow: 32_768, MaxOutput: 4096, PriceInput: ptr(0.0), PriceOutput: ptr(0.0), PriceCacheRead: ptr(0.0), PriceCacheWrite: ptr(0.0)},
		"ollama/half":                          {PriceInput: ptr(1.0), PriceOutput: ptr(2.0), PriceCacheRead: ptr(0.1)},
		"openrouter/lab/m":                     {Thinking: ptr(true), PriceInput: ptr(1.0), PriceOutput: ptr(2.0), PriceCacheRead: ptr(0.1), PriceCacheWrite: ptr(1.25)},
	}}
	r := &Resolver{Config: cfg, Env: envOf(nil)}
	sonnet := catalog["claude-sonnet-4-5"].info()
	sonnet.ContextWindow, sonnet.PriceInput, sonnet.Images = 1_000_000, 6, false
	gpt5 := catalog["gpt-5"].info()
	gpt5.Thinking, gpt5.PriceCacheWrite = false, 0.5
	for _, tc := range []struct {
		ref  string
		want Info
	}{
		{"anthropic/claude-sonnet-4-5-20250929", sonnet},
		{"openai/gpt-5", gpt5},
		{"ollama/qwen3", Info{ContextWindow: 32_768, MaxOutput: 4096, PricesKnown: true}},
		{"ollama/half", Info{ContextWindow: 128_000, MaxOutput: 8_192, PriceInput: 1, PriceOutput: 2, PriceCacheRead: 0.1}},
		{"openrouter/lab/m", Info{ContextWindow: 128_000, MaxOutput: 8_192, Images: true, Thinking: true,
			PriceInput: 1, PriceOutput: 2, PriceCacheRead: 0.1, PriceCacheWrite: 1.25, PricesKnown: true}},
	} {
		ts, err := r.Resolve(tc.ref)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, ts[0].Info); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.ref, diff)
		}
	}
}

// TestExplain: the line names the ref, what was assumed and the keys
// that would tell den, leaving out what the config already says.
func TestExplain(t *testing.T) {
	cfg := &config.Config{
		Providers: map[string]config.Provider{"local": {Type: "openai", BaseURL: "http://127.0.0.1:8080/v1"}},
		Models: map[string]config.Model{
			"local/partial": {ContextWindow: 32_768, PriceInput: ptr(0.0)},
			"local/full": {ContextWindow: 32_768, MaxOutput: 4096, Input: []string{"text"},
				PriceInput: ptr(0.0), PriceOutput: ptr(0.0), PriceCacheRead: ptr(0.0), PriceCacheWrite: ptr(0.0)},
		},
	}
	r := &Resolver{Config: cfg, Env: envOf(nil)}
	explain := func(ref string) string {
		ts, err := r.Resolve(ref)
		if err != nil {
			t.Fatal(err)
		}
		return r.Explain(ts[0])
	}
	for _, tc := range []struct {
		ref       string
		has, hasn []string
	}{
		{"local/qwen", []string{`"local/qwen"`, "128000-token context window", "8192 output tokens", "no image input", "$0", "no thinking",
			`[models."local/qwen"]`, "context_window = …", "max_output = …", `input = ["text", "image"]`,
			"price_input = …", "price_output = …", "price_cache_read = …", "price_cache_write = …", "thinking = true"}, nil},
		{"openrouter/lab/new", []string{"image input (as its provider takes images)", `input = ["text"]`}, []string{"no image input"}},
		{"local/partial", []string{"8192 output tokens", "price_output = …"}, []string{"context window", "context_window", "price_input"}},
	} {
		e := explain(tc.ref)
		if strings.Contains(e, "\n") {
			t.Errorf("%s: not one line: %q", tc.ref, e)
		}
		for _, s := range tc.has {
			if !strings.Contains(e, s) {
				t.Errorf("%s: %q lacks %q", tc.ref, e, s)
			}
		}
		for _, s := range tc.hasn {
			if strings.Contains(e, s) {
				t.Errorf("%s: %q has %q", tc.ref, e, s)
			}
		}
	}
	for _, ref := range []string{"local/full", "anthropic/claude-sonnet-4-5", "openrouter/google/gemini-2.5-pro"} {
		if e := explain(ref); e != "" {
			t.Errorf("%s: nothing is assumed, yet: %s", ref, e)
		}
	}
}

// TestDefault: each lone key picks its provider's current model, and
// the catalog knows every default, so a fresh user never starts on an
// unknown model.
func TestDefault(t *testing.T) {
	cfg := &config.Config{}
	for env, want := range map[string]string{
		"ANTHROPIC_API_KEY":  "anthropic/claude-sonnet-5-5",
		"OPENAI_API_KEY":     "openai-responses/gpt-6.2-sol",
		"GEMINI_API_KEY":     "gemini/gemini-3.8-flash",
		"GOOGLE_API_KEY":     "gemini/gemini-3.8-flash",
		"OPENROUTER_API_KEY": "openrouter/anthropic/claude-sonnet-5.5",
		"DEEPSEEK_API_KEY":   "deepseek/deepseek-flash",
		"MOONSHOT_API_KEY":   "moonshot/kimi-k3",
		"KIMI_API_KEY":       "moonshot/kimi-k3",
		"XAI_API_KEY":        "xai/grok-4.7",
		"GROQ_API_KEY":       "groq/openai/gpt-oss-120b",
	} {
		r := &Resolver{Config: cfg, Env: envOf(map[string]string{env: "x"})}
		got, err := r.Default()
		if err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", env, got, err, want)
			continue
		}
		ts, err := r.Resolve(got)
		if err != nil || !ts[0].Info.Known || !ts[0].Info.PricesKnown || ts[0].Provider.APIKey != "x" {
			t.Errorf("%s: default %s resolves to %+v, %v", env, got, ts, err)
		}
	}
	for _, name := range defaultOrder {
		b := builtins[name]
		if _, _, ok := lookup(b.model); !ok {
			t.Errorf("%s: default model %q is not in the catalog", name, b.model)
		}
	}
	if _, err := (&Resolver{Config: cfg, Env: envOf(nil)}).Default(); !errors.Is(err, ErrNoModel) {
		t.Errorf("no key: %v", err)
	}
}

func TestCost(t *testing.T) {
	i, _, _ := lookup("claude-sonnet-4-5")
	got := i.Cost(llm.Usage{InputTokens: 1_000_000, OutputTokens: 100_000, CacheReadTokens: 1_000_000})
	if want := 3 + 1.5 + 0.3; got < want-1e-9 || got > want+1e-9 {
		t.Errorf("cost %v want %v", got, want)
	}
}

func TestPrepareClamps(t *testing.T) {
	tg := Target{Model: "m", Info: Info{ContextWindow: 100_000, MaxOutput: 64_000, Thinking: false}}
	r := Prepare(tg, &llm.Request{Thinking: llm.ThinkingHigh}, 90_000)
	if r.Model != "m" || r.MaxTokens != 10_000 || r.Thinking != llm.ThinkingOff {
		t.Errorf("clamped %+v", r)
	}
	r = Prepare(tg, &llm.Request{MaxTokens: 500_000}, 0)
	if r.MaxTokens != 64_000 {
		t.Errorf("max tokens %d", r.MaxTokens)
	}
	r = Prepare(tg, &llm.Request{}, 0)
	if r.MaxTokens != 32_000 {
		t.Errorf("default max tokens %d", r.MaxTokens)
	}
}

// TestPrepareLeavesOutImages: a fallback that takes no images gets a
// note in each image's place, in messages and tool results; the caller's
// history is untouched, and a model that takes images gets them.
func TestPrepareLeavesOutImages(t *testing.T) {
	img := &llm.Image{MediaType: "image/png", Data: []byte("png")}
	req := &llm.Request{Messages: []llm.Message{
		{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: "look"}, img}},
		{Role: llm.Assistant, Parts: []llm.Part{&llm.ToolCall{ID: "c", Name: "read_image"}}},
		{Role: llm.User, Parts: []llm.Part{&llm.ToolResult{CallID: "c", Name: "read_image", Content: []llm.Part{&llm.Text{Text: "1x1"}, img}}}},
	}}
	text := Target{Ref: "local/llama", Model: "llama", Info: Info{Images: false}}
	r := Prepare(text, req, 0)
	for i, m := range r.Messages {
		for _, p := range m.Parts {
			parts := []llm.Part{p}
			if res, ok := p.(*llm.ToolResult); ok {
				parts = res.Content
			}
			for _, p := range parts {
				if _, ok := p.(*llm.Image); ok {
					t.Errorf("message %d still has an image for a model without image input", i)
				}
			}
		}
	}
	if got := llm.TextOf(r.Messages[0]); !strings.Contains(got, "left out: local/llama does not take images") {
		t.Errorf("no note in the image's place: %q", got)
	}
	if req.Messages[0].Parts[1] != img || req.Messages[2].Parts[0].(*llm.ToolResult).Content[1] != img {
		t.Error("Prepare changed the caller's history")
	}
	vision := Target{Ref: "anthropic/claude-sonnet-5-5", Model: "claude-sonnet-5-5", Info: Info{Images: true}}
	if r := Prepare(vision, req, 0); r.Messages[0].Parts[1] != img {
		t.Error("a model that takes images lost its image")
	}
}
