package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"den.dev/den/internal/permission"
	"den.dev/den/internal/store"
)

// approveCmd is den approve ID: it answers a pending approval that a
// den process (den chat, den run, den serve) is waiting on.
func approveCmd(g *globals) *cobra.Command {
	return answerCmd(g, true)
}

// denyCmd is den deny ID.
func denyCmd(g *globals) *cobra.Command {
	return answerCmd(g, false)
}

func answerCmd(g *globals, approve bool) *cobra.Command {
	var scope string
	verb, status, short := "approve", store.ApprovalApproved, "Approve a host command waiting for approval"
	if !approve {
		verb, status, short = "deny", store.ApprovalDenied, "Deny a host command waiting for approval"
	}
	c := &cobra.Command{
		Use:   verb + " ID",
		Short: short,
		Long: short + `.

The waiting den notices within a fraction of a second. --scope once answers
this call only; session answers this command and action for the rest of the
session; always remembers the answer for the agent, in every session.
den approvals lists what is waiting.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sc, err := permission.ParseScope(scope)
			if err != nil {
				return usageError{err}
			}
			st, err := g.openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			id := strings.TrimSpace(args[0])
			a, err := st.AnswerApproval(cmd.Context(), id, store.ApprovalAnswer{Status: status, Scope: string(sc), DecidedBy: string(permission.ByUser)})
			switch {
			case errors.Is(err, store.ErrNotFound):
				return usageError{fmt.Errorf("no approval %q (den approvals lists the pending ones)", id)}
			case errors.Is(err, store.ErrAnswered):
				return fmt.Errorf("approval %s was already answered: %s by %s", id, a.Status, a.DecidedBy)
			case errors.Is(err, store.ErrExpired):
				return fmt.Errorf("approval %s expired before this answer; the call was denied", id)
			case err != nil:
				return err
			}
			fmt.Fprintf(g.stdout, "%s %s: %s (agent %s, scope %s)\n", a.Status, a.ID, callLine(a.Command, a.Args), a.Agent, a.Scope)
			return nil
		},
	}
	c.Flags().StringVar(&scope, "scope", "once", "once, session or always")
	return c
}

// approvalsCmd is den approvals: the approvals waiting for an answer.
func approvalsCmd(g *globals) *cobra.Command {
	var agentName string
	var asJSON bool
	c := &cobra.Command{
		Use:   "approvals",
		Short: "List host commands waiting for approval",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			list, err := st.PendingApprovals(cmd.Context(), agentName)
			if err != nil {
				return err
			}
			if asJSON {
				type row struct {
					ID      string   `json:"id"`
					Agent   string   `json:"agent"`
					Session string   `json:"session"`
					Command string   `json:"command"`
					Action  string   `json:"action,omitempty"`
					Args    []string `json:"args"`
					Created string   `json:"created"`
					Expires string   `json:"expires"`
				}
				rows := []row{}
				for _, a := range list {
					rows = append(rows, row{a.ID, a.Agent, a.Session, a.Command, a.Action, a.Args, a.Created.Format(time.RFC3339), a.Expires.Format(time.RFC3339)})
				}
				return json.NewEncoder(g.stdout).Encode(rows)
			}
			if len(list) == 0 {
				fmt.Fprintln(g.stdout, "nothing is waiting for approval")
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tAGENT\tSESSION\tEXPIRES IN\tCALL")
			for _, a := range list {
				left := time.Until(a.Expires).Round(time.Second)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.ID, a.Agent, a.Session, left, callLine(a.Command, a.Args))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintln(g.stdout, "\nanswer with: den approve ID [--scope once|session|always], or den deny ID")
			return nil
		},
	}
	c.Flags().StringVar(&agentName, "agent", "", "only this agent's approvals")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.AddCommand(approvalShowCmd(g))
	return c
}

// callLine shows a call as a command line, each argument escaped and
// quoted where it needs it, long ones cut saying how much is left.
func callLine(command string, args []string) string {
	return permission.CallLine(command, args, 80)
}

// approvalShowCmd is den approvals show ID: one approval in full, every
// argument whole (escaped), what it changes and what an answer covers.
func approvalShowCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Show one approval in full: every argument, the change, and what an answer covers",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			a, err := st.GetApproval(cmd.Context(), strings.TrimSpace(args[0]))
			if errors.Is(err, store.ErrNotFound) {
				return usageError{fmt.Errorf("no approval %q (den approvals lists the pending ones)", args[0])}
			}
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(g.stdout).Encode(a)
			}
			p := permission.Printable
			fmt.Fprintf(g.stdout, "approval %s: %s", p(a.ID), a.Status)
			if a.Status != store.ApprovalPending {
				fmt.Fprintf(g.stdout, " (scope %s, by %s, %s)", a.Scope, p(a.DecidedBy), a.Decided.Local().Format(time.RFC3339))
			}
			fmt.Fprintf(g.stdout, "\nagent:   %s\nsession: %s\ncommand: %s %s\n", p(a.Agent), p(a.Session), p(a.Command), p(a.Action))
			if a.Subject != "" {
				fmt.Fprintf(g.stdout, "subject: %s\n", permission.ShowArg(a.Subject, 0))
			}
			if a.Detail != "" {
				fmt.Fprintf(g.stdout, "change:  %s\n", p(a.Detail))
			}
			fmt.Fprintf(g.stdout, "call:    %s\n", permission.CallLine(a.Command, a.Args, 0))
			for i, arg := range a.Args {
				fmt.Fprintf(g.stdout, "  arg %d (%d bytes): %s\n", i+1, len(arg), permission.ShowArg(arg, 0))
			}
			covers := a.Command + " " + a.Action
			if a.Subject != "" {
				covers += " of " + permission.ShowArg(a.Subject, 0)
			} else {
				covers += " (any arguments)"
			}
			fmt.Fprintf(g.stdout, "an answer with scope session covers %s in session %s; always covers it in every session of agent %s\n",
				p(covers), p(a.Session), p(a.Agent))
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
