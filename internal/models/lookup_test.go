package models

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestLookup: names as users, providers and gateways write them find
// the right catalog entry, with its canonical name and facts.
func TestLookup(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		// Canonical names find themselves.
		{"claude-sonnet-4-5", "claude-sonnet-4-5"},
		{"gpt-4.1", "gpt-4.1"},
		{"gemini-2.5-pro", "gemini-2.5-pro"},
		{"chatgpt-4o-latest", "chatgpt-4o-latest"},
		{"kimi-k2-thinking", "kimi-k2-thinking"},
		// Dated snapshots.
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"claude-3-7-sonnet-20250219", "claude-3-7-sonnet"},
		{"claude-opus-4-1-20250805", "claude-opus-4-1"},
		{"claude-opus-4-20250514", "claude-opus-4"},
		{"claude-sonnet-4-20250514", "claude-sonnet-4"},
		{"claude-haiku-4-5-20251001", "claude-haiku-4-5"},
		{"claude-3-5-haiku-20241022", "claude-3-5-haiku"},
		{"claude-opus-4-5-20251101", "claude-opus-4-5"},
		{"gpt-5-2025-08-07", "gpt-5"},
		{"gpt-5-mini-2025-08-07", "gpt-5-mini"},
		{"gpt-4.1-2025-04-14", "gpt-4.1"},
		{"gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"},
		{"gpt-4o-2024-08-06", "gpt-4o"},
		{"gpt-4o-mini-2024-07-18", "gpt-4o-mini"},
		{"o3-2025-04-16", "o3"},
		{"o3-mini-2025-01-31", "o3-mini"},
		{"o4-mini-2025-04-16", "o4-mini"},
		{"gemini-2.5-flash-preview-05-20", "gemini-2.5-flash"},
		{"gemini-2.5-pro-preview-06-05", "gemini-2.5-pro"},
		{"gemini-2.5-flash-preview-09-2025", "gemini-2.5-flash"},
		{"gemini-2.5-flash-lite-preview-06-17", "gemini-2.5-flash-lite"},
		{"gemini-2.0-flash-001", "gemini-2.0-flash"},
		{"gemini-2.0-flash-exp", "gemini-2.0-flash"},
		{"gpt-6.1-sol-2026-09-29", "gpt-6.1-sol"},
		// Aliases.
		{"claude-sonnet-4-0", "claude-sonnet-4"},
		{"claude-opus-4-0", "claude-opus-4"},
		{"claude-3-7-sonnet-latest", "claude-3-7-sonnet"},
		{"claude-3-5-haiku-latest", "claude-3-5-haiku"},
		{"gemini-flash-latest", "gemini-3.8-flash"},
		{"grok-4-latest", "grok-4"},
		{"grok-4-0709", "grok-4"},
		{"gpt-5-chat-latest", "gpt-5-chat"},
		{"gpt-5.6", "gpt-5.6-sol"},
		{"kimi-k2-0905-preview", "kimi-k2"},
		{"kimi-k2-0711-preview", "kimi-k2"},
		{"kimi-k2-turbo-preview", "kimi-k2-turbo"},
		{"deepseek-v4-flash", "deepseek-flash"},
		{"claude-opus-4-8[1m]", "claude-opus-4-8"},
		{"claude-sonnet-4-5@20250929", "claude-sonnet-4-5"},
		{"Claude-Sonnet-4-5", "claude-sonnet-4-5"},
		// Gateways' vendor/model ids, dots or dashes, with suffixes.
		{"anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"},
		{"anthropic/claude-opus-4.1", "claude-opus-4-1"},
		{"anthropic/claude-3.7-sonnet:thinking", "claude-3-7-sonnet"},
		{"anthropic/claude-sonnet-5.5", "claude-sonnet-5-5"},
		{"openai/gpt-5-mini", "gpt-5-mini"},
		{"openai/gpt-5-chat", "gpt-5-chat"},
		{"openai/gpt-4.1", "gpt-4.1"},
		{"openai/gpt-6.2-sol", "gpt-6.2-sol"},
		{"openai/gpt-oss-120b", "gpt-oss-120b"},
		{"google/gemini-2.5-pro", "gemini-2.5-pro"},
		{"google/gemini-2.5-flash-preview-09-2025", "gemini-2.5-flash"},
		{"x-ai/grok-4", "grok-4"},
		{"x-ai/grok-4.7", "grok-4.7"},
		{"moonshotai/kimi-k2", "kimi-k2"},
		{"moonshotai/kimi-k2-0905", "kimi-k2"},
		{"moonshotai/kimi-k2-instruct", "kimi-k2"},
		{"deepseek/deepseek-chat-v3.1", "deepseek-chat"},
		{"deepseek/deepseek-chat-v3-0324", "deepseek-chat"},
		{"deepseek/deepseek-r1", "deepseek-reasoner"},
		{"models/gemini-2.5-flash", "gemini-2.5-flash"},
	} {
		got, key, ok := lookup(tc.name)
		if !ok || key != tc.want {
			t.Errorf("lookup(%q) = %q, %v; want %q", tc.name, key, ok, tc.want)
			continue
		}
		if diff := cmp.Diff(catalog[tc.want].info(), got); diff != "" {
			t.Errorf("lookup(%q) info (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestLookupNearMisses: a sibling's name never borrows another entry,
// and a name with a tail den does not recognise stays unknown rather
// than taking the window and prices of a shorter name.
func TestLookupNearMisses(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"gpt-5-mini", "gpt-5-mini"},
		{"gpt-5-nano", "gpt-5-nano"},
		{"gpt-5-chat", "gpt-5-chat"},
		{"gpt-4.1-mini", "gpt-4.1-mini"},
		{"o3-mini", "o3-mini"},
		{"claude-sonnet-4-5", "claude-sonnet-4-5"},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"claude-opus-4-1", "claude-opus-4-1"},
		{"claude-sonnet-5-5", "claude-sonnet-5-5"},
		{"gemini-2.5-flash-lite", "gemini-2.5-flash-lite"},
		{"kimi-k2-turbo-preview", "kimi-k2-turbo"},
		{"kimi-k2.6", "kimi-k2.6"},
		{"grok-3-mini", "grok-3-mini"},
		{"gpt-6.2-sol", "gpt-6.2-sol"},
	} {
		if _, key, ok := lookup(tc.name); !ok || key != tc.want {
			t.Errorf("lookup(%q) = %q, %v; want %q", tc.name, key, ok, tc.want)
		}
	}
	for _, name := range []string{
		"gpt-5-codex", "gpt-5-pro", "gpt-5.3-codex", "gpt-6-luna-fast", "gpt-6", "gpt-10", "gpt-5-10",
		"claude-sonnet-4-7", "claude-opus-4-9", "claude-sonnet", "claude", "sonnet",
		"gemini-2.5-flash-image", "gemini-pro-latest", "gemini-3.1-pro-preview",
		"kimi-k2.5", "grok-4.20-0309-reasoning", "grok-4-fast-reasoning",
		"o1", "gpt-4.5-preview", "meta-llama/llama-3.3-70b-instruct", "qwen", "mistral-large-2411",
		"llama3", "2025-08-07", "20250929", "latest", "", "   ", "/",
	} {
		if _, key, ok := lookup(name); ok {
			t.Errorf("lookup(%q) = %q, want unknown", name, key)
		}
	}
}

