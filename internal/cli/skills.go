package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/skill"
)

// skillsCmd manages an agent's skills.
func skillsCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "skills",
		Short: "List, install, update, check and remove an agent's skills",
		Long: `An agent's skills are folders with a SKILL.md (Agent Skills format) that
it reads in its computer at /den/skills/NAME. den installs them from a
folder, a .zip or .tar.gz archive, or a git repository, scans them first,
pins each to its content hash and source commit, and offers the model only
skills whose files still match: a skill changed since it was installed is
not used until you accept the change (den skills accept) or restore it
(den skills restore). Skills the agent makes itself are scanned too.
See docs/skills.md.`,
	}
	c.AddCommand(skillsList(g), skillsShow(g), skillsInstall(g), skillsUpdate(g), skillsRemove(g),
		skillsEnable(g, true), skillsEnable(g, false), skillsAccept(g), skillsDiff(g), skillsRestore(g), skillsImport(g), skillsDistill(g), skillsDrafts(g))
	return c
}

// skills opens the catalog of agent's skills.
func (g *globals) skills(agent string) (*skill.Catalog, error) {
	m, comp, err := g.computer(agent)
	if err != nil {
		return nil, err
	}
	return skill.Open(skill.Options{Dir: comp.AgentDir("skills"), Owner: skillOwner(m)})
}

// skillOwner is who files den writes in the skills folder must belong
// to: the computer's root, when den is root (nil otherwise: den's own
// ids are the computer's root's).
func skillOwner(m *computer.Manager) *hostfs.Owner {
	ids, err := m.IDs()
	uid, gid, ok := ids.Root()
	if err != nil || !ok || os.Geteuid() != 0 {
		return nil
	}
	return &hostfs.Owner{UID: uid, GID: gid}
}

// stateText is how a person reads an entry's state.
func stateText(e skill.Entry) string {
	switch e.State {
	case skill.Agent:
		return "made by the agent" + sessionNote(e)
	case skill.Flagged:
		return "flagged (made by the agent" + sessionNote(e) + ")"
	case skill.Disabled:
		if e.Record != nil && e.Record.Enabled {
			return "disabled in this session"
		}
	}
	return string(e.State)
}

func sessionNote(e skill.Entry) string {
	if e.Record == nil || e.Record.Session == "" {
		return ""
	}
	return " (session " + e.Record.Session + ")"
}

