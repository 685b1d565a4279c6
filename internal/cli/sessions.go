package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/store"
)

func sessionsCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "sessions",
		Short: "List, show and remove the agent's sessions",
	}
	c.AddCommand(sessionsList(g), sessionsShow(g), sessionsRm(g))
	return c
}

func (g *globals) openStore() (*store.Store, error) {
	return store.Open(filepath.Join(DataDir(g.dataDir), "den.db"))
}

func sessionsList(g *globals) *cobra.Command {
	var agentName string
	var limit int
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List sessions, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			list, err := st.ListSessions(cmd.Context(), agentName, limit)
			if err != nil {
				return err
			}
			if asJSON {
				type row struct {
					ID      string  `json:"id"`
					Agent   string  `json:"agent"`
					Title   string  `json:"title"`
					Model   string  `json:"model"`
					Updated string  `json:"updated"`
					CostUSD float64 `json:"cost_usd"`
				}
				rows := []row{}
				for _, s := range list {
					rows = append(rows, row{s.ID, s.Agent, s.Title, s.Model, s.Updated.UTC().Format("2006-01-02T15:04:05Z"), s.Usage.CostUSD})
				}
				return json.NewEncoder(g.stdout).Encode(rows)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tAGENT\tUPDATED\tMODEL\tCOST\tTITLE")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t$%.4f\t%s\n", s.ID, s.Agent, s.Updated.Local().Format("2006-01-02 15:04"), s.Model, s.Usage.CostUSD, s.Title)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&agentName, "agent", "", "only this agent's sessions")
	c.Flags().IntVar(&limit, "limit", 50, "at most this many")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func sessionsShow(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "show ID",
		Short: "Print a session's conversation",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			s, history, err := loadSession(cmd.Context(), st, args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(g.stdout).Encode(map[string]any{"session": s, "messages": transcript(history)})
			}
			fmt.Fprintf(g.stdout, "# %s\nsession %s · agent %s · model %s · $%.4f\n\n", s.Title, s.ID, s.Agent, s.Model, s.Usage.CostUSD)
			for _, m := range transcript(history) {
				fmt.Fprintf(g.stdout, "[%s] %s\n\n", m["role"], m["text"])
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func loadSession(ctx context.Context, st *store.Store, id string) (store.Session, []llm.Message, error) {
	s, err := st.GetSession(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return s, nil, usageError{fmt.Errorf("no session %q", id)}
	}
	if err != nil {
		return s, nil, err
	}
	h, err := st.History(ctx, id)
	return s, h, err
}

// transcript renders messages as role and readable text.
func transcript(msgs []llm.Message) []map[string]string {
	var out []map[string]string
	for _, m := range msgs {
		var b strings.Builder
		for _, p := range m.Parts {
			switch p := p.(type) {
			case *llm.Text:
				b.WriteString(p.Text)
			case *llm.Thinking:
				if p.Text != "" {
					fmt.Fprintf(&b, "(thinking) %s\n", p.Text)
				}
			case *llm.ToolCall:
				fmt.Fprintf(&b, "→ %s %s\n", p.Name, string(p.Input))
			case *llm.ToolResult:
				status := "←"
				if p.IsError {
					status = "← error"
				}
				fmt.Fprintf(&b, "%s %s\n", status, strings.TrimSpace(llm.TextOf(llm.Message{Parts: p.Content})))
			case *llm.Image:
				fmt.Fprintf(&b, "[image %s]\n", p.MediaType)
			}
		}
		out = append(out, map[string]string{"role": string(m.Role), "text": strings.TrimSpace(b.String())})
	}
	return out
}

func sessionsRm(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rm ID...",
		Short: "Remove sessions and their folders",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := g.openStore()
			if err != nil {
				return err
			}
			defer st.Close()
			for _, id := range args {
				s, err := st.GetSession(cmd.Context(), id)
				if errors.Is(err, store.ErrNotFound) {
					return usageError{fmt.Errorf("no session %q", id)}
				}
				if err != nil {
					return err
				}
				if err := st.DeleteSession(cmd.Context(), id); err != nil {
					return err
				}
				dir := filepath.Join(DataDir(g.dataDir), "agents", s.Agent, "sessions", id)
				os.RemoveAll(dir)
				fmt.Fprintf(g.stdout, "removed session %s\n", id)
			}
			return nil
		},
	}
}
