package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/session"
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
			nested := nestSessions(list)
			if asJSON {
				type row struct {
					ID      string  `json:"id"`
					Agent   string  `json:"agent"`
					Title   string  `json:"title"`
					Model   string  `json:"model"`
					Updated string  `json:"updated"`
					CostUSD float64 `json:"cost_usd"`
					Parent  string  `json:"parent,omitempty"`
					Profile string  `json:"profile,omitempty"`
				}
				rows := []row{}
				for _, n := range nested {
					s := n.Session
					rows = append(rows, row{s.ID, s.Agent, s.Title, s.Model, s.Updated.UTC().Format("2006-01-02T15:04:05Z"), s.Usage.CostUSD, s.Parent, s.Profile})
				}
				return json.NewEncoder(g.stdout).Encode(rows)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tAGENT\tUPDATED\tMODEL\tCOST\tTITLE")
			for _, n := range nested {
				s := n.Session
				id := s.ID
				if n.Depth > 0 {
					id = strings.Repeat("  ", n.Depth-1) + "└ " + id
				}
				title := s.Title
				if s.Profile != "" {
					title += " (" + s.Profile + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t$%.4f\t%s\n", id, s.Agent, s.Updated.Local().Format("2006-01-02 15:04"), s.Model, s.Usage.CostUSD, title)
			}
			return tw.Flush()
		},
	}
	c.Flags().StringVar(&agentName, "agent", "", "only this agent's sessions")
	c.Flags().IntVar(&limit, "limit", 50, "at most this many")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// nestedSession is a session of a list, Depth levels under a session
// that started it as a sub-agent.
type nestedSession struct {
	store.Session
	Depth int
}

// nestSessions puts each sub-agent session of list right under its
// parent (sub-agents oldest first) when the parent is in list too;
// others keep their place.
func nestSessions(list []store.Session) []nestedSession {
	in := map[string]bool{}
	for _, s := range list {
		in[s.ID] = true
	}
	kids := map[string][]store.Session{}
	for _, s := range list {
		if s.Parent != "" && in[s.Parent] {
			kids[s.Parent] = append(kids[s.Parent], s)
		}
	}
	var out []nestedSession
	var add func(s store.Session, depth int)
	add = func(s store.Session, depth int) {
		out = append(out, nestedSession{s, depth})
		k := kids[s.ID]
		sort.SliceStable(k, func(i, j int) bool { return k[i].Created.Before(k[j].Created) })
		for _, c := range k {
			add(c, depth+1)
		}
	}
	for _, s := range list {
		if s.Parent == "" || !in[s.Parent] {
			add(s, 0)
		}
	}
	return out
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
			s, err := st.GetSession(cmd.Context(), args[0])
			if errors.Is(err, store.ErrNotFound) {
				return usageError{fmt.Errorf("no session %q", args[0])}
			}
			if err != nil {
				return err
			}
			rec, err := sessionRecord(cmd.Context(), st, s.ID)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(g.stdout).Encode(map[string]any{"session": s, "messages": rec})
			}
			fmt.Fprintf(g.stdout, "# %s\nsession %s · agent %s · model %s · $%.4f", s.Title, s.ID, s.Agent, s.Model, s.Usage.CostUSD)
			if s.Parent != "" {
				fmt.Fprintf(g.stdout, " · sub-agent of %s", s.Parent)
				if s.Profile != "" {
					fmt.Fprintf(g.stdout, " (profile %s)", s.Profile)
				}
			}
			fmt.Fprint(g.stdout, "\n\n")
			for _, m := range rec {
				head := m.Role
				if m.Model != "" {
					head += " · " + m.Model
				}
				if u := m.Usage; u != nil {
					head += fmt.Sprintf(" · %d in, %d out", u.InputTokens, u.OutputTokens)
					if u.CacheReadTokens > 0 || u.CacheWriteTokens > 0 {
						head += fmt.Sprintf(", cache %d read, %d written", u.CacheReadTokens, u.CacheWriteTokens)
					}
					head += fmt.Sprintf(" · $%.4f", u.CostUSD)
				}
				fmt.Fprintf(g.stdout, "[%s] %s\n\n", head, m.Text)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// shownMessage is one message of den sessions show: what was said and
// done, the model that answered, what its request used, and for tool
// calls how long they ran and how they ended.
type shownMessage struct {
	ID    string     `json:"id"`
	Role  string     `json:"role"`
	Text  string     `json:"text"`
	Model string     `json:"model,omitempty"`
	Usage *shownUse  `json:"usage,omitempty"`
	Calls []shownRun `json:"tool_results,omitempty"`
}

type shownUse struct {
	InputTokens      int64   `json:"input_tokens"`
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_tokens"`
	CacheWriteTokens int64   `json:"cache_write_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	LatencyMS        int64   `json:"latency_ms"`
}

type shownRun struct {
	CallID     string `json:"call_id"`
	Name       string `json:"name"`
	IsError    bool   `json:"is_error"`
	DurationMS int64  `json:"duration_ms"`
	ExitCode   *int   `json:"exit_code,omitempty"`
}

// sessionRecord is the session's history as den sessions show prints
// it.
func sessionRecord(ctx context.Context, st *store.Store, id string) ([]shownMessage, error) {
	path, err := st.Path(ctx, id)
	if err != nil {
		return nil, err
	}
	calls, err := st.ToolCalls(ctx, id)
	if err != nil {
		return nil, err
	}
	byCall := map[string]store.ToolCall{}
	for _, c := range calls {
		if c.ResultMessageID != "" {
			byCall[c.ResultMessageID+"/"+c.CallID] = c
		}
	}
	usage, err := st.MessageUsage(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]shownMessage, 0, len(path))
	for _, sm := range path {
		m := shownMessage{ID: sm.ID, Role: string(sm.Message.Role), Model: sm.Model}
		if u, ok := usage[sm.ID]; ok {
			m.Usage = &shownUse{u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, u.CostUSD, u.Latency.Milliseconds()}
		}
		var b strings.Builder
		for _, p := range sm.Message.Parts {
			r, ok := p.(*llm.ToolResult)
			if !ok {
				session.WritePart(&b, p)
				continue
			}
			c := byCall[sm.ID+"/"+r.CallID]
			run := shownRun{CallID: r.CallID, Name: r.Name, IsError: r.IsError, DurationMS: c.Duration.Milliseconds(), ExitCode: c.ExitCode}
			m.Calls = append(m.Calls, run)
			status := "←"
			if r.IsError {
				status = "← error"
			}
			var facts []string
			if run.ExitCode != nil {
				facts = append(facts, fmt.Sprintf("exit %d", *run.ExitCode))
			}
			if c.Duration > 0 {
				facts = append(facts, c.Duration.Round(time.Millisecond).String())
			}
			if len(facts) > 0 {
				status += " (" + strings.Join(facts, ", ") + ")"
			}
			fmt.Fprintf(&b, "%s %s\n", status, strings.TrimSpace(llm.TextOf(llm.Message{Parts: r.Content})))
		}
		m.Text = strings.TrimSpace(b.String())
		out = append(out, m)
	}
	return out, nil
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
