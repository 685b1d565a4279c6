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
	if m.b.MaxCostUSD <= 0 && m.b.MaxTokens <= 0 {
		return nil
	}
	estInput = max(estInput, m.lastInput+m.lastOutput)
	estOut := max(m.lastOutput, 1000)
	if m.b.MaxTokens > 0 {
		spent := m.b.SpentTokens + m.tokens
		if next := estInput + estOut; spent+next > m.b.MaxTokens {
			return fmt.Errorf("%w: %d of %d tokens spent; the next request needs about %d more", ErrBudget, spent, m.b.MaxTokens, next)
		}
	}
	if m.b.MaxCostUSD > 0 && price != nil {
		spent := m.b.SpentCostUSD + m.cost
		next := price(llm.Usage{InputTokens: estInput, OutputTokens: estOut})
		if spent+next > m.b.MaxCostUSD {
			return fmt.Errorf("%w: $%.4f of $%.4f spent; the next request would cost about $%.4f", ErrBudget, spent, m.b.MaxCostUSD, next)
		}
	}
	return nil
}
