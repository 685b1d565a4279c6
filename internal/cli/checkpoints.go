package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"den.dev/den/internal/checkpoint"
	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/sandbox"
)

// The computer's undo: den computer checkpoint, checkpoints, diff and
// restore.

func computerCheckpoints(g *globals) *cobra.Command {
	var agent, session string
	var asJSON bool
	c := &cobra.Command{
		Use:   "checkpoints [--agent A] [--session S]",
		Short: "List the checkpoints of an agent's computer (undo)",
		Long: `List the checkpoints of an agent's computer, oldest first. den takes one
before each turn that may change the computer: its rootfs and the
session's /workspace, /den/attachments and /den/browser. A restore
keeps the state it replaces as a checkpoint too.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, comp, err := g.computer(agent)
			if err != nil {
				return err
			}
			list, err := comp.ListCheckpoints(session)
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []checkpoint.Checkpoint{}
				}
				return printJSON(g.stdout, list)
			}
			var size int64
			if len(list) > 0 {
				store, err := comp.Checkpoints()
				if err != nil {
					return err
				}
				size = store.Size()
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTAKEN\tSESSION\tTURN\tREASON\tENTRIES\tREAD\tADDED\tTOOK")
			for _, cp := range list {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", cp.ID, cp.Created.Local().Format("2006-01-02 15:04:05"),
					dash(cp.Session), dash(cp.Turn), cp.Reason, cp.Entries, cp.Read, config.FormatBytes(cp.Added), cp.Took.Round(time.Millisecond))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(g.stderr, "den: %d checkpoint(s); the agent's checkpoints take %s on disk\n", len(list), config.FormatBytes(size))
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "default", "agent whose computer")
	c.Flags().StringVar(&session, "session", "", "only the checkpoints taken for this session")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func computerCheckpoint(g *globals) *cobra.Command {
	var agent, session string
	c := &cobra.Command{
		Use:   "checkpoint [--agent A] [--session S]",
		Short: "Take a checkpoint of an agent's computer now",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			mounts, undo, comp, err := g.undo(agent)
			if err != nil {
				return err
			}
			if session != "" {
				if err := computer.ValidName("session", session); err != nil {
					return usageError{err}
				}
			}
			if !undo.On() {
				// Off for turns; asked for by name, with the defaults.
				undo = computer.DefaultUndo()
			}
			cp, err := comp.Checkpoint(cmd.Context(), computer.CheckpointOptions{Session: session, Reason: "manual", Mounts: mounts, Undo: undo})
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "checkpoint %d of agent %s's computer: %d entries, %d file(s) read, %s added, in %s\n",
				cp.ID, agent, cp.Entries, cp.Read, config.FormatBytes(cp.Added), cp.Took.Round(time.Millisecond))
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "default", "agent whose computer")
	c.Flags().StringVar(&session, "session", "", "also keep this session's folders")
	return c
}

func computerDiff(g *globals) *cobra.Command {
	var agent, to string
	var asJSON bool
	c := &cobra.Command{
		Use:   "diff CHECKPOINT [--to CHECKPOINT]",
		Short: "Show what changed in the computer since a checkpoint",
		Long: `Show what changed in an agent's computer since a checkpoint: files added,
changed and removed, and packages installed, removed or changed. This is
what restoring the checkpoint would undo. With --to, compare with a later
checkpoint instead of the computer as it is now.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mounts, _, comp, err := g.undo(agent)
			if err != nil {
				return err
			}
			id, err := computer.ParseCheckpoint(args[0])
			if err != nil {
				return usageError{err}
			}
			other := 0
			if to != "" {
				if other, err = computer.ParseCheckpoint(to); err != nil {
					return usageError{err}
				}
			}
			d, err := comp.DiffCheckpoint(cmd.Context(), id, other, mounts)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g.stdout, d)
			}
			printChanges(g.stdout, d)
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "default", "agent whose computer")
	c.Flags().StringVar(&to, "to", "", "compare with this later checkpoint (default: the computer now)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func printChanges(w io.Writer, d checkpoint.Diff) {
	if len(d.Packages) > 0 {
		fmt.Fprintln(w, "packages:")
		for _, p := range d.Packages {
			switch p.Op {
			case "installed":
				fmt.Fprintf(w, "  + %s %s\n", p.Name, p.To)
			case "removed":
				fmt.Fprintf(w, "  - %s %s\n", p.Name, p.From)
			default:
				fmt.Fprintf(w, "  ~ %s %s -> %s\n", p.Name, p.From, p.To)
			}
		}
		fmt.Fprintln(w, "files:")
	}
	for _, c := range d.Changes {
		mark := map[string]string{"added": "+", "removed": "-"}[c.Op]
		if mark == "" {
			mark = "~"
		}
		detail := c.Kind
		switch {
		case c.Op == "changed":
			detail = strings.Join(c.What, ", ")
		case c.Kind == "folder":
			detail = fmt.Sprintf("folder, %d entries", c.Entries)
		case c.Kind == "file":
			detail = "file, " + config.FormatBytes(c.Size)
		}
		fmt.Fprintf(w, "  %s %s (%s)\n", mark, c.Path, detail)
	}
	fmt.Fprintf(w, "%d added, %d removed, %d changed\n", d.Added, d.Removed, d.Changed)
}

