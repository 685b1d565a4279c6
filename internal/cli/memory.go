package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/memory"
	"den.dev/den/internal/session"
)

// memoryCmd reads and tends an agent's memory (/den/memory).
func memoryCmd(g *globals) *cobra.Command {
	var agentName string
	c := &cobra.Command{
		Use:   "memory",
		Short: "Read, search, edit or roll up an agent's memory (/den/memory)",
		Long: `An agent's memory is Markdown files in /den/memory of its computer: GLOBAL.md
(long-term facts and preferences), SOUL.md (its persona, when there is one) and
a log per day (YYYY-MM-DD.md) that memory_write and den's compactions add to.
Every request carries SOUL.md, GLOBAL.md and the logs of today and yesterday;
memory_get searches the rest.`,
	}
	c.PersistentFlags().StringVar(&agentName, "agent", "default", "agent")

	show := &cobra.Command{
		Use:   "show [FILE]",
		Short: "List the memory's files and show what a request carries; or print FILE",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withMemory(cmd.Context(), g, agentName, func(rt *session.Runtime, b *memory.Book) error {
				if len(args) == 1 {
					text, err := b.Read(args[0])
					if err != nil {
						return err
					}
					if text == "" {
						return usageError{fmt.Errorf("no %s in the memory of agent %s", args[0], agentName)}
					}
					fmt.Fprint(g.stdout, text)
					return nil
				}
				files, err := b.Files(cmd.Context())
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "FILE\tBYTES\tMODIFIED")
				for _, f := range files {
					fmt.Fprintf(tw, "%s\t%d\t%s\n", f.Name, f.Size, f.Modified.Local().Format("2006-01-02 15:04"))
				}
				tw.Flush()
				p, err := b.Prompt(time.Now(), memory.PromptBudget(200_000))
				if err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "\nWhat a request carries (for a model of 200k tokens):\n\n%s", p)
				return nil
			})
		},
	}

	var scope string
	var asJSON bool
	search := &cobra.Command{
		Use:   "search QUERY",
		Short: "Search the memory as memory_get does",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withMemory(cmd.Context(), g, agentName, func(rt *session.Runtime, b *memory.Book) error {
				q := strings.Join(args, " ")
				found, err := b.Search(cmd.Context(), q, scope, time.Now())
				if err != nil {
					return usageError{err}
				}
				if asJSON {
					type entry struct {
						File    string     `json:"file"`
						Day     string     `json:"day,omitempty"`
						At      *time.Time `json:"at,omitempty"`
						Session string     `json:"session_id,omitempty"`
						Message string     `json:"message_id,omitempty"`
						Text    string     `json:"text"`
					}
					out := []entry{}
					for _, e := range found.Entries {
						x := entry{File: e.File, Day: e.Day, Session: e.Session, Message: e.Message, Text: e.Body}
						if !e.At.IsZero() {
							at := e.At
							x.At = &at
						}
						out = append(out, x)
					}
					enc := json.NewEncoder(g.stdout)
					enc.SetIndent("", "  ")
					return enc.Encode(map[string]any{"query": q, "entries": out, "more": found.More})
				}
				fmt.Fprintln(g.stdout, found.Format(q, time.Local))
				return nil
			})
		},
	}
	search.Flags().StringVar(&scope, "scope", "all", "all, global, soul or daily")
	search.Flags().BoolVar(&asJSON, "json", false, "print JSON")

	edit := &cobra.Command{
		Use:   "edit [FILE]",
		Short: "Edit GLOBAL.md (or FILE) in $VISUAL or $EDITOR",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := memory.Global
			if len(args) == 1 {
				name = args[0]
			}
			return withMemory(cmd.Context(), g, agentName, func(rt *session.Runtime, b *memory.Book) error {
				return editMemory(cmd.Context(), g, b, name)
			})
		},
	}

	rollup := &cobra.Command{
		Use:   "rollup",
		Short: "Merge the daily logs older than a week into GLOBAL.md (asks the agent's model)",
		Long: `Sends GLOBAL.md and the daily logs older than a week to the agent's model,
which picks the facts worth keeping, each with the date and session it came
from; they are appended to GLOBAL.md and the logs move to archive/. The request
is kept as a session "Memory rollup DATE" with its cost. den serve does this
once a day.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withMemory(cmd.Context(), g, agentName, func(rt *session.Runtime, b *memory.Book) error {
				rolled, sid, err := rt.Rollup(cmd.Context(), agentName, time.Now())
				if err != nil {
					return err
				}
				if len(rolled.Logs) == 0 {
					fmt.Fprintln(g.stdout, "nothing to roll up: no daily log is older than a week")
					return nil
				}
				fmt.Fprintf(g.stdout, "rolled up %d log(s) into GLOBAL.md (%d fact(s) added); they are in archive/ now\n", len(rolled.Logs), len(rolled.Facts))
				for _, f := range rolled.Facts {
					fmt.Fprintln(g.stdout, "  "+f)
				}
				if sid != "" {
					fmt.Fprintf(g.stdout, "the request is session %s\n", sid)
				}
				return nil
			})
		},
	}
	c.AddCommand(show, search, edit, rollup)
	return c
}

// withMemory runs fn with a runtime on den's data and the agent's
// memory.
func withMemory(ctx context.Context, g *globals, agentName string, fn func(*session.Runtime, *memory.Book) error) error {
	if err := computer.ValidName("agent", agentName); err != nil {
		return usageError{err}
	}
	rt, done, err := cliRuntime(g, "den memory")
	if err != nil {
		return err
	}
	defer done()
	b, err := rt.Memory(ctx, agentName)
	if err != nil {
		return err
	}
	return fn(rt, b)
}

// editMemory edits a copy of the memory file name in the user's editor
// and writes it back through den: the editor never opens a path in the
// computer's folder, where a planted link could send it elsewhere.
func editMemory(ctx context.Context, g *globals, b *memory.Book, name string) error {
	text, err := b.Read(name)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "den-memory-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, name)
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		return err
	}
	editor := firstNonEmpty(os.Getenv("VISUAL"), os.Getenv("EDITOR"), "vi")
	cmd := exec.CommandContext(ctx, "sh", "-c", editor+` "$1"`, "sh", tmp)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, g.stdout, g.stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w (%s was not changed)", editor, err, name)
	}
	edited, err := os.ReadFile(tmp)
	if err != nil {
		return err
	}
	if string(edited) == text {
		fmt.Fprintf(g.stdout, "%s unchanged\n", name)
		return nil
	}
	if err := b.Replace(ctx, name, string(edited)); err != nil {
		return err
	}
	fmt.Fprintf(g.stdout, "%s saved (%d bytes)\n", name, len(edited))
	return nil
}
