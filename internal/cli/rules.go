package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"den.dev/den/internal/permission"
)

// rulesCmd lists and forgets the "always" answers given to approvals.
func rulesCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "rules",
		Short: "List or forget the standing answers given to approvals (scope always)",
	}
	var agentName string
	list := &cobra.Command{
		Use:   "list",
		Short: "List standing answers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			rules, err := st.Rules(cmd.Context(), agentName)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AGENT\tCOMMAND\tACTION\tSUBJECT\tDECISION\tSINCE")
			for _, r := range rules {
				subject := "(none)"
				if r.Subject != "" {
					subject = permission.ShowArg(r.Subject, permission.MaxShownArg)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", permission.Printable(r.Agent), permission.Printable(r.Command), permission.Printable(r.Action),
					subject, r.Decision, r.Created.Local().Format("2006-01-02 15:04"))
			}
			return tw.Flush()
		},
	}
	list.Flags().StringVar(&agentName, "agent", "", "only this agent's")
	var forgetAgent, forgetSubject string
	forget := &cobra.Command{
		Use:   "forget COMMAND [ACTION] [--subject S]",
		Short: "Forget standing answers (every subject's, or --subject's); the next call asks again",
		Args:  cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			action := ""
			if len(args) == 2 {
				action = args[1]
			}
			var subject *string
			if cmd.Flags().Changed("subject") {
				subject = &forgetSubject
			}
			ok, err := st.DeleteRule(cmd.Context(), forgetAgent, args[0], action, subject)
			if err != nil {
				return err
			}
			if !ok {
				return usageError{fmt.Errorf("agent %s has no standing answer for %s %s", forgetAgent, args[0], action)}
			}
			fmt.Fprintf(g.stdout, "forgot %s %s for agent %s\n", args[0], action, forgetAgent)
			return nil
		},
	}
	forget.Flags().StringVar(&forgetAgent, "agent", "default", "agent")
	forget.Flags().StringVar(&forgetSubject, "subject", "", "only the answer for this subject (the model, key, session, … den rules list shows)")
	c.AddCommand(list, forget)
	return c
}
