package cli

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"den.dev/den/internal/config"
	"den.dev/den/internal/egress"
	"den.dev/den/internal/event"
	"den.dev/den/internal/store"
)

// networkCmd is den network: the agents' egress policies and the log of
// their computers' connections.
func networkCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "network",
		Short: "Show and change the agents' egress policies, and the log of their connections",
		Long: `Every connection an agent's computer makes leaves through den, which decides
it by the agent's egress policy ([agents.NAME] egress and allow in the
config) and records it. Without a subcommand, den network shows the policy.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			agent, _ := cmd.Flags().GetString("agent")
			cfg, err := g.config()
			if err != nil {
				return err
			}
			pol, err := cfg.Agent(agent).EgressPolicy()
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "agent %s: egress %s\n", agent, pol.Mode)
			for _, r := range pol.Allow {
				fmt.Fprintf(g.stdout, "  allow %s\n", r)
			}
			return nil
		},
	}
	c.Flags().String("agent", "default", "the agent")
	c.AddCommand(networkLogCmd(g), networkAllowCmd(g, true), networkAllowCmd(g, false))
	return c
}

// networkLogCmd is den network log.
func networkLogCmd(g *globals) *cobra.Command {
	var agent, session string
	var limit int
	var deniedOnly, asJSON bool
	c := &cobra.Command{
		Use:   "log",
		Short: "Show the computers' connections, newest first",
		Long: `Show the computers' connections, newest first: when each ended, the agent and
session, the host and port, whether den let it out (and what decided: the
policy, or a person through an approval), the bytes each way, and for a
refused one why. --json prints each connection as its "egress" event.`,
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
			rows, err := egressLog(cmd, st, agent, session, deniedOnly, limit)
			if err != nil {
				return err
			}
			if asJSON {
				for _, r := range rows {
					b, err := event.Marshal(r.ev)
					if err != nil {
						return err
					}
					fmt.Fprintf(g.stdout, "%s\n", b)
				}
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tAGENT\tSESSION\tHOST\tPORT\tDECISION\tBY\tOUT\tIN\tNOTE")
			for _, r := range rows {
				decision := "allowed"
				if !r.Allowed {
					decision = "denied"
				}
				note := r.Error
				if !r.Allowed {
					note = r.Message
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", r.ev.Time.Local().Format("2006-01-02 15:04:05"),
					r.Agent, short(r.Session), r.Host, r.Port, decision, r.By, human(r.Out), human(r.In), note)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&agent, "agent", "", "only this agent's connections")
	c.Flags().StringVar(&session, "session", "", "only this session's connections")
	c.Flags().BoolVar(&deniedOnly, "denied", false, "only refused connections")
	c.Flags().IntVar(&limit, "limit", 50, "at most this many")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON, one event a line")
	return c
}

// logRow is one stored egress event.
type logRow struct {
	ev store.Event
	egress.Record
	Message string `json:"message"`
}

// egressLog reads the newest egress events that pass the filters.
func egressLog(cmd *cobra.Command, st *store.Store, agent, session string, deniedOnly bool, limit int) ([]logRow, error) {
	evs, err := st.EgressEvents(cmd.Context(), store.EgressFilter{Agent: agent, Session: session, Denied: deniedOnly, Limit: limit})
	if err != nil {
		return nil, err
	}
	out := make([]logRow, 0, len(evs))
	for _, e := range evs {
		var r logRow
		if err := json.Unmarshal(e.Data, &r); err != nil {
			continue
		}
		r.ev = e
		if e.Session != "" {
			r.Session = e.Session
		}
		out = append(out, r)
	}
	return out, nil
}

// networkAllowCmd is den network allow (add) and den network disallow
// (remove): the rules of an agent's egress policy, in the config.
func networkAllowCmd(g *globals, add bool) *cobra.Command {
	var agent string
	use, what := "allow RULE...", "Allow hosts in an agent's egress policy (a domain, *.domain, an address; :PORT for one port)"
	if !add {
		use, what = "disallow RULE...", "Remove rules from an agent's egress policy"
	}
	c := &cobra.Command{
		Use:   use,
		Short: what,
		Long: what + `.

The rules are [agents.NAME] allow in den's config: "pypi.org" allows
pypi.org on every port, "*.github.com" every name below github.com,
"db.example.com:5432" one port, "192.0.2.7" or "10.1.0.0/16" addresses the
computer connects to without a name. They matter under egress = "allowlist"
and "ask"; running computers follow the change at their next connection.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.config()
			if err != nil {
				return err
			}
			ac := cfg.Agent(agent)
			rules := append([]string(nil), ac.Allow...)
			for _, a := range args {
				r, err := egress.ParseRule(a)
				if err != nil {
					return usageError{err}
				}
				i := slices.IndexFunc(rules, func(s string) bool {
					x, err := egress.ParseRule(s)
					return err == nil && x.String() == r.String()
				})
				switch {
				case add && i < 0:
					rules = append(rules, r.String())
				case !add && i >= 0:
					rules = slices.Delete(rules, i, i+1)
				case !add:
					fmt.Fprintf(g.stderr, "den: %s is not in agent %s's rules\n", r, agent)
				}
			}
			vals := make([]any, len(rules))
			for i, r := range rules {
				vals[i] = r
			}
			if _, err := config.SetValue(g.configFile(), "agents."+agent+".allow", vals); err != nil {
				return err
			}
			pol, _ := ac.EgressPolicy()
			fmt.Fprintf(g.stdout, "agent %s: allow = [%s]\n", agent, strings.Join(quoteAll(rules), ", "))
			switch pol.Mode {
			case egress.Open:
				fmt.Fprintf(g.stderr, "den: agent %s's egress is open, so everything is allowed anyway: set egress = \"allowlist\" (den config set agents.%s.egress allowlist) for the rules to decide\n", agent, agent)
			case egress.Off:
				fmt.Fprintf(g.stderr, "den: agent %s has no network (egress = \"off\"): the rules apply once it has one\n", agent)
			}
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "default", "the agent")
	return c
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
