package agent

import (
	"errors"
	"fmt"

	"den.dev/den/internal/llm"
)

// ErrBudget ends a run that would cross its budget.
var ErrBudget = errors.New("budget reached")

// Budget is a hard limit on what a run may spend. Zero fields mean no
// limit. Spent fields carry what the session spent before this run, for
// limits that count the whole session.
type Budget struct {
	MaxCostUSD float64
	MaxTokens  int64
	// What counts already (the session's totals for a session budget).
	SpentCostUSD float64
	SpentTokens  int64
	// Others, when set, is what was spent outside this run's own
	// requests since it started that counts against its limits (its
	// session's sub-agents'), asked before every request.
	Others func() (costUSD float64, tokens int64)
	// Shared, when set, is asked before every request whether a limit
	// this run shares with other runs (a sub-agent's parent's budget)
	// lets it make a request of about tokens tokens costing about
	// costUSD; it returns an error wrapping ErrBudget when not.
	Shared func(tokens int64, costUSD float64) error
}

// meter tracks a run's spending against its budget.
type meter struct {
	b          Budget
	cost       float64
	tokens     int64
	lastInput  int64 // everything the last request sent, cache included
	lastOutput int64
}

func (m *meter) add(u llm.Usage, cost float64) {
	m.cost += cost
	m.tokens += u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
	m.lastInput = u.InputTokens + u.CacheReadTokens + u.CacheWriteTokens
	m.lastOutput = u.OutputTokens
}

// check refuses the next request when it would likely cross the budget:
// its input is estimated from the history, and is at least what the
// last request sent plus the answer it got (history only grows within a
// run); its output is estimated from the last answer (at least 1,000
// tokens).
func (m *meter) check(estInput int64, price func(llm.Usage) float64) error {
	if m.b.MaxCostUSD <= 0 && m.b.MaxTokens <= 0 && m.b.Shared == nil {
		return nil
	}
	estInput = max(estInput, m.lastInput+m.lastOutput)
	estOut := max(m.lastOutput, 1000)
	var otherCost float64
	var otherTokens int64
	if m.b.Others != nil {
		otherCost, otherTokens = m.b.Others()
	}
	if m.b.MaxTokens > 0 {
		spent := m.b.SpentTokens + m.tokens + otherTokens
		if next := estInput + estOut; spent+next > m.b.MaxTokens {
			return fmt.Errorf("%w: %d of %d tokens spent; the next request needs about %d more", ErrBudget, spent, m.b.MaxTokens, next)
		}
	}
	if m.b.MaxCostUSD > 0 && price != nil {
		spent := m.b.SpentCostUSD + m.cost + otherCost
		next := price(llm.Usage{InputTokens: estInput, OutputTokens: estOut})
		if spent+next > m.b.MaxCostUSD {
			return fmt.Errorf("%w: $%.4f of $%.4f spent; the next request would cost about $%.4f", ErrBudget, spent, m.b.MaxCostUSD, next)
		}
	}
	if m.b.Shared != nil {
		var next float64
		if price != nil {
			next = price(llm.Usage{InputTokens: estInput, OutputTokens: estOut})
		}
		return m.b.Shared(estInput+estOut, next)
	}
	return nil
}
