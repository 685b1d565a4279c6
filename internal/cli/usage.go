package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"den.dev/den/internal/store"
)

func usageCmd(g *globals) *cobra.Command {
	var agentName, session string
	var since time.Duration
	var asJSON, bySession, byPart bool
	var limit int
	c := &cobra.Command{
		Use:   "usage",
		Short: "Tokens and cost, per session or per agent",
		Long: `Print the tokens (input, output, cache reads and writes), requests and cost
recorded for a session (--session) or an agent (default: the agent
"default"; --since limits it to a recent period), and the cache hit rate:
the share of all input tokens (uncached, cache reads and cache writes)
read from the provider's prompt cache.

--by-session adds the agent's sessions, those with the most input first
(--limit of them, 0 for all), each with its prompt (all input tokens),
cache reads, hit rate and cost.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if bySession && session != "" {
				return usageError{errors.New("--by-session lists an agent's sessions; it does not go with --session")}
			}
			st, err := g.openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			var u store.Usage
			var sessions []store.SessionTotal
			var total, last map[string]int64
			what := ""
			if session != "" {
				if _, err := st.GetSession(cmd.Context(), session); errors.Is(err, store.ErrNotFound) {
					return usageError{fmt.Errorf("no session %q", session)}
				}
				u, err = st.SessionUsage(cmd.Context(), session)
				if err == nil {
					total, last, _, err = st.SessionBreakdown(cmd.Context(), session)
				}
				what = "session " + session
			} else {
				var from time.Time
				if since > 0 {
					from = time.Now().Add(-since)
				}
				u, err = st.AgentUsage(cmd.Context(), agentName, from)
				if err == nil && bySession {
					sessions, err = st.AgentUsageBySession(cmd.Context(), agentName, from, limit)
				}
				what = "agent " + agentName
				if since > 0 {
					what += fmt.Sprintf(" (last %v)", since)
				}
			}
			if err != nil {
				return err
			}
			if asJSON {
				out := usageJSON(u)
				if bySession {
					rows := []map[string]any{}
					for _, s := range sessions {
						row := usageJSON(s.Usage)
						row["session"], row["title"] = s.Session, s.Title
						rows = append(rows, row)
					}
					out["sessions"] = rows
				}
				if byPart {
					// Objects, so only when asked: scripts read the
					// other fields as numbers.
					out["breakdown"], out["last_request"] = total, last
				}
				return json.NewEncoder(g.stdout).Encode(out)
			}
			// The older lines keep their spacing: scripts and the
			// end-to-end tests match them.
			fmt.Fprintf(g.stdout, "%s\n  requests      %d\n  input         %d\n  output        %d\n  cache read    %d\n  cache write   %d\n  cache hit rate  %s\n  cost          $%.4f\n",
				what, u.Requests, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, hitRate(u), u.CostUSD)
			if bySession {
				return printSessionUsage(g.stdout, sessions)
			}
			if len(total) > 0 {
				printBreakdown(g.stdout, total, last)
			}
			return nil
		},
	}
	c.Flags().StringVar(&agentName, "agent", "default", "agent")
	c.Flags().StringVar(&session, "session", "", "one session")
	c.Flags().DurationVar(&since, "since", 0, "only the last DURATION (e.g. 24h)")
	c.Flags().BoolVar(&bySession, "by-session", false, "also list the agent's sessions, most input first")
	c.Flags().IntVar(&limit, "limit", 10, "with --by-session, at most this many sessions (0: all)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVar(&byPart, "by-part", false, `with --session --json, add "breakdown" and "last_request": the input tokens by part`)
	return c
}

// usageJSON is u as den usage --json prints it; cache_hit_rate is from
// 0 to 1.
func usageJSON(u store.Usage) map[string]any {
	return map[string]any{
		"requests": u.Requests, "input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
		"cache_read_tokens": u.CacheReadTokens, "cache_write_tokens": u.CacheWriteTokens,
		"cache_hit_rate": u.CacheHitRate(), "cost_usd": u.CostUSD,
	}
}

// hitRate is u's cache hit rate as a whole percentage, or "-" when u
// had no input at all.
func hitRate(u store.Usage) string {
	if u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*u.CacheHitRate())
}

// printSessionUsage prints the per-session table of den usage
// --by-session.
func printSessionUsage(w io.Writer, sessions []store.SessionTotal) error {
	if len(sessions) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tREQUESTS\tPROMPT\tCACHE READ\tHIT RATE\tCOST\tTITLE")
	for _, s := range sessions {
		id := s.Session
		if id == "" {
			id = "(deleted)"
		}
		prompt := s.InputTokens + s.CacheReadTokens + s.CacheWriteTokens
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t$%.4f\t%s\n", id, s.Requests, prompt, s.CacheReadTokens, hitRate(s.Usage), s.CostUSD, clip(s.Title, 40))
	}
	return tw.Flush()
}

// clip shortens s to at most n runes, marking a cut with "…".
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// breakdownOrder is the order the parts of a request are shown in.
var breakdownOrder = []string{"system", "skills", "memory", "context_files", "mcp", "tools", "history", "attachments"}

// printBreakdown prints what a session's requests were made of: every
// request's input tokens (uncached, cache reads and writes) summed by
// part, and the last request's.
func printBreakdown(w io.Writer, total, last map[string]int64) {
	fmt.Fprintln(w, "\ninput by part (the provider's count shared by den's estimates)")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "PART\tALL REQUESTS\tLAST REQUEST\t")
	names := append([]string(nil), breakdownOrder...)
	for k := range total {
		if !slices.Contains(names, k) {
			names = append(names, k)
		}
	}
	var sumAll, sumLast int64
	for _, k := range names {
		if total[k] == 0 && last[k] == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", k, total[k], last[k])
		sumAll, sumLast = sumAll+total[k], sumLast+last[k]
	}
	fmt.Fprintf(tw, "total\t%d\t%d\t\n", sumAll, sumLast)
	tw.Flush()
}
