package session

import (
	"fmt"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/config"
	"den.dev/den/internal/models"
	"den.dev/den/internal/models/retry"
	"den.dev/den/internal/store"
)

// parseBudget reads a budget (config.ParseBudget).
func parseBudget(s string) (usd float64, tokens int64, err error) { return config.ParseBudget(s) }

// parseBudgets combines the run and session budgets: the tighter limit
// of each kind wins, a session budget counting what the session spent.
func parseBudgets(run, session string, sess store.Session) (agent.Budget, error) {
	var b agent.Budget
	usd, tok, err := parseBudget(run)
	if err != nil {
		return b, err
	}
	b.MaxCostUSD, b.MaxTokens = usd, tok
	susd, stok, err := parseBudget(session)
	if err != nil {
		return b, err
	}
	spentUSD := sess.Usage.CostUSD
	spentTok := sess.Usage.InputTokens + sess.Usage.OutputTokens + sess.Usage.CacheReadTokens + sess.Usage.CacheWriteTokens
	if susd > 0 && (b.MaxCostUSD == 0 || susd-spentUSD < b.MaxCostUSD) {
		b.MaxCostUSD, b.SpentCostUSD = susd, spentUSD
	}
	if stok > 0 && (b.MaxTokens == 0 || stok-spentTok < b.MaxTokens) {
		b.MaxTokens, b.SpentTokens = stok, spentTok
	}
	return b, nil
}

// retryPolicy reads [retry] from the config; --stall-timeout wins.
func retryPolicy(cfg *config.Config, stall time.Duration) (retry.Policy, error) {
	var p retry.Policy
	for _, d := range cfg.Retry.Delays {
		v, err := time.ParseDuration(d)
		if err != nil || v < 0 {
			return p, fmt.Errorf("config: retry.delays: %q is not a duration", d)
		}
		p.Delays = append(p.Delays, v)
	}
	if cfg.Retry.Delays != nil && len(p.Delays) == 0 {
		p.Delays = []time.Duration{}
	}
	if cfg.Retry.StallTimeout != "" {
		v, err := time.ParseDuration(cfg.Retry.StallTimeout)
		if err != nil || v <= 0 {
			return p, fmt.Errorf("config: retry.stall_timeout: %q is not a positive duration", cfg.Retry.StallTimeout)
		}
		p.Stall = v
	}
	if stall < 0 {
		return p, fmt.Errorf("stall timeout %v: want a positive duration", stall)
	}
	if stall > 0 {
		p.Stall = stall
	}
	return p, nil
}

// strategyOf is the group's strategy when ref names one group.
func strategyOf(cfg *config.Config, ref string) string {
	if g, ok := cfg.Groups[ref]; ok {
		return g.Strategy
	}
	return ""
}

// priceOf is what den knows of the model of chain that answered as ref
// (the chain's first model when ref is none of its, which cannot
// happen for refs the chain itself reports).
func priceOf(chain *retry.Model, ref string) models.Info {
	if t, ok := chain.Target(ref); ok {
		return t.Info
	}
	return chain.Targets[0].Info
}

func agentInstructions(a config.Agent) (string, error) {
	if a.InstructionsFile == "" {
		return a.Instructions, nil
	}
	b, err := os.ReadFile(a.InstructionsFile)
	if err != nil {
		return "", fmt.Errorf("instructions file: %w", err)
	}
	return strings.TrimSpace(a.Instructions + "\n\n" + string(b)), nil
}

func title(prompt string) string {
	t := strings.Join(strings.Fields(prompt), " ")
	if utf8.RuneCountInString(t) > 60 {
		t = string([]rune(t)[:60]) + "…"
	}
	return t
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
