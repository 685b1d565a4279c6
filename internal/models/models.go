package models

import (
	"errors"
	"fmt"
	"net/url"
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
	// Known says the catalog knows the model. When false, the window,
	// output limit, image input and thinking are den's assumptions
	// (unknown), less what the config's [models] table sets.
	Known bool
	// PricesKnown says every price above is known, from the catalog or
	// the config's [models] table (all four prices for a model the
	// catalog does not know). When false, Cost is not what the model
	// costs, and a budget cannot rely on it.
	PricesKnown bool
}

// Cost prices one request's usage.
func (i Info) Cost(u llm.Usage) float64 {
	return (float64(u.InputTokens)*i.PriceInput + float64(u.OutputTokens)*i.PriceOutput +
		float64(u.CacheReadTokens)*i.PriceCacheRead + float64(u.CacheWriteTokens)*i.PriceCacheWrite) / 1e6
}

// unknown is assumed of a model the catalog does not know; whether it
// takes images depends on its provider (imagesByDefault).
var unknown = Info{ContextWindow: 128_000, MaxOutput: 8_192}

// builtin are the providers den knows without configuration.
type builtin struct {
	typ, baseURL string
	keyEnvs      []string // the first one set is used
	baseEnv      string
	model        string // the default model when this is the only key
	keyless      bool
}

// builtins' default models were checked on 2026-12-01 against each
// provider's models and deprecations pages (see catalog). A lone
// OPENAI_API_KEY defaults to the Responses API: Chat Completions
// refuses function tools together with reasoning on GPT-5.4 and later
// (GPT-6.2 Sol takes no effort of "none"), and den's agent always sends
// tools.
var builtins = map[string]builtin{
	"anthropic":        {typ: "anthropic", keyEnvs: []string{"ANTHROPIC_API_KEY"}, baseEnv: "ANTHROPIC_BASE_URL", model: "claude-sonnet-5-5"},
	"openai":           {typ: "openai", keyEnvs: []string{"OPENAI_API_KEY"}, baseEnv: "OPENAI_BASE_URL"},
	"openai-responses": {typ: "openai-responses", keyEnvs: []string{"OPENAI_API_KEY"}, baseEnv: "OPENAI_BASE_URL", model: "gpt-6.2-sol"},
	"gemini":           {typ: "gemini", keyEnvs: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY"}, baseEnv: "GEMINI_BASE_URL", model: "gemini-3.8-flash"},
	"openrouter":       {typ: "openai", baseURL: "https://openrouter.ai/api/v1", keyEnvs: []string{"OPENROUTER_API_KEY"}, model: "anthropic/claude-sonnet-5.5"},
	"deepseek":         {typ: "openai", baseURL: "https://api.deepseek.com", keyEnvs: []string{"DEEPSEEK_API_KEY"}, model: "deepseek-flash"},
	"moonshot":         {typ: "openai", baseURL: "https://api.moonshot.ai/v1", keyEnvs: []string{"MOONSHOT_API_KEY", "KIMI_API_KEY"}, model: "kimi-k3"},
	"xai":              {typ: "openai", baseURL: "https://api.x.ai/v1", keyEnvs: []string{"XAI_API_KEY"}, model: "grok-4.7"},
	"groq":             {typ: "openai", baseURL: "https://api.groq.com/openai/v1", keyEnvs: []string{"GROQ_API_KEY"}, model: "openai/gpt-oss-120b"},
	"ollama":           {typ: "openai", baseURL: "http://localhost:11434/v1", keyless: true},
}

// defaultOrder is the order in which a lone key picks the default model.
var defaultOrder = []string{"anthropic", "openai-responses", "gemini", "openrouter", "deepseek", "moonshot", "xai", "groq"}

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
		return Target{}, fmt.Errorf("%w: %q: want provider/model (e.g. anthropic/claude-sonnet-5-5) or a group's name", ErrBadRef, ref)
	}
	p, err := r.provider(prov)
	if err != nil {
		return Target{}, err
	}
	return Target{Ref: ref, Provider: p, Model: model, Info: r.info(p, ref, model)}, nil
}

// provider builds the named provider from config or the built-ins.
func (r *Resolver) provider(name string) (llm.Provider, error) {
	p, _, err := r.providerKey(name)
	return p, err
}

// keySource is where a provider's key came from: KeyConfig, KeyEnv or
// KeyNone, and the variable it was (or would be) read from.
type keySource struct {
	from, env string
}

// Where a provider's key comes from.
const (
	KeyConfig = "config" // api_key in the config file
	KeyEnv    = "env"    // a variable of den's environment
	KeyNone   = "none"
)