func computerRestore(g *globals) *cobra.Command {
	var agent string
	var noSave, asJSON bool
	c := &cobra.Command{
		Use:   "restore CHECKPOINT",
		Short: "Put an agent's computer back as a checkpoint recorded it",
		Long: `Put an agent's computer back as a checkpoint recorded it: its rootfs, and
the /workspace, /den/attachments and /den/browser of the session the
checkpoint was taken for. Packages installed since are gone, files
deleted since are back, with their permissions, owners and times.

A restore never touches your mounted folders, the agent's /den/memory,
/den/skills and /den/shared, /den/offloads, nor other sessions'
folders. The computer must be stopped: a restore refuses while a
session runs it. The state it replaces is kept as a new checkpoint, so
a restore can be undone too (unless --no-save).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			mounts, undo, comp, err := g.undo(agent)
			if err != nil {
				return err
			}
			id, err := computer.ParseCheckpoint(args[0])
			if err != nil {
				return usageError{err}
			}
			res, err := comp.RestoreCheckpoint(cmd.Context(), id, computer.RestoreOptions{Mounts: mounts, Undo: undo, NoSave: noSave})
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(g.stdout, res)
			}
			printRestored(g.stdout, agent, res)
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "default", "agent whose computer")
	c.Flags().BoolVar(&noSave, "no-save", false, "do not keep the state the restore replaces")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func printRestored(w io.Writer, agent string, res computer.Restored) {
	cp := res.Checkpoint
	what := fmt.Sprintf("checkpoint %d (%s", cp.ID, cp.Created.Local().Format("2006-01-02 15:04:05"))
	if cp.Turn != "" {
		what += ", before turn " + cp.Turn
	}
	if cp.Session != "" {
		what += " of session " + cp.Session
	}
	what += ")"
	fmt.Fprintf(w, "computer of agent %s restored to %s\n", agent, what)
	u := res.Undone
	fmt.Fprintf(w, "undone: %d added, %d removed, %d changed", u.Added, u.Removed, u.Changed)
	for _, p := range u.Packages {
		fmt.Fprintf(w, "; %s %s", p.Name, map[string]string{"installed": "uninstalled", "removed": "reinstalled", "changed": "back to " + p.From}[p.Op])
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "not touched: %s\n", strings.Join(res.Untouched, ", "))
	for _, l := range res.Left {
		fmt.Fprintf(w, "left: %s\n", l)
	}
	if res.Saved.ID != 0 {
		fmt.Fprintf(w, "to undo this restore: den computer restore --agent %s %d\n", agent, res.Saved.ID)
	}
}

func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// undo returns an agent's computer with its mounts and checkpoint
// policy, from the config.
func (g *globals) undo(agent string) ([]sandbox.Bind, computer.Undo, *computer.Computer, error) {
	_, comp, err := g.computer(agent)
	if err != nil {
		return nil, computer.Undo{}, nil, err
	}
	cfg, err := g.config()
	if err != nil {
		return nil, computer.Undo{}, nil, err
	}
	ac := cfg.Agent(agent)
	var mounts []sandbox.Bind
	for _, s := range ac.Mounts {
		b, err := sandbox.ParseMount(s)
		if err != nil {
			return nil, computer.Undo{}, nil, err
		}
		mounts = append(mounts, b)
	}
	u, err := undoPolicy(ac)
	return mounts, u, comp, err
}
