package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/session"
	"den.dev/den/internal/skill"
)

// skillsDistill turns a session that went well into a skill draft, shown
// for review before it is installed.
func skillsDistill(g *globals) *cobra.Command {
	var name, model string
	var yes, force bool
	c := &cobra.Command{
		Use:   "distill SESSION",
		Short: "Turn a session that went well into a skill draft, and install it once you have read it",
		Long: `Send the session's conversation (the task, the commands that worked and
what they printed) to the agent's model (or --model), which writes a skill:
a SKILL.md with the steps and the pitfalls met, and scripts from the
commands that worked. The draft is written to DATA/agents/AGENT/skill-drafts/
NAME (the computer does not see it), printed whole with the scan's findings,
and installed only when you say yes. Without a terminal, the draft stays for
you to read and edit; install it with den skills install DIR or from the
web face (a chat's Make a skill lists the drafts waiting), or give --yes.
The request is kept as a session "Skill draft from …" with its cost.`,
		Example: `  den skills distill 01JD3Q… --name weekly-report`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			rt, done, err := cliRuntime(g, "den skills distill")
			if err != nil {
				return err
			}
			defer done()
			d, err := rt.Distill(cmd.Context(), args[0], name, model)
			if err != nil {
				return err
			}
			for _, f := range d.Files {
				b, err := os.ReadFile(filepath.Join(d.Dir, filepath.FromSlash(f)))
				if err != nil {
					return err
				}
				fmt.Fprintf(g.stdout, "──── %s\n", permission.Printable(f))
				for line := range strings.Lines(string(b)) {
					fmt.Fprintln(g.stdout, safeLine(strings.TrimSuffix(line, "\n")))
				}
			}
			bundles, err := skill.Fetch(cmd.Context(), d.Dir, skill.FetchOptions{})
			if err != nil {
				return err
			}
			b := bundles[0]
			printFindings(g.stdout, b.Name(), b.Findings)
			fmt.Fprintf(g.stdout, "the draft is in %s (the request is session %s)\n", d.Dir, d.Session)
			if !yes {
				if !isTerminal(g.stdin) {
					fmt.Fprintf(g.stdout, "not installed: read it, then den skills install %s (or den skills distill --yes)\n", d.Dir)
					return nil
				}
				fmt.Fprintf(g.stdout, "Install %s? [y/N] ", b.Name())
				answer, _ := bufio.NewReader(g.stdin).ReadString('\n')
				if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
					fmt.Fprintf(g.stdout, "%s not installed; the draft stays in %s\n", b.Name(), d.Dir)
					return nil
				}
			}
			sess, err := rt.Store().GetSession(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			cat, err := g.skills(sess.Agent)
			if err != nil {
				return err
			}
			if err := cat.Install(b, skill.InstallOptions{Replace: force, AllowHigh: force}, time.Now()); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "installed %s for agent %s\n", b.Name(), sess.Agent)
			return nil
		},
	}
	c.Flags().StringVar(&name, "name", "", "the skill's name (lowercase letters, digits and hyphens; the model picks one otherwise)")
	c.Flags().StringVar(&model, "model", "", "the model that writes the draft (the agent's otherwise)")
	c.Flags().BoolVar(&yes, "yes", false, "install the draft without asking")
	c.Flags().BoolVar(&force, "force", false, "replace a skill of the same name, and install despite high-severity findings")
	return c
}

// skillsDrafts lists the skill drafts waiting for review.
func skillsDrafts(g *globals) *cobra.Command {
	var agent string
	var asJSON bool
	c := &cobra.Command{
		Use:   "drafts",
		Short: "List the skill drafts den skills distill (or the web face) left for review",
		Long: `List the skill drafts waiting in DATA/agents/AGENT/skill-drafts, newest
first, with the scan's findings: those den skills distill wrote without a
terminal, and those the web face's Make a skill wrote and nobody installed
or discarded. Install one with den skills install FOLDER, or review it in
the web face.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rt, done, err := cliRuntime(g, "den skills drafts")
			if err != nil {
				return err
			}
			defer done()
			entries, err := rt.Drafts(cmd.Context(), agent)
			if err != nil {
				return err
			}
			folder := func(e session.DraftEntry) string {
				return filepath.Join(DataDir(g.dataDir), "agents", e.Agent, "skill-drafts", e.Name)
			}
			if asJSON {
				type draftJSON struct {
					Agent    string    `json:"agent"`
					Name     string    `json:"name"`
					Folder   string    `json:"folder"`
					Modified time.Time `json:"modified"`
					Findings int       `json:"findings"`
					High     int       `json:"high"`
					Error    string    `json:"error,omitempty"`
				}
				out := []draftJSON{}
				for _, e := range entries {
					out = append(out, draftJSON{Agent: e.Agent, Name: e.Name, Folder: folder(e), Modified: e.Modified,
						Findings: len(e.Findings), High: skill.CountHigh(e.Findings), Error: e.Problem})
				}
				return json.NewEncoder(g.stdout).Encode(out)
			}
			if len(entries) == 0 {
				fmt.Fprintln(g.stdout, "no skill drafts waiting (den skills distill SESSION writes one)")
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tAGENT\tWRITTEN\tFINDINGS\tFOLDER")
			for _, e := range entries {
				findings := findingsText(e.Findings)
				if e.Problem != "" {
					findings = "not a skill"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.Name, e.Agent, e.Modified.Local().Format("2006-01-02 15:04"), findings, permission.Printable(folder(e)))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, e := range entries {
				if e.Problem != "" {
					fmt.Fprintf(g.stdout, "%s: %s\n", e.Name, permission.Printable(e.Problem))
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "", "one agent's drafts (default: every agent's)")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// cliRuntime is a runtime for a command that runs no turn of its own
// but may ask a model or open a computer; done closes it and the store.
func cliRuntime(g *globals, holder string) (*session.Runtime, func(), error) {
	cfg, err := g.config()
	if err != nil {
		return nil, nil, err
	}
	st, err := g.openStore()
	if err != nil {
		return nil, nil, err
	}
	rt, err := session.New(session.Options{Store: st, DataDir: DataDir(g.dataDir), Config: cfg, Holder: holder,
		Computer: func(ctx context.Context, name string) (*computer.Computer, computer.SessionOptions, error) {
			f := computerFlags{agent: name}
			return f.open(ctx, g)
		}})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return rt, func() { rt.Close(); st.Close() }, nil
}