// providerKey is provider, and where the key came from.
func (r *Resolver) providerKey(name string) (llm.Provider, keySource, error) {
	if c, ok := r.Config.Providers[name]; ok {
		p := llm.Provider{Name: name, Type: c.Type, BaseURL: c.BaseURL, APIKey: c.APIKey, Headers: c.Headers}
		src := keySource{from: KeyConfig}
		if p.APIKey == "" && c.APIKeyEnv != "" {
			src.env = c.APIKeyEnv
			p.APIKey = r.env(c.APIKeyEnv)
		}
		if p.APIKey == "" {
			if b, ok := builtins[c.Type]; ok {
				if v, env := r.firstEnv(b.keyEnvs); v != "" {
					p.APIKey, src.env = v, env
				} else if src.env == "" {
					src.env = env
				}
			}
		}
		switch {
		case p.APIKey == "":
			src.from = KeyNone
		case c.APIKey == "":
			src.from = KeyEnv
		}
		return p, src, nil
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
		return llm.Provider{}, keySource{}, fmt.Errorf("%w %q (known: %s)", ErrUnknownProvider, name, strings.Join(known, ", "))
	}
	key, env := r.firstEnv(b.keyEnvs)
	src := keySource{from: KeyEnv, env: env}
	if key == "" {
		src.from = KeyNone
	}
	p := llm.Provider{Name: name, Type: b.typ, BaseURL: b.baseURL, APIKey: key}
	if b.baseEnv != "" {
		if u := r.env(b.baseEnv); u != "" {
			p.BaseURL = u
		}
	}
	return p, src, nil
}

// firstEnv is the value of the first of names that is set, and its
// name; with none set, "" and the first name ("" if there are none).
func (r *Resolver) firstEnv(names []string) (value, name string) {
	for _, n := range names {
		if v := r.env(n); v != "" {
			return v, n
		}
	}
	if len(names) == 0 {
		return "", ""
	}
	return "", names[0]
}

// info finds catalog facts, applying the config's overrides.
func (r *Resolver) info(p llm.Provider, ref, model string) Info {
	i, _, ok := lookup(model)
	if !ok {
		i = unknown
		i.Images = imagesByDefault(p)
	}
	o, ok := r.Config.Models[ref]
	if !ok {
		return i
	}
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
	if len(missingPrices(o)) == 0 {
		i.PricesKnown = true
	}
	return i
}

// imagesByDefault says whether a model the catalog does not know is
// sent images: yes on the APIs that take them (Anthropic, OpenAI's two,
// Gemini, and OpenRouter, which converts for the models behind it), no
// on other OpenAI-compatible servers (DeepSeek, Groq, Moonshot, xAI,
// Ollama, a local server), where an image the model cannot read fails
// the request. The config's input setting decides otherwise.
func imagesByDefault(p llm.Provider) bool {
	switch p.Type {
	case "anthropic", "openai-responses", "gemini":
		return true
	case "openai":
		if p.Name == "openai" || p.Name == "openrouter" || p.BaseURL == "" {
			return true
		}
		u, err := url.Parse(p.BaseURL)
		return err == nil && (u.Hostname() == "api.openai.com" || u.Hostname() == "openrouter.ai")
	}
	return false
}

// missingPrices lists the config keys of the prices o leaves unset.
func missingPrices(o config.Model) []string {
	var keys []string
	for _, p := range []struct {
		key string
		v   *float64
	}{{"price_input", o.PriceInput}, {"price_output", o.PriceOutput}, {"price_cache_read", o.PriceCacheRead}, {"price_cache_write", o.PriceCacheWrite}} {
		if p.v == nil {
			keys = append(keys, p.key)
		}
	}
	return keys
}

// Explain says, in one line for a person, what den assumed about the
// model of t because neither the catalog nor the config knows it, and
// which [models] keys in the config would tell den instead. It is empty
// when nothing den needs (window, output limit, image input, prices) is
// assumed.
func (r *Resolver) Explain(t Target) string {
	if t.Info.Known {
		return ""
	}
	o := r.Config.Models[t.Ref]
	var assumed, keys []string
	if o.ContextWindow <= 0 {
		assumed = append(assumed, fmt.Sprintf("a %d-token context window", t.Info.ContextWindow))
		keys = append(keys, "context_window = …")
	}
	if o.MaxOutput <= 0 {
		assumed = append(assumed, fmt.Sprintf("at most %d output tokens", t.Info.MaxOutput))
		keys = append(keys, "max_output = …")
	}
	if len(o.Input) == 0 {
		if t.Info.Images {
			assumed = append(assumed, "image input (as its provider takes images)")
			keys = append(keys, `input = ["text"]`)
		} else {
			assumed = append(assumed, "no image input")
			keys = append(keys, `input = ["text", "image"]`)
		}
	}
	if !t.Info.PricesKnown {
		assumed = append(assumed, "no prices (its cost counts as $0, so budgets do not limit it)")
		for _, k := range missingPrices(o) {
			keys = append(keys, k+" = …")
		}
	}
	if len(assumed) == 0 {
		return ""
	}
	if o.Thinking == nil {
		assumed = append(assumed, "no thinking")
		keys = append(keys, "thinking = true")
	}
	return fmt.Sprintf("den does not know the model %q and assumes %s; to tell den, set [models.%q] %s in the config (prices in USD per million tokens)",
		t.Ref, strings.Join(assumed, ", "), t.Ref, strings.Join(keys, ", "))
}

// Default picks the model when neither the command line nor the agent
// names one: the first built-in provider with a key set.
func (r *Resolver) Default() (string, error) {
	for _, name := range defaultOrder {
		b := builtins[name]
		if key, _ := r.firstEnv(b.keyEnvs); key != "" {
			return name + "/" + b.model, nil
		}
	}
	return "", fmt.Errorf("%w: set ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY or OPENROUTER_API_KEY (or another provider's key), or name a model with --model", ErrNoModel)
}
