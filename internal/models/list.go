package models

import (
	"errors"
	"net/url"
	"sort"
	"strings"

	"den.dev/den/internal/llm"
)

// ProviderState is a provider as a settings page shows it: never its
// key, only whether there is one and where it comes from.
type ProviderState struct {
	Name       string
	Type       string // anthropic, openai, openai-responses, gemini
	BaseURL    string // "" for the API's own; a password in it is masked
	Builtin    bool   // den knows it without configuration
	Configured bool   // the config has [providers.NAME]
	HasKey     bool
	KeyFrom    string // KeyConfig, KeyEnv or KeyNone
	KeyEnv     string // the variable the key is (or would be) read from; "" for none
	// Problem, when not "", says why den cannot call the provider: no
	// key (and its endpoint is not on this machine, where a server may
	// need none), or a bad base URL. Its models are unavailable then.
	Problem string
}

// Providers lists the built-in providers and the config's, by name; a
// config's [providers.NAME] replaces the built-in of that name.
func (r *Resolver) Providers() []ProviderState {
	names := map[string]bool{}
	for name := range builtins {
		names[name] = true
	}
	for name := range r.Config.Providers {
		names[name] = true
	}
	out := make([]ProviderState, 0, len(names))
	for name := range names {
		p, src, err := r.providerKey(name)
		if err != nil {
			continue // every name above is known
		}
		_, builtin := builtins[name]
		_, configured := r.Config.Providers[name]
		st := ProviderState{Name: name, Type: p.Type, BaseURL: masked(p.BaseURL), Builtin: builtin, Configured: configured,
			HasKey: p.APIKey != "", KeyFrom: src.from, KeyEnv: src.env}
		// An adapter refuses what it cannot call; made, it has done no
		// I/O yet. Its error is not shown: it may quote the base URL.
		switch _, err := Open(Target{Provider: p}); {
		case errors.Is(err, llm.ErrNoKey):
			st.Problem = "no API key"
			if src.env != "" {
				st.Problem += ": set " + src.env + " in den's environment, or the provider's api_key"
			}
		case err != nil:
			st.Problem = "den cannot call it with these settings (is its base URL right?)"
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// masked is a base URL with a password in it replaced, as url.Redacted
// does; a URL that does not parse is left out.
func masked(base string) string {
	if base == "" {
		return ""
	}
	u, err := url.Parse(base)
	if err != nil {
		return "(a base URL den cannot read)"
	}
	return u.Redacted()
}

// Listed is a model den knows of.
type Listed struct {
	Ref      string // provider/model
	Provider string
	Info     Info
	// Problem, when not "", says why the ref does not resolve (its
	// provider is unknown); Info is then empty.
	Problem string
}

// Known lists the catalog's models, each under the built-in provider
// that serves it, with the config's [models] overrides applied, and
// every other ref the config names: in [models], in groups, as an
// agent's model (a group's name aside) or allowed model. Sorted by
// ref, each once.
func (r *Resolver) Known() []Listed {
	refs := map[string]bool{}
	for name := range catalog {
		if ref := catalogRef(name); ref != "" {
			refs[ref] = true
		}
	}
	for ref := range r.Config.Models {
		refs[ref] = true
	}
	for _, g := range r.Config.Groups {
		for _, m := range g.Members {
			refs[m] = true
		}
	}
	for _, a := range r.Config.Agents {
		if _, group := r.Config.Groups[a.Model]; !group && strings.Contains(a.Model, "/") {
			refs[a.Model] = true
		}
		for _, m := range a.AllowedModels {
			if strings.Contains(m, "/") {
				refs[m] = true
			}
		}
	}
	out := make([]Listed, 0, len(refs))
	for ref := range refs {
		prov, _, _ := strings.Cut(ref, "/")
		l := Listed{Ref: ref, Provider: prov}
		if t, err := r.target(ref); err != nil {
			l.Problem = err.Error()
		} else {
			l.Info = t.Info
		}
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ref < out[j].Ref })
	return out
}

// vendors are the built-in providers that serve the catalog's models,
// by the start of a model's name; the longest start that fits wins.
// OpenAI's models are listed on its Responses API, which takes tools
// together with reasoning (see builtins).
var vendors = map[string]string{
	"claude-":   "anthropic",
	"gpt-":      "openai-responses",
	"chatgpt-":  "openai-responses",
	"o3":        "openai-responses",
	"o4-":       "openai-responses",
	"gemini-":   "gemini",
	"deepseek-": "deepseek",
	"kimi-":     "moonshot",
	"grok-":     "xai",
	"gpt-oss-":  "groq",
	"llama-":    "groq",
}

// wireNames are catalog models whose provider names them otherwise.
var wireNames = map[string]string{
	"gpt-oss-120b": "openai/gpt-oss-120b", // Groq's id
}

// catalogRef is the ref of a catalog model under its provider ("" for
// a name no vendor's start fits; TestCatalogRefs keeps there being none).
func catalogRef(name string) string {
	vendor, best := "", 0
	for start, v := range vendors {
		if strings.HasPrefix(name, start) && len(start) > best {
			vendor, best = v, len(start)
		}
	}
	if vendor == "" {
		return ""
	}
	if w, ok := wireNames[name]; ok {
		name = w
	}
	return vendor + "/" + name
}
