package cli

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"den.dev/den/internal/config"
)

func (g *globals) configFile() string {
	if g.configPath != "" {
		return g.configPath
	}
	return config.DefaultPath()
}

func configCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "config",
		Short: "Read and change den's config file (secrets are never printed)",
	}
	c.AddCommand(&cobra.Command{
		Use:   "path",
		Short: "Print the config file's path",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			fmt.Fprintln(g.stdout, g.configFile())
			return nil
		},
	}, &cobra.Command{
		Use:   "get [KEY]",
		Short: "Print a setting (a dotted key such as agents.default.model), or all of them",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			key := ""
			if len(args) == 1 {
				key = args[0]
			}
			v, err := config.Get(g.configFile(), key)
			if err != nil {
				return err
			}
			fmt.Fprintln(g.stdout, strings.TrimRight(v, "\n"))
			return nil
		},
	}, &cobra.Command{
		Use:   "set KEY VALUE",
		Short: "Change a setting, keeping the file's comments; refused if the result is invalid",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			old, err := config.Set(g.configFile(), args[0], args[1])
			if err != nil {
				return err
			}
			shown := args[1]
			if config.Secret(args[0]) {
				shown = "********"
			}
			if old == "" {
				fmt.Fprintf(g.stdout, "%s = %s (was unset)\n", args[0], shown)
			} else {
				fmt.Fprintf(g.stdout, "%s = %s (was %s)\n", args[0], shown, old)
			}
			return nil
		},
	}, &cobra.Command{
		Use:   "unset KEY",
		Short: "Remove a setting, or a whole table (groups.fast), keeping the file's comments; refused if the result is invalid",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			old, err := config.Unset(g.configFile(), args[0])
			if err != nil {
				return err
			}
			if config.Secret(args[0]) {
				old = "********"
			}
			switch {
			case old == "":
				fmt.Fprintf(g.stdout, "removed %s (an empty table)\n", args[0])
			case strings.HasSuffix(old, "\n"): // a table, as its lines
				fmt.Fprintf(g.stdout, "removed %s, which held:\n%s", args[0], old)
			default:
				fmt.Fprintf(g.stdout, "removed %s (was %s)\n", args[0], old)
			}
			return nil
		},
	}, &cobra.Command{
		Use:   "edit",
		Short: "Open the config file in $VISUAL or $EDITOR, then check it",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			path := g.configFile()
			editor := firstNonEmpty(os.Getenv("VISUAL"), os.Getenv("EDITOR"), "vi")
			e := exec.Command("sh", "-c", editor+` "$1"`, "editor", path)
			e.Stdin, e.Stdout, e.Stderr = os.Stdin, os.Stdout, os.Stderr
			if err := e.Run(); err != nil {
				return fmt.Errorf("config edit: %s: %w", editor, err)
			}
			if _, err := config.Load(path, false); err != nil {
				return err
			}
			fmt.Fprintln(g.stdout, "config ok:", path)
			return nil
		},
	})
	return c
}
