package models

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/config"
)

// TestCatalogRefs: every catalog model is listed under a built-in
// provider, by a name that finds the same catalog entry again.
func TestCatalogRefs(t *testing.T) {
	for name := range catalog {
		ref := catalogRef(name)
		prov, model, ok := strings.Cut(ref, "/")
		if !ok {
			t.Errorf("%s: no provider serves it (add its start to vendors)", name)
			continue
		}
		if _, ok := builtins[prov]; !ok {
			t.Errorf("%s: listed under %s, not a built-in provider", name, prov)
		}
		if _, key, ok := lookup(model); !ok || key != name {
			t.Errorf("%s: listed as %s, which finds %q", name, ref, key)
		}
	}
	for _, c := range [][2]string{
		{"claude-sonnet-5-5", "anthropic/claude-sonnet-5-5"},
		{"gpt-6.2-sol", "openai-responses/gpt-6.2-sol"},
		{"gpt-oss-120b", "groq/openai/gpt-oss-120b"},
		{"o3", "openai-responses/o3"},
		{"kimi-k3", "moonshot/kimi-k3"},
	} {
		if got := catalogRef(c[0]); got != c[1] {
			t.Errorf("catalogRef(%s) = %s, want %s", c[0], got, c[1])
		}
	}
}

// TestProviders: each provider with where its key comes from (never the
// key) and whether den can call it.
func TestProviders(t *testing.T) {
	cfg := &config.Config{Providers: map[string]config.Provider{
		"local":     {Type: "openai", BaseURL: "http://127.0.0.1:8080/v1"},
		"work":      {Type: "anthropic", APIKey: "sk-work-secret"},
		"proxy":     {Type: "openai", BaseURL: "https://user:hunter2@proxy.example/v1", APIKeyEnv: "PROXY_KEY"},
		"remote":    {Type: "openai", BaseURL: "https://llm.example/v1", APIKeyEnv: "REMOTE_KEY"},
		"anthropic": {Type: "anthropic", BaseURL: "https://gateway.example"},
	}}
	r := &Resolver{Config: cfg, Env: envOf(map[string]string{"ANTHROPIC_API_KEY": "sk-env-secret", "PROXY_KEY": "pk-secret", "GOOGLE_API_KEY": "g-secret"})}
	got := map[string]ProviderState{}
	for _, p := range r.Providers() {
		got[p.Name] = p
	}
	for name := range builtins {
		if _, ok := got[name]; !ok {
			t.Errorf("built-in %s not listed", name)
		}
	}
	want := map[string]ProviderState{
		"local":     {Name: "local", Type: "openai", BaseURL: "http://127.0.0.1:8080/v1", Configured: true, KeyFrom: KeyNone, KeyEnv: "OPENAI_API_KEY"},
		"work":      {Name: "work", Type: "anthropic", Configured: true, HasKey: true, KeyFrom: KeyConfig},
		"proxy":     {Name: "proxy", Type: "openai", BaseURL: "https://user:xxxxx@proxy.example/v1", Configured: true, HasKey: true, KeyFrom: KeyEnv, KeyEnv: "PROXY_KEY"},
		"remote":    {Name: "remote", Type: "openai", BaseURL: "https://llm.example/v1", Configured: true, KeyFrom: KeyNone, KeyEnv: "REMOTE_KEY", Problem: "no API key: set REMOTE_KEY in den's environment, or the provider's api_key"},
		"anthropic": {Name: "anthropic", Type: "anthropic", BaseURL: "https://gateway.example", Builtin: true, Configured: true, HasKey: true, KeyFrom: KeyEnv, KeyEnv: "ANTHROPIC_API_KEY"},
		"gemini":    {Name: "gemini", Type: "gemini", Builtin: true, HasKey: true, KeyFrom: KeyEnv, KeyEnv: "GOOGLE_API_KEY"},
		"xai":       {Name: "xai", Type: "openai", BaseURL: "https://api.x.ai/v1", Builtin: true, KeyFrom: KeyNone, KeyEnv: "XAI_API_KEY", Problem: "no API key: set XAI_API_KEY in den's environment, or the provider's api_key"},
		"ollama":    {Name: "ollama", Type: "openai", BaseURL: "http://localhost:11434/v1", Builtin: true, KeyFrom: KeyNone},
	}
	for name, w := range want {
		if d := cmp.Diff(w, got[name]); d != "" {
			t.Errorf("%s (-want +got):\n%s", name, d)
		}
	}
	for _, p := range got {
		for _, secret := range []string{"secret", "hunter2"} {
			if strings.Contains(p.BaseURL+p.Problem, secret) {
				t.Errorf("%s shows a secret: %+v", p.Name, p)
			}
		}
	}
}

// TestKnown: the catalog's models and every ref the config names, each
// once, with the config's facts; a ref that does not resolve says why.
func TestKnown(t *testing.T) {
	cfg := &config.Config{
		Providers: map[string]config.Provider{"local": {Type: "openai", BaseURL: "http://127.0.0.1:8080/v1"}},
		Models:    map[string]config.Model{"local/qwen": {ContextWindow: 32000, Input: []string{"text"}}, "anthropic/claude-sonnet-5-5": {MaxOutput: 1000}},
		Groups:    map[string]config.Group{"fast": {Members: []string{"anthropic/claude-haiku-5-5", "nosuch/model"}}},
		Agents: map[string]config.Agent{
			"a": {Model: "fast", AllowedModels: []string{"local/llama"}},
			"b": {Model: "openrouter/anthropic/claude-sonnet-5.5"},
		},
	}
	r := &Resolver{Config: cfg, Env: envOf(nil)}
	got := map[string]Listed{}
	for i, l := range r.Known() {
		if _, dup := got[l.Ref]; dup {
			t.Errorf("%s listed twice", l.Ref)
		}
		got[l.Ref] = l
		if i > 0 && r.Known()[i-1].Ref > l.Ref {
			t.Errorf("not sorted at %s", l.Ref)
		}
	}
	if len(got) < len(catalog) {
		t.Errorf("%d models listed, the catalog has %d", len(got), len(catalog))
	}
	for ref, check := range map[string]func(Listed) bool{
		"local/qwen":                  func(l Listed) bool { return l.Provider == "local" && l.Info.ContextWindow == 32000 && !l.Info.Images },
		"local/llama":                 func(l Listed) bool { return l.Provider == "local" && !l.Info.Known && l.Problem == "" },
		"anthropic/claude-sonnet-5-5": func(l Listed) bool { return l.Info.Known && l.Info.MaxOutput == 1000 && l.Info.PriceInput > 0 },
		"anthropic/claude-haiku-5-5":  func(l Listed) bool { return l.Info.Known },
		"openrouter/anthropic/claude-sonnet-5.5": func(l Listed) bool {
			return l.Provider == "openrouter" && l.Info.Known
		},
		"nosuch/model":             func(l Listed) bool { return l.Provider == "nosuch" && strings.Contains(l.Problem, "unknown provider") },
		"groq/openai/gpt-oss-120b": func(l Listed) bool { return l.Provider == "groq" && l.Info.Known },
	} {
		if l, ok := got[ref]; !ok || !check(l) {
			t.Errorf("%s: %+v (listed: %v)", ref, l, ok)
		}
	}
	if _, ok := got["fast"]; ok {
		t.Error("a group's name is listed as a model")
	}
}
