// Package models knows den's models: a built-in catalog (context window,
// output limit, modalities, thinking support, prices) that the config
// file can override, the built-in providers and the environment
// variables holding their keys, and the resolution of a model
// reference ("provider/model", a group's name, or a comma-separated
// chain) into concrete targets.
package models

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"den.dev/den/internal/config"
	"den.dev/den/internal/llm"
)

// Info is what den knows about a model.
type Info struct {
	ContextWindow int
	MaxOutput     int
	Images        bool
	Thinking      bool
	// Prices in USD per million tokens.
	PriceInput, PriceOutput, PriceCacheRead, PriceCacheWrite float64
}

// Cost prices one request's usage.
func (i Info) Cost(u llm.Usage) float64 {
	return (float64(u.InputTokens)*i.PriceInput + float64(u.OutputTokens)*i.PriceOutput +
		float64(u.CacheReadTokens)*i.PriceCacheRead + float64(u.CacheWriteTokens)*i.PriceCacheWrite) / 1e6
}

// catalog holds current models by their API name. Prices are list
// prices at the time of writing; the config file overrides them.
var catalog = map[string]Info{
	"claude-opus-4-1":   {200_000, 32_000, true, true, 15, 75, 1.5, 18.75},
	"claude-sonnet-4-5": {200_000, 64_000, true, true, 3, 15, 0.3, 3.75},
	"claude-sonnet-4":   {200_000, 64_000, true, true, 3, 15, 0.3, 3.75},
	"claude-haiku-4-5":  {200_000, 64_000, true, true, 1, 5, 0.1, 1.25},
	"gpt-5":             {400_000, 128_000, true, true, 1.25, 10, 0.125, 0},
	"gpt-5-mini":        {400_000, 128_000, true, true, 0.25, 2, 0.025, 0},
	"gpt-5-nano":        {400_000, 128_000, true, true, 0.05, 0.4, 0.005, 0},
	"gpt-4.1":           {1_047_576, 32_768, true, false, 2, 8, 0.5, 0},
	"gpt-4.1-mini":      {1_047_576, 32_768, true, false, 0.4, 1.6, 0.1, 0},
	"o3":                {200_000, 100_000, true, true, 2, 8, 0.5, 0},
	"o4-mini":           {200_000, 100_000, true, true, 1.1, 4.4, 0.275, 0},
	"gemini-2.5-pro":    {1_048_576, 65_536, true, true, 1.25, 10, 0.31, 0},
	"gemini-2.5-flash":  {1_048_576, 65_536, true, true, 0.3, 2.5, 0.075, 0},
	"deepseek-chat":     {128_000, 8_000, false, false, 0.27, 1.1, 0.07, 0},
	"deepseek-reasoner": {128_000, 64_000, false, true, 0.55, 2.19, 0.14, 0},
	"kimi-k2":           {128_000, 16_000, false, false, 0.6, 2.5, 0.15, 0},
	"grok-4":            {256_000, 64_000, true, true, 3, 15, 0.75, 0},
}

// unknown is assumed of a model the catalog does not know.
var unknown = Info{ContextWindow: 128_000, MaxOutput: 8_192}

// builtin are the providers den knows without configuration.
type builtin struct {
	typ, baseURL string
	keyEnvs      []string // the first one set is used
	baseEnv      string
	model        string // the default model when this is the only key
	keyless      bool
}

var builtins = map[string]builtin{
	"anthropic":        {typ: "anthropic", keyEnvs: []string{"ANTHROPIC_API_KEY"}, baseEnv: "ANTHROPIC_BASE_URL", model: "claude-sonnet-4-5"},
	"openai":           {typ: "openai", keyEnvs: []string{"OPENAI_API_KEY"}, baseEnv: "OPENAI_BASE_URL", model: "gpt-5"},
	"openai-responses": {typ: "openai-responses", keyEnvs: []string{"OPENAI_API_KEY"}, baseEnv: "OPENAI_BASE_URL", model: "gpt-5"},
	"gemini":           {typ: "gemini", keyEnvs: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, baseEnv: "GEMINI_BASE_URL", model: "gemini-2.5-pro"},
	"openrouter":       {typ: "openai", baseURL: "https://openrouter.ai/api/v1", keyEnvs: []string{"OPENROUTER_API_KEY"}, model: "anthropic/claude-sonnet-4.5"},
	"deepseek":         {typ: "openai", baseURL: "https://api.deepseek.com", keyEnvs: []string{"DEEPSEEK_API_KEY"}, model: "deepseek-chat"},
	"moonshot":         {typ: "openai", baseURL: "https://api.moonshot.ai/v1", keyEnvs: []string{"MOONSHOT_API_KEY", "KIMI_API_KEY"}, model: "kimi-k2"},
	"xai":              {typ: "openai", baseURL: "https://api.x.ai/v1", keyEnvs: []string{"XAI_API_KEY"}, model: "grok-4"},
	"groq":             {typ: "openai", baseURL: "https://api.groq.com/openai/v1", keyEnvs: []string{"GROQ_API_KEY"}, model: "llama-3.3-70b-versatile"},
	"ollama":           {typ: "openai", baseURL: "http://localhost:11434/v1", keyless: true},
}

