package server

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestModels: den's catalog and the config's models, providers (where
// each key comes from, never the key) and groups; a model is available
// when its provider has a key or a local endpoint.
func TestModels(t *testing.T) {
	for _, k := range []string{"OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OPENROUTER_API_KEY", "DEEPSEEK_API_KEY",
		"MOONSHOT_API_KEY", "KIMI_API_KEY", "XAI_API_KEY", "GROQ_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "GEMINI_BASE_URL"} {
		t.Setenv(k, "") // den reads an empty variable as unset
	}
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-env-secret-0123456789")
	a := newAPI(t, `
[providers.local]
type = "openai"
base_url = "http://127.0.0.1:9/v1"

[providers.work]
type = "openai"
base_url = "https://llm.example/v1"
api_key = "sk-work-config-secret-0123456789"

[providers.remote]
type = "openai"
base_url = "https://other.example/v1"

[models."local/qwen"]
context_window = 32000
input = ["text"]
price_input = 0.5

[groups.fast]
members = ["anthropic/claude-haiku-5-5", "local/qwen"]

[groups.both]
members = ["remote/big", "work/big"]
strategy = "always"
`, nil)
	code, body := a.do("GET", "/api/v1/models", "")
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, body)
	}
	for _, secret := range []string{"sk-ant-env-secret", "sk-work-config-secret"} {
		if strings.Contains(body, secret) {
			t.Errorf("the answer holds a key: %s", secret)
		}
	}
	var got struct {
		Models       []modelJSON    `json:"models"`
		Providers    []providerJSON `json:"providers"`
		Groups       []groupJSON    `json:"groups"`
		DefaultModel string         `json:"default_model"`
	}
	a.call("GET", "/api/v1/models", "", http.StatusOK, &got)
	if got.DefaultModel != "anthropic/claude-sonnet-5-5" {
		t.Errorf("default model %q", got.DefaultModel)
	}
	wantGroups := []groupJSON{
		{Name: "both", Members: []string{"remote/big", "work/big"}, Strategy: "always"},
		{Name: "fast", Members: []string{"anthropic/claude-haiku-5-5", "local/qwen"}, Strategy: "fallback"},
	}
	if d := cmp.Diff(wantGroups, got.Groups); d != "" {
		t.Errorf("groups (-want +got):\n%s", d)
	}
	providers := map[string]providerJSON{}
	for _, p := range got.Providers {
		providers[p.Name] = p
	}
	for name, want := range map[string]providerJSON{
		"anthropic": {Name: "anthropic", Type: "anthropic", Builtin: true, HasKey: true, KeyFrom: "env", KeyEnv: "ANTHROPIC_API_KEY", Available: true},
		"local":     {Name: "local", Type: "openai", BaseURL: "http://127.0.0.1:9/v1", Configured: true, KeyFrom: "none", KeyEnv: "OPENAI_API_KEY", Available: true},
		"work":      {Name: "work", Type: "openai", BaseURL: "https://llm.example/v1", Configured: true, HasKey: true, KeyFrom: "config", Available: true},
		"remote": {Name: "remote", Type: "openai", BaseURL: "https://other.example/v1", Configured: true, KeyFrom: "none", KeyEnv: "OPENAI_API_KEY",
			Problem: "no API key: set OPENAI_API_KEY in den's environment, or the provider's api_key"},
	} {
		if d := cmp.Diff(want, providers[name]); d != "" {
			t.Errorf("provider %s (-want +got):\n%s", name, d)
		}
	}
	list := map[string]modelJSON{}
	for _, m := range got.Models {
		list[m.Ref] = m
	}
	for ref, want := range map[string]modelJSON{
		"local/qwen": {Ref: "local/qwen", Provider: "local", ContextWindow: 32000, MaxOutput: 8192, Input: []string{"text"}, PriceInput: 0.5, Available: true},
		"remote/big": {Ref: "remote/big", Provider: "remote", ContextWindow: 128000, MaxOutput: 8192, Input: []string{"text"}},
		"work/big":   {Ref: "work/big", Provider: "work", ContextWindow: 128000, MaxOutput: 8192, Input: []string{"text"}, Available: true},
	} {
		if d := cmp.Diff(want, list[ref]); d != "" {
			t.Errorf("model %s (-want +got):\n%s", ref, d)
		}
	}
	if m := list["anthropic/claude-sonnet-5-5"]; !m.Available || !m.Known || !m.PricesKnown || m.PriceInput == 0 || m.ContextWindow == 0 ||
		!cmp.Equal(m.Input, []string{"text", "image"}) || m.Provider != "anthropic" {
		t.Errorf("a catalog model with a key: %+v", m)
	}
	if m, ok := list["gemini/gemini-3.8-flash"]; !ok || m.Available || !m.Known {
		t.Errorf("a catalog model without a key: %+v", m)
	}
	if _, ok := list["fast"]; ok {
		t.Error("a group is listed as a model")
	}

	// Without a key anywhere, there is no default model.
	t.Setenv("ANTHROPIC_API_KEY", "")
	a.call("GET", "/api/v1/models", "", http.StatusOK, &got)
	if p := got.Providers[0]; got.DefaultModel != "" || p.Name != "anthropic" || p.Available || p.HasKey {
		t.Errorf("no key: default %q, anthropic %+v", got.DefaultModel, got.Providers[0])
	}
}
