package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"den.dev/den/internal/store"
)

func usageCmd(g *globals) *cobra.Command {
	var agentName, session string
	var since time.Duration
	var asJSON bool
	c := &cobra.Command{
		Use:   "usage",
		Short: "Tokens and cost, per session or per agent",
		Long: `Print the tokens (input, output, cache reads and writes), requests and cost
recorded for a session (--session) or an agent (default: the agent
"default"; --since limits it to a recent period).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			var u store.Usage
			what := ""
			if session != "" {
				if _, err := st.GetSession(cmd.Context(), session); errors.Is(err, store.ErrNotFound) {
					return usageError{fmt.Errorf("no session %q", session)}
				}
				u, err = st.SessionUsage(cmd.Context(), session)
				what = "session " + session
			} else {
				var from time.Time
				if since > 0 {
					from = time.Now().Add(-since)
				}
				u, err = st.AgentUsage(cmd.Context(), agentName, from)
				what = "agent " + agentName
				if since > 0 {
					what += fmt.Sprintf(" (last %v)", since)
				}
			}
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(g.stdout).Encode(map[string]any{
					"requests": u.Requests, "input_tokens": u.InputTokens, "output_tokens": u.OutputTokens,
					"cache_read_tokens": u.CacheReadTokens, "cache_write_tokens": u.CacheWriteTokens, "cost_usd": u.CostUSD,
				})
			}
			fmt.Fprintf(g.stdout, "%s\n  requests      %d\n  input         %d\n  output        %d\n  cache read    %d\n  cache write   %d\n  cost          $%.4f\n",
				what, u.Requests, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.CostUSD)
			return nil
		},
	}
	c.Flags().StringVar(&agentName, "agent", "default", "agent")
	c.Flags().StringVar(&session, "session", "", "one session")
	c.Flags().DurationVar(&since, "since", 0, "only the last DURATION (e.g. 24h)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