// defaultOrder is the order in which a lone key picks the default model.
var defaultOrder = []string{"anthropic", "openai", "gemini", "openrouter", "deepseek", "moonshot", "xai", "groq"}

// Errors.
var (
	ErrUnknownProvider = errors.New("unknown provider")
	ErrNoModel         = errors.New("no model configured")
	ErrBadRef          = errors.New("bad model reference")
)

// Target is one concrete model to call.
type Target struct {
	Ref      string // "provider/model"
	Provider llm.Provider
	Model    string
	Info     Info
}

// Resolver turns model references into targets.
type Resolver struct {
	Config *config.Config
	Env    func(string) string // os.Getenv when nil
}

func (r *Resolver) env(k string) string {
	if r.Env != nil {
		return r.Env(k)
	}
	return os.Getenv(k)
}

// Resolve expands a reference: "provider/model", a group's name, or
// several of those separated by commas (a fallback chain). Members
// whose provider has no key are kept, marked by an empty APIKey; the
// caller skips them (and says so) when it falls back.
func (r *Resolver) Resolve(ref string) ([]Target, error) {
	var out []Target
	for _, part := range strings.Split(ref, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if g, ok := r.Config.Groups[part]; ok {
			for _, m := range g.Members {
				t, err := r.target(m)
				if err != nil {
					return nil, fmt.Errorf("group %s: %w", part, err)
				}
				out = append(out, t)
			}
			continue
		}
		t, err := r.target(part)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: empty reference", ErrBadRef)
	}
	return out, nil
}

// target resolves one "provider/model".
func (r *Resolver) target(ref string) (Target, error) {
	prov, model, ok := strings.Cut(ref, "/")
	if !ok || prov == "" || model == "" {
		return Target{}, fmt.Errorf("%w: %q: want provider/model (e.g. anthropic/claude-sonnet-4-5) or a group's name", ErrBadRef, ref)
	}
	p, err := r.provider(prov)
	if err != nil {
		return Target{}, err
	}
	return Target{Ref: ref, Provider: p, Model: model, Info: r.info(ref, model)}, nil
}

// provider builds the named provider from config or the built-ins.
func (r *Resolver) provider(name string) (llm.Provider, error) {
	if c, ok := r.Config.Providers[name]; ok {
		p := llm.Provider{Name: name, Type: c.Type, BaseURL: c.BaseURL, APIKey: c.APIKey, Headers: c.Headers}
		if p.APIKey == "" && c.APIKeyEnv != "" {
			p.APIKey = r.env(c.APIKeyEnv)
		}
		if p.APIKey == "" {
			if b, ok := builtins[c.Type]; ok {
				p.APIKey = r.firstEnv(b.keyEnvs)
			}
		}
		return p, nil
	}
	b, ok := builtins[name]
	if !ok {
		known := make([]string, 0, len(builtins)+len(r.Config.Providers))
		for k := range builtins {
			known = append(known, k)
		}
		for k := range r.Config.Providers {
			known = append(known, k)
		}
		sort.Strings(known)
		return llm.Provider{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownProvider, name, strings.Join(known, ", "))
	}
	p := llm.Provider{Name: name, Type: b.typ, BaseURL: b.baseURL, APIKey: r.firstEnv(b.keyEnvs)}
	if b.baseEnv != "" {
		if u := r.env(b.baseEnv); u != "" {
			p.BaseURL = u
		}
	}
	return p, nil
}

func (r *Resolver) firstEnv(names []string) string {
	for _, n := range names {
		if v := r.env(n); v != "" {
			return v
		}
	}
	return ""
}

// info finds catalog facts, applying the config's overrides.
func (r *Resolver) info(ref, model string) Info {
	i, ok := catalog[model]
	if !ok {
		// OpenRouter-style ids ("anthropic/claude-sonnet-4.5").
		base := model[strings.LastIndexByte(model, '/')+1:]
		if i, ok = catalog[strings.ReplaceAll(base, ".", "-")]; !ok {
			i = unknown
		}
	}
	if o, ok := r.Config.Models[ref]; ok {
		if o.ContextWindow > 0 {
			i.ContextWindow = o.ContextWindow
		}
		if o.MaxOutput > 0 {
			i.MaxOutput = o.MaxOutput
		}
		if len(o.Input) > 0 {
			i.Images = false
			for _, in := range o.Input {
				if in == "image" {
					i.Images = true
				}
			}
		}
		if o.Thinking != nil {
			i.Thinking = *o.Thinking
		}
		set := func(dst *float64, src *float64) {
			if src != nil {
				*dst = *src
			}
		}
		set(&i.PriceInput, o.PriceInput)
		set(&i.PriceOutput, o.PriceOutput)
		set(&i.PriceCacheRead, o.PriceCacheRead)
		set(&i.PriceCacheWrite, o.PriceCacheWrite)
	}
	return i
}

// Default picks the model when neither the command line nor the agent
// names one: the first built-in provider with a key set.
func (r *Resolver) Default() (string, error) {
	for _, name := range defaultOrder {
		b := builtins[name]
		if r.firstEnv(b.keyEnvs) != "" {
			return name + "/" + b.model, nil
		}
	}
	return "", fmt.Errorf("%w: set ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY or OPENROUTER_API_KEY (or another provider's key), or name a model with --model", ErrNoModel)
}
