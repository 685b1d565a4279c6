package server

import (
	"net/http"
	"sort"

	"den.dev/den/internal/models"
	"den.dev/den/internal/server/reply"
)

// modelJSON is a model as GET /api/v1/models shows it. Prices are USD
// per million tokens, 0 when not known (prices_known false).
type modelJSON struct {
	Ref             string   `json:"ref"`
	Provider        string   `json:"provider"`
	ContextWindow   int      `json:"context_window"`
	MaxOutput       int      `json:"max_output"`
	Input           []string `json:"input"` // "text", and "image" for a model den sends images
	Thinking        bool     `json:"thinking"`
	PriceInput      float64  `json:"price_input"`
	PriceOutput     float64  `json:"price_output"`
	PriceCacheRead  float64  `json:"price_cache_read"`
	PriceCacheWrite float64  `json:"price_cache_write"`
	Known           bool     `json:"known"` // den's catalog knows it; else the window and limits are assumed
	PricesKnown     bool     `json:"prices_known"`
	Available       bool     `json:"available"` // its provider has a key, or an endpoint on this machine
	Problem         string   `json:"problem,omitempty"`
}

// providerJSON is a provider as GET /api/v1/models shows it: never its
// key.
type providerJSON struct {
	Name       string `json:"name"`
	Type       string `json:"type"`
	BaseURL    string `json:"base_url"` // "": the API's own
	Builtin    bool   `json:"builtin"`
	Configured bool   `json:"configured"` // the config has [providers.NAME]
	HasKey     bool   `json:"has_key"`
	KeyFrom    string `json:"key_from"`          // config, env or none
	KeyEnv     string `json:"key_env,omitempty"` // the variable den reads the key from
	Available  bool   `json:"available"`
	Problem    string `json:"problem,omitempty"`
}

type groupJSON struct {
	Name     string   `json:"name"`
	Members  []string `json:"members"`
	Strategy string   `json:"strategy"` // fallback or always
}

// listModels answers den's models (its catalog and every ref the
// config names), providers and groups, and the model an agent without
// one uses ("" when no provider has a key).
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) error {
	cfg := s.rt.Config()
	res := &models.Resolver{Config: cfg}
	available := map[string]bool{}
	providers := []providerJSON{}
	for _, p := range res.Providers() {
		available[p.Name] = p.Problem == ""
		providers = append(providers, providerJSON{Name: p.Name, Type: p.Type, BaseURL: p.BaseURL, Builtin: p.Builtin, Configured: p.Configured,
			HasKey: p.HasKey, KeyFrom: p.KeyFrom, KeyEnv: p.KeyEnv, Available: p.Problem == "", Problem: p.Problem})
	}
	list := []modelJSON{}
	for _, l := range res.Known() {
		m := modelJSON{Ref: l.Ref, Provider: l.Provider, Problem: l.Problem, Available: l.Problem == "" && available[l.Provider]}
		if l.Problem == "" {
			i := l.Info
			m.ContextWindow, m.MaxOutput, m.Thinking, m.Known, m.PricesKnown = i.ContextWindow, i.MaxOutput, i.Thinking, i.Known, i.PricesKnown
			m.PriceInput, m.PriceOutput, m.PriceCacheRead, m.PriceCacheWrite = i.PriceInput, i.PriceOutput, i.PriceCacheRead, i.PriceCacheWrite
			m.Input = []string{"text"}
			if i.Images {
				m.Input = append(m.Input, "image")
			}
		}
		list = append(list, m)
	}
	groups := []groupJSON{}
	for name, g := range cfg.Groups {
		strategy := g.Strategy
		if strategy == "" {
			strategy = "fallback"
		}
		groups = append(groups, groupJSON{Name: name, Members: g.Members, Strategy: strategy})
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].Name < groups[j].Name })
	def, err := res.Default()
	if err != nil {
		def = "" // no provider has a key: an agent without a model cannot run
	}
	return reply.JSON(w, http.StatusOK, map[string]any{"models": list, "providers": providers, "groups": groups, "default_model": def})
}