// TestLookupFree: an OpenRouter ":free" variant keeps the entry's limits
// and costs nothing; other variants keep the price.
func TestLookupFree(t *testing.T) {
	i, key, ok := lookup("moonshotai/kimi-k2:free")
	want := catalog["kimi-k2"].info()
	want.PriceInput, want.PriceOutput, want.PriceCacheRead, want.PriceCacheWrite = 0, 0, 0, 0
	if !ok || key != "kimi-k2" {
		t.Fatalf("lookup = %q, %v", key, ok)
	}
	if diff := cmp.Diff(want, i); diff != "" {
		t.Errorf("free variant (-want +got):\n%s", diff)
	}
	if i, _, _ := lookup("anthropic/claude-3.7-sonnet:thinking"); i.PriceOutput != 15 {
		t.Errorf(":thinking variant lost its price: %+v", i)
	}
}

// TestTrim: each suffix rule, and the names it must leave alone.
func TestTrim(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"gpt-5-2025-08-07", "gpt-5"},
		{"gemini-2-5-flash-preview-05-20", "gemini-2-5-flash-preview"},
		{"gemini-2-5-flash-preview-09-2025", "gemini-2-5-flash-preview"},
		{"grok-4-0709", "grok-4"},
		{"gemini-2-0-flash-001", "gemini-2-0-flash"},
		{"claude-sonnet-4-0", "claude-sonnet-4"},
		{"grok-4-latest", "grok-4"},
		{"kimi-k2-turbo-preview", "kimi-k2-turbo"},
		{"o3-2025-04-16", "o3"},
	} {
		if got, ok := trim(tc.in); !ok || got != tc.want {
			t.Errorf("trim(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
		}
	}
	for _, in := range []string{"gpt-5", "gpt-5-mini", "claude-opus-4-1", "gpt-4-1", "gpt-5-10", "x-13-20", "kimi-k2-6", "gpt-oss-120b", "2025-08-07", "latest", "o3"} {
		if got, ok := trim(in); ok {
			t.Errorf("trim(%q) = %q, want it left alone", in, got)
		}
	}
}

// TestCatalog: the table is consistent — names are unique once
// normalized, each finds itself, aliases point at entries, and every
// row's numbers are plausible.
func TestCatalog(t *testing.T) {
	seen := map[string]string{}
	for key, s := range catalog {
		if key != strings.ToLower(key) || strings.ContainsAny(key, "/:@[ ") {
			t.Errorf("catalog name %q is not a normalized API name", key)
		}
		if other, ok := seen[dashed(key)]; ok {
			t.Errorf("%q and %q normalize alike", key, other)
		}
		seen[dashed(key)] = key
		if _, got, ok := lookup(key); !ok || got != key {
			t.Errorf("lookup(%q) = %q, %v", key, got, ok)
		}
		if s.window <= 0 || s.output <= 0 || s.output > s.window {
			t.Errorf("%s: window %d, output %d", key, s.window, s.output)
		}
		if s.in <= 0 || s.out <= 0 || s.read < 0 || s.read > s.in || s.written < 0 {
			t.Errorf("%s: prices %v %v %v %v", key, s.in, s.out, s.read, s.written)
		}
	}
	for alias, key := range aliases {
		if _, ok := catalog[key]; !ok {
			t.Errorf("alias %q names %q, not in the catalog", alias, key)
		}
		if n, _ := normalize(alias); n != alias {
			t.Errorf("alias %q is not normalized (%q)", alias, n)
		}
		if other, ok := seen[alias]; ok {
			t.Errorf("alias %q shadows catalog entry %q", alias, other)
		}
	}
}
