package cli

import (
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"den.dev/den/internal/store"
)

// auditCmd is den audit: the log of host-command calls, newest first.
func auditCmd(g *globals) *cobra.Command {
	var f store.AuditFilter
	var limit int
	var asJSON bool
	c := &cobra.Command{
		Use:   "audit",
		Short: "Show the log of host-command calls, newest first",
		Long: `Show the log of host-command calls, newest first: when, which agent and
session, the command with its arguments (secrets redacted), the decision and
who made it (policy, rule, session, user, auto, unattended, timeout,
canceled, error), the exit code and how long the call ran.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit <= 0 {
				return usageError{fmt.Errorf("--limit %d: want a positive number", limit)}
			}
			st, err := g.openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			list, err := st.ListAudit(cmd.Context(), f, limit)
			if err != nil {
				return err
			}
			if asJSON {
				type row struct {
					ID         int64    `json:"id"`
					Time       string   `json:"time"`
					Agent      string   `json:"agent"`
					Session    string   `json:"session"`
					Command    string   `json:"command"`
					Action     string   `json:"action,omitempty"`
					Args       []string `json:"args"`
					Decision   string   `json:"decision"`
					DecidedBy  string   `json:"decided_by"`
					ApprovalID string   `json:"approval_id,omitempty"`
					ExitCode   int      `json:"exit_code"`
					WaitedMS   float64  `json:"waited_ms"`
					DurationMS float64  `json:"duration_ms"`
				}
				rows := []row{}
				for _, e := range list {
					rows = append(rows, row{e.ID, e.Time.Format(time.RFC3339Nano), e.Agent, e.Session, e.Command, e.Action, e.Args,
						e.Decision, e.DecidedBy, e.ApprovalID, e.ExitCode, ms(e.Waited), ms(e.Duration)})
				}
				return json.NewEncoder(g.stdout).Encode(rows)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tAGENT\tSESSION\tDECISION\tBY\tEXIT\tDURATION\tCALL")
			for _, e := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", e.Time.Local().Format("2006-01-02 15:04:05"), e.Agent, e.Session,
					e.Decision, e.DecidedBy, e.ExitCode, e.Duration.Round(time.Microsecond), callLine(e.Command, e.Args))
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&f.Agent, "agent", "", "only this agent's calls")
	c.Flags().StringVar(&f.Session, "session", "", "only this session's calls")
	c.Flags().StringVar(&f.Command, "command", "", "only calls of this command (e.g. den-config)")
	c.Flags().IntVar(&limit, "limit", 50, "at most this many")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
