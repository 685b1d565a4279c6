package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"den.dev/den/internal/secret"
)

// maxSecret bounds a value read from standard input.
const maxSecret = 64 << 10

// secretCmd is den secret: values agents use without seeing them.
func secretCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "secret",
		Short: "Keep secrets agents use without seeing them (tokens bound to hosts)",
		Long: `A secret is a value (a token, a password) bound to hosts. Inside an agent's
computer the variable NAME holds only a placeholder, den-secret:NAME; den puts
the value into requests to the bound hosts as they leave the computer, and
nowhere else. The values are kept in DATA/secrets.json, readable by den's user
alone (mode 0600), and never printed. See docs/secrets.md.`,
	}
	c.AddCommand(secretSetCmd(g), secretListCmd(g), secretRmCmd(g))
	return c
}

func secretSetCmd(g *globals) *cobra.Command {
	var s secret.Secret
	c := &cobra.Command{
		Use:   "set NAME --host HOST [--header 'NAME: ...{{value}}...' | --query KEY | --basic USER]",
		Short: "Set a secret; its value is read from the terminal (not echoed) or from standard input",
		Long: `Set a secret, in place of one of the same name. The value is asked for on the
terminal without echo, or read from standard input (den secret set NAME ... <
file). It goes only to the hosts named with --host (a name, or *.domain for
every name below it), over HTTPS, and only where the binding says:

  --header "Authorization: Bearer {{value}}"   a header (the default)
  --basic USER                                 basic auth: USER and the value as password
  --query KEY                                  the query parameter KEY

den fills the header, the password or the parameter when a request leaves it
empty, and replaces the placeholder den-secret:NAME where the request puts it
there; anywhere else the placeholder stays as it is. Running computers get the
variable at their next start. For git: --host github.com --basic x-access-token.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s.Name = args[0]
			if err := secret.ValidName(s.Name); err != nil {
				return usageError{err}
			}
			value, err := readSecret(g, s.Name)
			if err != nil {
				return err
			}
			s.Value = value
			if err := s.Validate(); err != nil {
				return usageError{err}
			}
			if err := secret.Open(DataDir(g.dataDir)).Set(s); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "secret %s set: %s; computers see %s=%s\n", s.Name, s.Form()+" to "+strings.Join(s.Hosts, ", "), s.Name, s.Placeholder())
			return nil
		},
	}
	c.Flags().StringArrayVar(&s.Hosts, "host", nil, "a host the value may be sent to (repeatable; *.example.com for every name below it)")
	c.Flags().StringVar(&s.Header, "header", "", `the header that carries it, with {{value}} where the value goes (default "Authorization: Bearer {{value}}")`)
	c.Flags().StringVar(&s.Query, "query", "", "the query parameter that carries it")
	c.Flags().StringVar(&s.Basic, "basic", "", "send it as the password of basic auth, with this user")
	c.Flags().StringArrayVar(&s.Agents, "agent", nil, "only this agent's computers get it (repeatable; default: every agent)")
	return c
}

// readSecret reads a value: on a terminal, asked for without echo;
// otherwise all of standard input, less a final line break.
func readSecret(g *globals, name string) (string, error) {
	if f, ok := g.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprintf(g.stderr, "Value of %s (not shown): ", name)
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(g.stderr)
		if err != nil {
			return "", fmt.Errorf("read the value: %w", err)
		}
		return string(b), nil
	}
	b, err := io.ReadAll(io.LimitReader(bufio.NewReader(g.stdin), maxSecret+1))
	if err != nil {
		return "", fmt.Errorf("read the value: %w", err)
	}
	if len(b) > maxSecret {
		return "", usageError{fmt.Errorf("the value is over %d bytes", maxSecret)}
	}
	v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	if v == "" {
		return "", usageError{errors.New("no value on standard input")}
	}
	return v, nil
}

func secretListCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the secrets and where each may go (never their values)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			list, err := secret.Open(DataDir(g.dataDir)).List()
			if err != nil {
				return err
			}
			if asJSON {
				type row struct {
					Name    string   `json:"name"`
					Hosts   []string `json:"hosts"`
					Header  string   `json:"header,omitempty"`
					Query   string   `json:"query,omitempty"`
					Basic   string   `json:"basic,omitempty"`
					Agents  []string `json:"agents,omitempty"`
					Created string   `json:"created"`
				}
				rows := []row{}
				for _, s := range list {
					rows = append(rows, row{s.Name, s.Hosts, s.Header, s.Query, s.Basic, s.Agents, s.Created.Format(time.RFC3339)})
				}
				return json.NewEncoder(g.stdout).Encode(rows)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tHOSTS\tAS\tAGENTS\tSET")
			for _, s := range list {
				agents := strings.Join(s.Agents, ",")
				if agents == "" {
					agents = "all"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", s.Name, strings.Join(s.Hosts, ","), s.Form(), agents, s.Created.Local().Format("2006-01-02 15:04"))
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func secretRmCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME",
		Short: "Remove a secret",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := secret.Open(DataDir(g.dataDir)).Remove(args[0]); err != nil {
				if errors.Is(err, secret.ErrNotFound) {
					return usageError{err}
				}
				return err
			}
			fmt.Fprintf(g.stdout, "secret %s removed\n", args[0])
			return nil
		},
	}
}
