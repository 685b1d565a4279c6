package models

import (
	"errors"
	"strings"
	"testing"

	"den.dev/den/internal/config"
	"den.dev/den/internal/llm"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

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

func TestDefault(t *testing.T) {
	cfg := &config.Config{}
	for env, want := range map[string]string{"OPENAI_API_KEY": "openai/gpt-5", "GOOGLE_API_KEY": "gemini/gemini-2.5-pro", "OPENROUTER_API_KEY": "openrouter/anthropic/claude-sonnet-4.5"} {
		r := &Resolver{Config: cfg, Env: envOf(map[string]string{env: "x"})}
		if got, err := r.Default(); err != nil || got != want {
			t.Errorf("%s: %q %v", env, got, err)
		}
	}
	if _, err := (&Resolver{Config: cfg, Env: envOf(nil)}).Default(); !errors.Is(err, ErrNoModel) {
		t.Errorf("no key: %v", err)
	}
	// OpenRouter ids find the catalog entry.
	r := &Resolver{Config: cfg, Env: envOf(nil)}
	ts, _ := r.Resolve("openrouter/anthropic/claude-sonnet-4.5")
	if ts[0].Model != "anthropic/claude-sonnet-4.5" || ts[0].Info.PriceOutput != 15 {
		t.Errorf("openrouter target %+v", ts[0])
	}
}

func TestCost(t *testing.T) {
	i := catalog["claude-sonnet-4-5"]
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
