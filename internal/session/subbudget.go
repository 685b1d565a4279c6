package session

import (
	"context"
	"fmt"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/store"
)

// ledger is a session's budget for its current (or last) run, which
// its sub-agents' spending counts against: the limits, and what the
// session and its sub-agents had spent when the run started.
type ledger struct {
	runUSD, sessUSD float64
	runTok, sessTok int64
	start           store.Usage
}

// subagentsBudget is the budget of sess's next run with its sub-agents'
// spending counted in: what they spent before it counts against a
// session budget, what they spend during it against both; a
// sub-agent's profile budget bounds its session; and a sub-agent asks
// its parents' budgets before each request. It records the run's
// limits for sess's own sub-agents to ask.
func (r *Runtime) subagentsBudget(ctx context.Context, sess store.Session, opts TurnOptions, su setup) (agent.Budget, error) {
	desc, err := r.st.DescendantUsage(ctx, sess.ID)
	if err != nil {
		return agent.Budget{}, err
	}
	all := sess
	all.Usage = addUsage(sess.Usage, desc)
	b, err := parseBudgets(opts.Budget, opts.SessionBudget, all)
	if err != nil {
		return b, err
	}
	g := &ledger{start: all.Usage}
	g.runUSD, g.runTok, _ = parseBudget(opts.Budget)
	g.sessUSD, g.sessTok, _ = parseBudget(opts.SessionBudget)
	if su.isChild() && su.profile.Budget != "" {
		pb, err := parseBudgets("", su.profile.Budget, all)
		if err != nil {
			return b, err
		}
		b = tighter(b, pb)
		pusd, ptok, _ := parseBudget(su.profile.Budget)
		if pusd > 0 && (g.sessUSD == 0 || pusd < g.sessUSD) {
			g.sessUSD = pusd
		}
		if ptok > 0 && (g.sessTok == 0 || ptok < g.sessTok) {
			g.sessTok = ptok
		}
	}
	r.subs.mu.Lock()
	if r.subs.ledgers == nil {
		r.subs.ledgers = map[string]*ledger{}
	}
	r.subs.ledgers[sess.ID] = g
	r.subs.mu.Unlock()
	id := sess.ID
	b.Others = func() (float64, int64) {
		now, err := r.st.DescendantUsage(context.WithoutCancel(ctx), id)
		if err != nil {
			r.log.Warn("sub-agents' usage", "session", id, "err", err)
			return 0, 0
		}
		return now.CostUSD - desc.CostUSD, tokensOf(now) - tokensOf(desc)
	}
	if su.isChild() {
		parent := su.parent.ID
		b.Shared = func(tokens int64, cost float64) error { return r.parentsAllow(ctx, parent, tokens, cost) }
	}
	return b, nil
}

// parentsAllow asks the budgets of session and the sessions above it
// whether a request of a sub-agent below them, of about tokens costing
// about cost, fits: each counts what it and all its sub-agents spent.
func (r *Runtime) parentsAllow(ctx context.Context, session string, tokens int64, cost float64) error {
	for range 16 {
		if session == "" {
			return nil
		}
		s, err := r.st.GetSession(ctx, session)
		if err != nil {
			return err
		}
		r.subs.mu.Lock()
		g := r.subs.ledgers[session]
		r.subs.mu.Unlock()
		if g != nil {
			desc, err := r.st.DescendantUsage(ctx, session)
			if err != nil {
				return err
			}
			all := addUsage(s.Usage, desc)
			over := func(what string, spent, limit, next float64, unit string) error {
				return fmt.Errorf("%w: the budget of session %s (%s, %s%g) would be crossed: %s%.4g spent by it and its sub-agents, and this request needs about %s%.4g more",
					agent.ErrBudget, session, what, unit, limit, unit, spent, unit, next)
			}
			if r.Running(session) {
				if g.runUSD > 0 && all.CostUSD-g.start.CostUSD+cost > g.runUSD {
					return over("its run's", all.CostUSD-g.start.CostUSD, g.runUSD, cost, "$")
				}
				if spent := tokensOf(all) - tokensOf(g.start); g.runTok > 0 && spent+tokens > g.runTok {
					return over("its run's, in tokens", float64(spent), float64(g.runTok), float64(tokens), "")
				}
			}
			if g.sessUSD > 0 && all.CostUSD+cost > g.sessUSD {
				return over("the session's", all.CostUSD, g.sessUSD, cost, "$")
			}
			if g.sessTok > 0 && tokensOf(all)+tokens > g.sessTok {
				return over("the session's, in tokens", float64(tokensOf(all)), float64(g.sessTok), float64(tokens), "")
			}
		}
		session = s.Parent
	}
	return nil
}

// tighter keeps, for each kind of limit, the one with less left.
func tighter(a, b agent.Budget) agent.Budget {
	if b.MaxCostUSD > 0 && (a.MaxCostUSD == 0 || b.MaxCostUSD-b.SpentCostUSD < a.MaxCostUSD-a.SpentCostUSD) {
		a.MaxCostUSD, a.SpentCostUSD = b.MaxCostUSD, b.SpentCostUSD
	}
	if b.MaxTokens > 0 && (a.MaxTokens == 0 || b.MaxTokens-b.SpentTokens < a.MaxTokens-a.SpentTokens) {
		a.MaxTokens, a.SpentTokens = b.MaxTokens, b.SpentTokens
	}
	return a
}

func addUsage(a, b store.Usage) store.Usage {
	return store.Usage{Requests: a.Requests + b.Requests, InputTokens: a.InputTokens + b.InputTokens, OutputTokens: a.OutputTokens + b.OutputTokens,
		CacheReadTokens: a.CacheReadTokens + b.CacheReadTokens, CacheWriteTokens: a.CacheWriteTokens + b.CacheWriteTokens, CostUSD: a.CostUSD + b.CostUSD}
}

func tokensOf(u store.Usage) int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}
