package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"den.dev/den/internal/config"
	"den.dev/den/internal/egress"
	"den.dev/den/internal/event"
	"den.dev/den/internal/mcpclient"
	"den.dev/den/internal/skill"
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
			ac := cfg.Agent(agent)
			pol, err := ac.EgressPolicy()
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "agent %s: egress %s\n", agent, pol.Mode)
			for _, r := range pol.Allow {
				fmt.Fprintf(g.stdout, "  allow %s\n", r)
			}
			bySkill, err := ac.SkillRules()
			if err != nil {
				return err
			}
			for _, name := range slices.Sorted(maps.Keys(bySkill)) {
				fmt.Fprintf(g.stdout, "skill %s, while in use in a session: allow %s\n", name, strings.Join(ruleStrings(bySkill[name]), ", "))
			}
			if f, err := g.mcpFile(); err == nil {
				for _, s := range f.For(agent) {
					if s.Type == mcpclient.Stdio {
						fmt.Fprintf(g.stdout, "MCP server %s: %s\n", s.Name, networkText(s))
					}
				}
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
					r.Agent, short(r.Session), r.Host, r.Port, decision, r.By, config.FormatBytes(r.Out), config.FormatBytes(r.In), note)
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
	var agent, skillName, server string
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
and "ask"; running computers follow the change at their next connection.

--skill NAME changes the hosts a skill brings while it is in use in a
session ([agents.AGENT.skills.NAME] allow); --mcp NAME the policy of an MCP
server of its own (its "allow" in mcp.json).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if skillName != "" && server != "" {
				return usageError{errors.New("--skill or --mcp, not both")}
			}
			cfg, err := g.config()
			if err != nil {
				return err
			}
			ac := cfg.Agent(agent)
			rules := append([]string(nil), ac.Allow...)
			key, whose := "agents."+agent+".allow", "agent "+agent
			var srv *mcpclient.Server
			var file *mcpclient.File
			switch {
			case skillName != "":
				if err := skill.ValidName(skillName); err != nil {
					return usageError{err}
				}
				rules = append([]string(nil), ac.Skills[skillName].Allow...)
				key, whose = "agents."+agent+".skills."+skillName+".allow", "skill "+skillName+" of agent "+agent
			case server != "":
				if file, err = g.mcpFile(); err != nil {
					return err
				}
				if srv = file.Get(server); srv == nil {
					return usageError{fmt.Errorf("there is no MCP server %q in %s", server, g.mcpPath())}
				}
				if srv.Type != mcpclient.Stdio {
					return usageError{fmt.Errorf("MCP server %s is reached at a url by den itself: it has no network policy of its own", server)}
				}
				rules, whose = append([]string(nil), srv.Allow...), "MCP server "+server
			}
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
					fmt.Fprintf(g.stderr, "den: %s is not in %s's rules\n", r, whose)
				}
			}
			if srv != nil {
				return g.setServerRules(file, srv, rules, add)
			}
			vals := make([]any, len(rules))
			for i, r := range rules {
				vals[i] = r
			}
			if _, err := config.SetValue(g.configFile(), key, vals); err != nil {
				return err
			}
			pol, _ := ac.EgressPolicy()
			fmt.Fprintf(g.stdout, "%s: allow = [%s]\n", whose, strings.Join(quoteAll(rules), ", "))
			if skillName != "" {
				fmt.Fprintf(g.stdout, "A session's computer reaches them once it uses the skill (den sees the model read its SKILL.md, or /%s).\n", skillName)
			}
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
	c.Flags().StringVar(&skillName, "skill", "", "the hosts this skill of the agent brings while in use")
	c.Flags().StringVar(&server, "mcp", "", "the policy of this MCP server")
	return c
}

// setServerRules writes an MCP server's rules into mcp.json; allowing
// hosts for a server without a policy of its own gives it an allowlist.
func (g *globals) setServerRules(f *mcpclient.File, s *mcpclient.Server, rules []string, add bool) error {
	s.Allow = rules
	if s.Egress == "" && add {
		s.Egress = string(egress.Allowlist)
		fmt.Fprintf(g.stderr, "den: MCP server %s had no egress policy of its own: it now has \"egress\": \"allowlist\" (it reaches only its rules)\n", s.Name)
	}
	f.Set(s)
	if err := f.Save(g.mcpPath()); err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "MCP server %s: egress %s, allow = [%s]\n", s.Name, s.Egress, strings.Join(quoteAll(rules), ", "))
	if s.Egress == string(egress.Open) {
		fmt.Fprintf(g.stderr, "den: MCP server %s's egress is open, so everything is allowed anyway\n", s.Name)
	}
	return nil
}

func ruleStrings(rs []egress.Rule) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.String()
	}
	return out
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