// sourceText is where an entry came from.
func sourceText(e skill.Entry) string {
	switch {
	case e.Record == nil:
		return "-"
	case e.Record.Origin == skill.OriginAgent:
		return "agent"
	case e.Record.Source == nil:
		return "-"
	}
	s := e.Record.Source.String()
	if e.Record.Commit != "" {
		s += " @" + short(e.Record.Commit)
	}
	return s
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// findingsText counts findings, naming the high ones.
func findingsText(f []skill.Finding) string {
	if high := skill.CountHigh(f); high > 0 {
		return fmt.Sprintf("%d (%d high)", len(f), high)
	}
	return fmt.Sprint(len(f))
}

// entryJSON is an entry as den skills list --json and show --json print
// it.
type entryJSON struct {
	Name        string          `json:"name"`
	State       skill.State     `json:"state"`
	Usable      bool            `json:"usable"`
	Problem     string          `json:"problem,omitempty"`
	Description string          `json:"description,omitempty"`
	Hash        string          `json:"hash,omitempty"`
	Record      *skill.Record   `json:"record,omitempty"`
	Findings    []skill.Finding `json:"findings"`
	// show only:
	Manifest *skill.Manifest  `json:"manifest,omitempty"`
	Files    []skill.FileInfo `json:"files,omitempty"`
}

func toJSON(e skill.Entry) entryJSON {
	out := entryJSON{Name: e.Name, State: e.State, Usable: e.Usable(), Problem: e.Problem, Hash: e.Hash, Record: e.Record, Findings: e.Findings}
	if e.Manifest != nil {
		out.Description = e.Manifest.Description
	}
	if out.Findings == nil {
		out.Findings = []skill.Finding{}
	}
	return out
}

func skillsList(g *globals) *cobra.Command {
	var agent, session string
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the agent's skills: state, source and the scan's findings",
		Long: `List every skill in the agent's skills folder, and every installed skill
whose folder is gone. STATE is one of:

  installed           installed by den, files as installed: offered to the model
  made by the agent   a folder den did not install (with the session it appeared in): offered
  changed             installed, but its files changed since: not offered until accepted
  flagged             made by the agent, with high findings: not offered until accepted
  disabled            turned off (den skills enable turns it back on)
  missing             installed, but its folder is gone (den skills restore)
  invalid             not a skill den can use; the reason is printed below the table

With --session, a skill disabled in that session shows as disabled.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, err := g.skills(agent)
			if err != nil {
				return err
			}
			entries, err := cat.List(session, time.Now())
			if err != nil {
				return err
			}
			if asJSON {
				out := []entryJSON{}
				for _, e := range entries {
					out = append(out, toJSON(e))
				}
				return json.NewEncoder(g.stdout).Encode(out)
			}
			if len(entries) == 0 {
				fmt.Fprintf(g.stdout, "agent %s has no skills (den skills install SOURCE adds one)\n", agent)
				return nil
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSTATE\tSOURCE\tFINDINGS")
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", permission.Printable(e.Name), stateText(e), permission.Printable(sourceText(e)), findingsText(e.Findings))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, e := range entries {
				if e.Problem != "" {
					fmt.Fprintf(g.stdout, "%s: %s\n", permission.Printable(e.Name), permission.Printable(e.Problem))
				}
			}
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "default", "agent")
	c.Flags().StringVar(&session, "session", "", "show states as seen from this session")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func skillsShow(g *globals) *cobra.Command {
	var agent string
	var asJSON bool
	c := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a skill: its frontmatter, files, findings and record",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, err := g.skills(agent)
			if err != nil {
				return err
			}
			e, err := cat.Get(args[0], "", time.Now())
			if errors.Is(err, skill.ErrNotFound) {
				return usageError{fmt.Errorf("agent %s has no skill %q (den skills list shows them)", agent, args[0])}
			}
			if err != nil {
				return err
			}
			files, ferr := cat.Files(e.Name)
			if asJSON {
				out := toJSON(e)
				out.Manifest, out.Files = e.Manifest, files
				return json.NewEncoder(g.stdout).Encode(out)
			}
			showEntry(g.stdout, e, files, ferr)
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "default", "agent")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// showEntry prints what den skills show prints.
func showEntry(w io.Writer, e skill.Entry, files []skill.FileInfo, filesErr error) {
	p := permission.Printable
	fmt.Fprintf(w, "%s: %s\n", e.Name, stateText(e))
	if e.Problem != "" {
		fmt.Fprintf(w, "  %s\n", p(e.Problem))
	}
	if m := e.Manifest; m != nil {
		fmt.Fprintln(w, "\nfrontmatter:")
		field := func(k, v string) {
			if v != "" {
				fmt.Fprintf(w, "  %-14s %s\n", k+":", p(strings.TrimSpace(v)))
			}
		}
		field("name", m.Name)
		field("description", m.Description)
		field("license", m.License)
		field("allowed-tools", strings.Join(m.AllowedTools, " "))
		field("version", m.Version)
		field("compatibility", m.Compatibility)
		keys := make([]string, 0, len(m.Metadata))
		for k := range m.Metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			field("metadata."+k, m.Metadata[k])
		}
		field("other keys", strings.Join(m.Other, ", "))
	}
	if r := e.Record; r != nil {
		fmt.Fprintln(w, "\nrecord:")
		fmt.Fprintf(w, "  origin:      %s%s\n", r.Origin, sessionNote(e))
		if r.Source != nil {
			fmt.Fprintf(w, "  source:      %s (%s)\n", p(r.Source.String()), r.Source.Kind)
		}
		if r.Commit != "" {
			fmt.Fprintf(w, "  commit:      %s\n", r.Commit)
		}
		fmt.Fprintf(w, "  hash:        %s\n", r.Hash)
		if e.Hash != "" && e.Hash != r.Hash {
			fmt.Fprintf(w, "  hash now:    %s\n", e.Hash)
		}
		fmt.Fprintf(w, "  installed:   %s\n", r.Installed.Local().Format("2006-01-02 15:04:05"))
		fmt.Fprintf(w, "  updated:     %s\n", r.Updated.Local().Format("2006-01-02 15:04:05"))
		enabled := "yes"
		if !r.Enabled {
			enabled = "no"
		}
		if len(r.DisabledSessions) > 0 {
			enabled += ", disabled in session " + strings.Join(r.DisabledSessions, ", ")
		}
		fmt.Fprintf(w, "  enabled:     %s\n", enabled)
		used := "never"
		if r.Uses > 0 {
			used = fmt.Sprintf("%d times, last %s", r.Uses, r.LastUsed.Local().Format("2006-01-02 15:04"))
		}
		fmt.Fprintf(w, "  used:        %s\n", used)
	}
	fmt.Fprintln(w, "\nfiles:")
	if filesErr != nil {
		fmt.Fprintf(w, "  %s\n", p(filesErr.Error()))
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range files {
		note := ""
		switch {
		case f.Mode&os.ModeSymlink != 0:
			note = "symbolic link to " + p(f.Target)
		case !f.Mode.IsRegular():
			note = f.Mode.Type().String()
		case f.Mode&0o111 != 0:
			note = "executable"
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", p(f.Path), f.Size, note)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nfindings:")
	if len(e.Findings) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, f := range e.Findings {
		fmt.Fprintf(w, "  %s\n", p(f.String()))
	}
}

func skillsInstall(g *globals) *cobra.Command {
	var agent string
	var o skill.FetchOptions
	var force bool
	c := &cobra.Command{
		Use:   "install SOURCE",
		Short: "Install skills from a folder, a .zip or .tar.gz, or a git repository",
		Long: `Install the skill in SOURCE: a folder, a .zip, .tar.gz or .tgz archive, or a
git repository (an https:// URL, GitHub's https://github.com/OWNER/REPO/
tree/REF/PATH, a file:// URL or a bare repository's path). A source with
SKILL.md at its root (or at --path) is one skill; one holding several
(skills/*/SKILL.md, say) needs --path to name one or --all to take each.

Every skill is scanned first; a high-severity finding refuses the install,
as does a skill of the same name, unless --force. git runs without your
configuration or credentials, fetches one commit (--ref: a branch, tag or
full commit hash; the default branch otherwise), and den records it.`,
		Example: `  den skills install https://github.com/anthropics/skills --path skills/skill-creator --ref main
  den skills install https://github.com/anthropics/skills/tree/main/skills/mcp-builder
  den skills install ~/Downloads/pdf-tools.zip
  den skills install ./my-skills --all`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, err := g.skills(agent)
			if err != nil {
				return err
			}
			bundles, err := skill.Fetch(cmd.Context(), args[0], o)
			if err != nil {
				return err
			}
			failed := 0
			for _, b := range bundles {
				printFindings(g.stdout, b.Name(), b.Findings)
				if err := cat.Install(b, skill.InstallOptions{Replace: force, AllowHigh: force}, time.Now()); err != nil {
					fmt.Fprintf(g.stderr, "den: %v\n", err)
					failed++
					continue
				}
				from := b.Source.String()
				if b.Commit != "" {
					from += " @" + short(b.Commit)
				}
				fmt.Fprintf(g.stdout, "installed %s from %s\n", b.Name(), permission.Printable(from))
			}
			if failed > 0 {
				return exitError{ExitFailure}
			}
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "default", "agent")
	c.Flags().StringVar(&o.Path, "path", "", "the skill's folder (or a folder of skills) inside SOURCE")
	c.Flags().StringVar(&o.Ref, "ref", "", "git branch, tag or full commit hash (default: the default branch)")
	c.Flags().BoolVar(&o.All, "all", false, "install every skill SOURCE holds")
	c.Flags().BoolVar(&force, "force", false, "replace a skill of the same name, and install despite high-severity findings")
	return c
}

// printFindings prints a skill's findings, if any.
func printFindings(w io.Writer, name string, findings []skill.Finding) {
	if len(findings) == 0 {
		return
	}
	fmt.Fprintf(w, "%s: the scan found:\n", name)
	for _, f := range findings {
		fmt.Fprintf(w, "  %s\n", permission.Printable(f.String()))
	}
}

// printDiff prints file diffs: a line per file, and the unified diff
// of text files, each line as it is unless it holds a character that
// could change what the terminal shows (then as permission.Printable
// writes it).
func printDiff(w io.Writer, diffs []skill.FileDiff) {
	for _, d := range diffs {
		fmt.Fprintln(w, permission.Printable(d.String()))
		for line := range strings.Lines(d.Unified) {
			fmt.Fprintln(w, safeLine(strings.TrimSuffix(line, "\n")))
		}
	}
}

// safeLine is line as it is when it shows as it reads, else
// permission.Printable(line). Backslashes and tabs alone leave it as it
// is: code is full of them.
func safeLine(line string) string {
	probe := strings.NewReplacer("\\", "", "\t", "").Replace(line)
	if permission.Printable(probe) == probe {
		return line
	}
	return permission.Printable(line)
}

func skillsUpdate(g *globals) *cobra.Command {
	var agent string
	var yes, force bool
	c := &cobra.Command{
		Use:   "update NAME",
		Short: "Fetch an installed skill again from its source, show what changed, and ask",
		Long: `Fetch the installed skill NAME again from where it was installed (for git,
the newest commit of the ref it was installed from), print the difference
from the installed files and the scan's findings, and ask before
installing it. Nothing changes on "no". --yes answers yes (for scripts);
without a terminal, --yes is required. High-severity findings refuse the
update unless --force.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, err := g.skills(agent)
			if err != nil {
				return err
			}
			u, err := cat.CheckUpdate(cmd.Context(), args[0], skill.FetchOptions{})
			if errors.Is(err, skill.ErrNotFound) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			if u.Same() {
				fmt.Fprintf(g.stdout, "%s is up to date\n", u.Name)
				return nil
			}
			printDiff(g.stdout, u.Diff)
			printFindings(g.stdout, u.Name, u.Bundle.Findings)
			if !yes {
				if !isTerminal(g.stdin) {
					return usageError{fmt.Errorf("update %s: not a terminal to ask on: give --yes to update", u.Name)}
				}
				fmt.Fprintf(g.stdout, "Update %s? [y/N] ", u.Name)
				answer, _ := bufio.NewReader(g.stdin).ReadString('\n')
				if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
					fmt.Fprintf(g.stdout, "%s not updated\n", u.Name)
					return nil
				}
			}
			if err := cat.Install(u.Bundle, skill.InstallOptions{Replace: true, AllowHigh: force}, time.Now()); err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "updated %s", u.Name)
			if u.Bundle.Commit != "" {
				fmt.Fprintf(g.stdout, " to %s", short(u.Bundle.Commit))
			}
			fmt.Fprintln(g.stdout)
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "default", "agent")
	c.Flags().BoolVar(&yes, "yes", false, "update without asking")
	c.Flags().BoolVar(&force, "force", false, "update despite high-severity findings")
	return c
}

// skillCmd is a command on one skill by name that prints what it did.
func skillCmd(g *globals, use, short, long string, do func(cat *skill.Catalog, name string) (string, error)) *cobra.Command {
	var agent string
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, err := g.skills(agent)
			if err != nil {
				return err
			}
			msg, err := do(cat, args[0])
			if errors.Is(err, skill.ErrNotFound) || errors.Is(err, skill.ErrState) || errors.Is(err, skill.ErrInvalid) {
				return usageError{err}
			}
			if err != nil {
				return err
			}
			if msg != "" {
				fmt.Fprintln(g.stdout, msg)
			}
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "default", "agent")
	return c
}

func skillsRemove(g *globals) *cobra.Command {
	return skillCmd(g, "remove NAME", "Remove a skill: its folder, its pristine copy and den's record of it", "",
		func(cat *skill.Catalog, name string) (string, error) {
			return "removed " + name, cat.Remove(name)
		})
}

func skillsEnable(g *globals, enable bool) *cobra.Command {
	verb, short := "enable", "Offer a skill to the model again, everywhere or in one session"
	if !enable {
		verb, short = "disable", "Stop offering a skill to the model, everywhere or in one session"
	}
	var session string
	c := skillCmd(g, verb+" NAME [--session ID]", short, "",
		func(cat *skill.Catalog, name string) (string, error) {
			where := "everywhere"
			if session != "" {
				where = "in session " + session
			}
			return verb + "d " + name + " " + where, cat.SetEnabled(name, session, enable)
		})
	c.Flags().StringVar(&session, "session", "", "only in this session")
	return c
}

func skillsAccept(g *globals) *cobra.Command {
	return skillCmd(g, "accept NAME", "Trust a skill's files as they are now",
		`Accept the files of skill NAME as they are now. For an installed skill
that changed, they become its installed version (den skills diff shows
the change first); for a skill the agent made with high-severity
findings, they are allowed until they change again. A planted link
cannot be accepted: restore or remove the skill.`,
		func(cat *skill.Catalog, name string) (string, error) {
			e, err := cat.Accept(name, time.Now())
			if err != nil {
				return "", err
			}
			return fmt.Sprintf("accepted %s as it is now (%s)", name, e.Hash), nil
		})
}

func skillsRestore(g *globals) *cobra.Command {
	return skillCmd(g, "restore NAME", "Put an installed skill's files back as they were installed", "",
		func(cat *skill.Catalog, name string) (string, error) {
			if _, err := cat.Restore(name, time.Now()); err != nil {
				return "", err
			}
			return "restored " + name, nil
		})
}

func skillsDiff(g *globals) *cobra.Command {
	return skillCmd(g, "diff NAME", "Show how an installed skill's files differ from those installed", "",
		func(cat *skill.Catalog, name string) (string, error) {
			diffs, err := cat.Diff(name)
			if err != nil {
				return "", err
			}
			if len(diffs) == 0 {
				return name + " is as installed", nil
			}
			printDiff(g.stdout, diffs)
			return "", nil
		})
}

func skillsImport(g *globals) *cobra.Command {
	var agent string
	var from []string
	var force bool
	c := &cobra.Command{
		Use:   "import [--from DIR]...",
		Short: "Install the skills of other agents' folders (~/.claude/skills, ~/.codex/skills)",
		Long: `Install, as from a folder, every skill in ~/.claude/skills and
~/.codex/skills, or in each --from folder instead (a repository's
.agents/skills, say). Each is scanned and recorded like any install; den
prints what it took and what it skipped, and why. Skills already installed
under the same name, and skills with high-severity findings, are skipped
unless --force.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cat, err := g.skills(agent)
			if err != nil {
				return err
			}
			dirs := from
			quietMissing := len(dirs) == 0
			if quietMissing {
				home, err := os.UserHomeDir()
				if err != nil {
					return err
				}
				dirs = []string{filepath.Join(home, ".claude", "skills"), filepath.Join(home, ".codex", "skills")}
			}
			took, skipped := 0, 0
			for _, r := range cat.Import(cmd.Context(), dirs, skill.ImportOptions{Force: force}, time.Now()) {
				switch {
				case r.Installed:
					took++
					fmt.Fprintf(g.stdout, "took    %s from %s\n", r.Name, permission.Printable(r.Dir))
					printFindings(g.stdout, r.Name, r.Findings)
				case quietMissing && r.Name == "" && r.Reason == "no such folder":
				default:
					skipped++
					fmt.Fprintf(g.stdout, "skipped %s: %s\n", permission.Printable(r.Dir), permission.Printable(r.Reason))
				}
			}
			fmt.Fprintf(g.stdout, "%d skills imported, %d skipped\n", took, skipped)
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "default", "agent")
	c.Flags().StringArrayVar(&from, "from", nil, "a folder of skills to import (repeatable; default ~/.claude/skills and ~/.codex/skills)")
	c.Flags().BoolVar(&force, "force", false, "replace skills of the same name, and import despite high-severity findings")
	return c
}
