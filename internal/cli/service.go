package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"den.dev/den/internal/service"
)

func serviceCmd(g *globals) *cobra.Command {
	var user, system bool
	var runAs string
	options := func(args []string) (service.Options, error) {
		if user && system {
			return service.Options{}, usageError{errors.New("--user and --system exclude each other")}
		}
		bin, err := os.Executable()
		if err != nil {
			return service.Options{}, err
		}
		dataDir, err := filepath.Abs(DataDir(g.dataDir))
		if err != nil {
			return service.Options{}, err
		}
		o := service.Options{User: !system, Binary: bin, Args: args, DataDir: dataDir, RunAs: runAs}
		if g.configPath != "" {
			if o.ConfigPath, err = filepath.Abs(g.configPath); err != nil {
				return service.Options{}, err
			}
		}
		return o, nil
	}
	c := &cobra.Command{
		Use:   "service",
		Short: "Run den serve as a systemd service: install, status, uninstall",
	}
	install := &cobra.Command{
		Use:   "install [-- SERVE-FLAGS...]",
		Short: "Write, enable and start den.service (--user by default, or --system)",
		Long: `Write den.service for den serve (with any flags given after --, such as
--listen 0.0.0.0:7700 --tls self-signed), enable it and start it. Model
keys go in an environment file you create with mode 0600:
~/.config/den/env for --user, /etc/den/env for --system.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := options(args)
			if err != nil {
				return err
			}
			res, err := service.Install(cmd.Context(), o)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "installed and started %s\n", res.UnitPath)
			if res.Note != "" {
				fmt.Fprintln(g.stdout, res.Note)
			}
			return nil
		},
	}
	status := &cobra.Command{
		Use:   "status",
		Short: "Show den.service's status",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := options(nil)
			if err != nil {
				return err
			}
			out, err := service.Status(cmd.Context(), o)
			fmt.Fprint(g.stdout, out)
			return err
		},
	}
	uninstall := &cobra.Command{
		Use:   "uninstall",
		Short: "Stop, disable and remove den.service",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o, err := options(nil)
			if err != nil {
				return err
			}
			if err := service.Uninstall(cmd.Context(), o); err != nil {
				return err
			}
			fmt.Fprintln(g.stdout, "removed den.service")
			return nil
		},
	}
	for _, sc := range []*cobra.Command{install, status, uninstall} {
		sc.Flags().BoolVar(&user, "user", false, "the user's own systemd manager (the default)")
		sc.Flags().BoolVar(&system, "system", false, "the system's manager (as root)")
	}
	install.Flags().StringVar(&runAs, "run-as", "", "with --system, the account den runs as")
	c.AddCommand(install, status, uninstall)
	return c
}
