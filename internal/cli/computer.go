package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
)

func computerCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "computer",
		Short: "List, reset, export and import agents' computers; undo with checkpoints",
	}
	c.AddCommand(computerList(g), computerReset(g), computerExport(g), computerImport(g),
		computerCheckpoints(g), computerCheckpoint(g), computerDiff(g), computerRestore(g))
	return c
}

func computerList(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the agents' computers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			m, _, err := g.manager()
			if err != nil {
				return err
			}
			list, err := m.List()
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "AGENT\tSYSTEM\tSOURCE\tSIZE\tSESSIONS\tCREATED")
			for _, s := range list {
				system := strings.TrimSpace(string(s.Info.Distro) + " " + s.Info.Version)
				if s.Err != nil {
					system = "damaged: " + s.Err.Error()
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", s.Agent, system, s.Info.Source, config.FormatBytes(s.Bytes),
					len(s.Sessions), s.Info.Created.Local().Format("2006-01-02 15:04"))
			}
			return tw.Flush()
		},
	}
}

func computerReset(g *globals) *cobra.Command {
	var agent string
	var keepHome bool
	c := &cobra.Command{
		Use:   "reset",
		Short: "Delete an agent's computer; the next start creates it anew",
		Long: `Delete an agent's rootfs (everything installed in it). The next start
creates it again from its source. With --keep-home, /root is kept and
put back into the new computer. The agent's memory, skills, shared and
session folders are not touched. The computer's checkpoints go with it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, comp, err := g.computer(agent)
			if err != nil {
				return err
			}
			if err := comp.Reset(keepHome); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "computer of agent %s reset%s\n", agent, map[bool]string{true: " (/root kept)"}[keepHome])
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "default", "agent whose computer to reset")
	c.Flags().BoolVar(&keepHome, "keep-home", false, "keep /root and restore it into the new computer")
	return c
}

func computerExport(g *globals) *cobra.Command {
	var agent, out string
	c := &cobra.Command{
		Use:   "export [--output FILE]",
		Short: "Write an agent's computer as a tar archive",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, comp, err := g.computer(agent)
			if err != nil {
				return err
			}
			var w io.Writer = g.stdout
			var f *os.File
			var tmp string
			if out != "" && out != "-" {
				// Write beside the target and rename, so a failed export
				// never leaves a truncated archive under the name.
				f, err = os.CreateTemp(filepath.Dir(out), ".den-export-*")
				if err != nil {
					return fmt.Errorf("export: %w", err)
				}
				tmp = f.Name()
				defer os.Remove(tmp)
				w = f
			}
			if err := comp.Export(cmd.Context(), w); err != nil {
				if f != nil {
					f.Close()
				}
				return err
			}
			if f != nil {
				if err := f.Close(); err != nil {
					return fmt.Errorf("export: %w", err)
				}
				if err := os.Rename(tmp, out); err != nil {
					return fmt.Errorf("export: %w", err)
				}
				fmt.Fprintf(g.stderr, "den: computer of agent %s written to %s\n", agent, out)
			}
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "default", "agent whose computer to export")
	c.Flags().StringVarP(&out, "output", "o", "", "file to write (default standard output)")
	return c
}

func computerImport(g *globals) *cobra.Command {
	var agent string
	c := &cobra.Command{
		Use:   "import FILE",
		Short: "Create an agent's computer from a tar archive",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, comp, err := g.computer(agent)
			if err != nil {
				return err
			}
			m.RootfsOptions.Progress = progressPrinter(g.stderr)
			abs, err := filepath.Abs(args[0])
			if err != nil {
				return err
			}
			info, err := comp.Import(cmd.Context(), abs)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "computer of agent %s imported: %s %s\n", agent, info.Distro, info.Version)
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "default", "agent whose computer to create")
	return c
}

// computer returns the manager and the named agent's computer.
func (g *globals) computer(agent string) (*computer.Manager, *computer.Computer, error) {
	m, _, err := g.manager()
	if err != nil {
		return nil, nil, err
	}
	c, err := m.Computer(agent)
	if err != nil {
		return nil, nil, usageError{err}
	}
	return m, c, nil
}
