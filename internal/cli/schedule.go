package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"den.dev/den/internal/daemon"
	"den.dev/den/internal/schedule"
	"den.dev/den/internal/store"
)

// scheduleCmd is den schedule: the jobs den serve runs on a schedule.
func scheduleCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "schedule",
		Short: "Run the agent on a schedule: list, add, show, edit, rm, pause, resume, run, stop, history",
		Long: `A job sends a prompt to an agent at times given by a cron expression in a time
zone (--cron "0 7 * * *" --tz Europe/Berlin), an interval (--every 2h), a
one-shot time (--at 2026-12-24T18:00) or a countdown (--in 20m), in a fresh
session per run or continuing one (--session NAME). den serve runs the jobs
and delivers each answer to the web page, Web Push and /api/v1/events;
failures and missed runs are delivered too. Every time a job was due is in
its history: ok, failed (and why), missed, skipped or interrupted.
docs/schedule.md says what den promises.`,
	}
	c.AddCommand(scheduleList(g), scheduleAdd(g), scheduleShow(g), scheduleEdit(g), scheduleRm(g),
		scheduleSimple(g, "pause", "Pause a job: its times pass without runs until resume"),
		scheduleSimple(g, "resume", "Resume a paused job, from now"),
		scheduleSimple(g, "run", "Run a job now (den serve starts it within a second)"),
		scheduleStop(g), scheduleHistory(g))
	return c
}

// withBook opens the store and gives fn the book of jobs.
func withBook(g *globals, fn func(b *schedule.Book) error) error {
	st, err := g.openStore()
	if err != nil {
		return err
	}
	defer st.Close()
	return fn(&schedule.Book{Store: st})
}

// jobID reads a job's id, or finds the job by its name.
func jobID(ctx context.Context, b *schedule.Book, arg string) (int64, error) {
	if id, err := strconv.ParseInt(arg, 10, 64); err == nil && id > 0 {
		return id, nil
	}
	list, err := b.List(ctx, "")
	if err != nil {
		return 0, err
	}
	var found []int64
	for _, j := range list {
		if j.Name == arg {
			found = append(found, j.ID)
		}
	}
	switch len(found) {
	case 0:
		return 0, usageError{fmt.Errorf("no schedule %q (den schedule list shows them)", arg)}
	case 1:
		return found[0], nil
	}
	return 0, usageError{fmt.Errorf("%d schedules are named %q: give the id", len(found), arg)}
}

// bookError makes a refusal of the book a usage error.
func bookError(err error) error {
	if errors.Is(err, schedule.ErrBadParams) || errors.Is(err, store.ErrNotFound) {
		return usageError{err}
	}
	return err
}

// scheduleFlags adds the job's flags to c; given then reads those the
// user set (and the prompt from the arguments, or standard input for
// "-").
func scheduleFlags(g *globals, c *cobra.Command) (given func(args []string) (map[string]string, error)) {
	for _, f := range schedule.Flags {
		switch f.Kind {
		case "int":
			c.Flags().Int(f.Name, 0, f.Usage)
		case "bool":
			c.Flags().Bool(f.Name, false, f.Usage)
		default:
			c.Flags().String(f.Name, "", f.Usage)
		}
	}
	return func(args []string) (map[string]string, error) {
		out := map[string]string{}
		for _, f := range schedule.Flags {
			if fl := c.Flags().Lookup(f.Name); fl.Changed {
				out[f.Name] = fl.Value.String()
			}
		}
		if len(args) > 0 {
			if _, ok := out["prompt"]; ok {
				return nil, usageError{errors.New("give the prompt with --prompt or as the arguments, not both")}
			}
			if len(args) == 1 && args[0] == "-" {
				b, err := io.ReadAll(io.LimitReader(g.stdin, schedule.MaxPrompt+1))
				if err != nil {
					return nil, err
				}
				out["prompt"] = string(b)
			} else {
				out["prompt"] = strings.Join(args, " ")
			}
		}
		return out, nil
	}
}

func scheduleAdd(g *globals) *cobra.Command {
	var agentName string
	var asJSON bool
	c := &cobra.Command{
		Use:   "add (--cron EXPR [--tz ZONE] | --every D | --at TIME | --in D) [flags] [PROMPT | -]",
		Short: "Add a job",
		Example: `  den schedule add --name digest --cron "0 7 * * *" --tz Europe/Berlin "Read my feeds and summarise them" --speak
  den schedule add --every 2h --verify "test -s /workspace/report.md" "Update the report"
  den schedule add --in 20m "Remind me to take the bread out"`,
	}
	given := scheduleFlags(g, c)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		v, err := given(args)
		if err != nil {
			return err
		}
		p, err := schedule.ParamsFrom(v)
		if err != nil {
			return usageError{err}
		}
		return withBook(g, func(b *schedule.Book) error {
			j, err := b.Add(cmd.Context(), agentName, "user", p)
			if err != nil {
				return bookError(err)
			}
			if asJSON {
				return printJSON(g.stdout, j)
			}
			fmt.Fprintf(g.stdout, "added schedule %d: %s, %s; next run %s\n", j.ID, j.Title, j.When, when(j.NextRun))
			g.noServe()
			return nil
		})
	}
	c.Flags().StringVar(&agentName, "agent", "default", "the agent that runs the job")
	c.Flags().BoolVar(&asJSON, "json", false, "print the job as JSON")
	return c
}

func scheduleEdit(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "edit ID|NAME [flags] [PROMPT | -]",
		Short: "Change a job: the flags given (and the prompt, if given)",
		Args:  cobra.MinimumNArgs(1),
	}
	given := scheduleFlags(g, c)
	c.RunE = func(cmd *cobra.Command, args []string) error {
		v, err := given(args[1:])
		if err != nil {
			return err
		}
		if len(v) == 0 {
			return usageError{errors.New("nothing to change: give the flags to change (den schedule edit --help)")}
		}
		p, err := schedule.ParamsFrom(v)
		if err != nil {
			return usageError{err}
		}
		return withBook(g, func(b *schedule.Book) error {
			id, err := jobID(cmd.Context(), b, args[0])
			if err != nil {
				return err
			}
			j, err := b.Edit(cmd.Context(), "", id, p)
			if err != nil {
				return bookError(err)
			}
			if asJSON {
				return printJSON(g.stdout, j)
			}
			fmt.Fprintf(g.stdout, "changed schedule %d: %s, %s; next run %s\n", j.ID, j.Title, j.When, when(j.NextRun))
			return nil
		})
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the job as JSON")
	return c
}

func scheduleList(g *globals) *cobra.Command {
	var agentName string
	var all, asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List the jobs: when they run next, and how their last run went",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withBook(g, func(b *schedule.Book) error {
				list, err := b.List(cmd.Context(), agentName)
				if err != nil {
					return err
				}
				// One-shot jobs that are done stay listed for a day after
				// their last run, then --all shows them.
				shown := []schedule.JobView{}
				for _, j := range list {
					old := j.State == schedule.StateDone && (j.Last == nil || j.Last.Ended == nil || time.Since(*j.Last.Ended) > 24*time.Hour)
					if all || !old {
						shown = append(shown, j)
					}
				}
				if asJSON {
					return printJSON(g.stdout, shown)
				}
				tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tAGENT\tSTATE\tNEXT RUN\tLAST RUN\tWHEN\tTITLE")
				for _, j := range shown {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\n", j.ID, j.Agent, j.State, when(j.NextRun), lastRun(j.Last), j.When, j.Title)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				if hidden := len(list) - len(shown); hidden > 0 {
					fmt.Fprintf(g.stdout, "(%d one-shot job(s) done before yesterday not shown: --all shows them)\n", hidden)
				}
				return nil
			})
		},
	}
	c.Flags().StringVar(&agentName, "agent", "", "only this agent's jobs")
	c.Flags().BoolVar(&all, "all", false, "also the one-shot jobs done more than a day ago")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func scheduleShow(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "show ID|NAME",
		Short: "Show a job's settings and its last runs",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withBook(g, func(b *schedule.Book) error {
				id, err := jobID(cmd.Context(), b, args[0])
				if err != nil {
					return err
				}
				j, err := b.Get(cmd.Context(), "", id)
				if err != nil {
					return bookError(err)
				}
				runs, err := b.History(cmd.Context(), "", id, 5, 0)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(g.stdout, map[string]any{"schedule": j, "runs": runs})
				}
				tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
				line := func(k, v string) {
					if v != "" {
						fmt.Fprintf(tw, "%s:\t%s\n", k, v)
					}
				}
				line("schedule", fmt.Sprint(j.ID))
				line("name", j.Name)
				line("agent", j.Agent)
				line("state", j.State)
				line("when", j.When)
				line("next run", when(j.NextRun))
				line("prompt", oneLine(j.Prompt, 200))
				session := "a fresh one per run"
				if j.Session != "" {
					session = j.Session + " " + parens(j.SessionID)
				}
				line("session", session)
				line("model", j.Model)
				line("budget", j.Budget)
				if j.MaxTurns > 0 {
					line("max turns", fmt.Sprint(j.MaxTurns))
				}
				line("verify", j.Verify)
				deliver := j.Deliver
				if j.Speak {
					deliver += ", spoken"
				}
				line("deliver", deliver)
				line("approvals", j.Approvals+" (what asks in a run)")
				line("misfire", fmt.Sprintf("%s, grace %s", j.Misfire, j.Grace))
				line("jitter", j.Jitter)
				line("retries", fmt.Sprint(j.Retries))
				line("created", j.Created.Local().Format("2006-01-02 15:04")+" by "+j.CreatedBy)
				if err := tw.Flush(); err != nil {
					return err
				}
				if len(runs) > 0 {
					fmt.Fprintln(g.stdout, "\nlast runs:")
					return printRuns(g, runs, false)
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func scheduleRm(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "rm ID|NAME",
		Short: "Remove a job and its history (a run in progress goes on in its session)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withBook(g, func(b *schedule.Book) error {
				id, err := jobID(cmd.Context(), b, args[0])
				if err != nil {
					return err
				}
				if err := b.Remove(cmd.Context(), "", id); err != nil {
					return bookError(err)
				}
				fmt.Fprintf(g.stdout, "removed schedule %d\n", id)
				return nil
			})
		},
	}
}

// scheduleSimple is pause, resume or run.
func scheduleSimple(g *globals, verb, short string) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   verb + " ID|NAME",
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withBook(g, func(b *schedule.Book) error {
				ctx := cmd.Context()
				id, err := jobID(ctx, b, args[0])
				if err != nil {
					return err
				}
				var out any
				var said string
				switch verb {
				case "pause":
					j, err := b.Pause(ctx, "", id)
					out, said = j, fmt.Sprintf("paused schedule %d: %s", id, j.Title)
					if err != nil {
						return bookError(err)
					}
				case "resume":
					j, err := b.Resume(ctx, "", id)
					if err != nil {
						return bookError(err)
					}
					out, said = j, fmt.Sprintf("resumed schedule %d: %s; next run %s", id, j.Title, when(j.NextRun))
				case "run":
					u, err := b.RunNow(ctx, "", id)
					if err != nil {
						return bookError(err)
					}
					out, said = u, fmt.Sprintf("run %d of schedule %d queued; den schedule history %d shows how it goes", u.ID, id, id)
				}
				if asJSON {
					return printJSON(g.stdout, out)
				}
				fmt.Fprintln(g.stdout, said)
				if verb != "pause" {
					g.noServe()
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func scheduleStop(g *globals) *cobra.Command {
	var run int64
	var asJSON bool
	c := &cobra.Command{
		Use:   "stop ID|NAME",
		Short: "Stop a job's run in progress: it ends failed, stopped by the user, and is not retried",
		Long: `Stop a job's run in progress: its history records it failed, "stopped by the user",
at once, and it is not retried; den serve cancels its turn as cancelling its
session does. A job that delivers its answers delivers a note that the run was
stopped. Runs waiting to start are left (den schedule pause skips them).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withBook(g, func(b *schedule.Book) error {
				ctx := cmd.Context()
				id, err := jobID(ctx, b, args[0])
				if err != nil {
					return err
				}
				runs, err := b.Stop(ctx, "", id, run)
				if errors.Is(err, schedule.ErrNotRunning) {
					return fmt.Errorf("%w (den schedule history %d shows its runs)", err, id)
				}
				if err != nil {
					return bookError(err)
				}
				if asJSON {
					return printJSON(g.stdout, runs)
				}
				serving, _ := daemon.Serving(DataDir(g.dataDir))
				for _, u := range runs {
					fmt.Fprintf(g.stdout, "stopped run %d of schedule %d: %s\n", u.ID, id, u.Title)
				}
				if serving {
					fmt.Fprintln(g.stdout, "den serve cancels its turn; den schedule history shows what it cost once it has ended")
				} else {
					fmt.Fprintln(g.stderr, "den: den serve is not running, so nothing was running the run (a den that was killed left it running): it is recorded stopped, and will not be retried")
				}
				return nil
			})
		},
	}
	c.Flags().Int64Var(&run, "run", 0, "stop only this run (its id, from den schedule history)")
	c.Flags().BoolVar(&asJSON, "json", false, "print the stopped runs as JSON")
	return c
}

func scheduleHistory(g *globals) *cobra.Command {
	var agentName string
	var limit int
	var asJSON bool
	c := &cobra.Command{
		Use:   "history [ID|NAME]",
		Short: "Every time a job (or every job) was due: scheduled, started, ended, status, delivery, cost, session",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withBook(g, func(b *schedule.Book) error {
				var id int64
				if len(args) == 1 {
					var err error
					if id, err = jobID(cmd.Context(), b, args[0]); err != nil {
						return err
					}
				}
				runs, err := b.History(cmd.Context(), agentName, id, limit, 0)
				if err != nil {
					return bookError(err)
				}
				if asJSON {
					if runs == nil {
						runs = []schedule.RunView{}
					}
					return printJSON(g.stdout, runs)
				}
				return printRuns(g, runs, id == 0)
			})
		},
	}
	c.Flags().StringVar(&agentName, "agent", "", "only this agent's jobs")
	c.Flags().IntVar(&limit, "limit", 50, "at most this many, newest first")
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

// printRuns prints runs as a table, newest first.
func printRuns(g *globals, runs []schedule.RunView, withJob bool) error {
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	head := "RUN\tSCHEDULED\tSTARTED\tENDED\tSTATUS\tDELIVERY\tCOST\tSESSION\tREASON"
	if withJob {
		head = "JOB\t" + head
	}
	fmt.Fprintln(tw, head)
	for _, u := range runs {
		status := u.Status
		if u.Attempt > 1 {
			status += fmt.Sprintf(" (attempt %d)", u.Attempt)
		}
		if u.Cause == schedule.CauseManual || u.Cause == schedule.CauseCatchUp {
			status += " " + u.Cause
		}
		started := "-"
		if u.Started != nil {
			started = u.Started.Local().Format("15:04:05")
			if u.Late != "" {
				started += " (" + u.Late + " late)"
			}
		}
		ended := "-"
		if u.Ended != nil {
			ended = u.Ended.Local().Format("15:04:05")
		}
		delivery := u.Delivery
		if u.DeliveryError != "" && u.Delivery != schedule.DeliveryDelivered {
			delivery += ": " + oneLine(u.DeliveryError, 60)
		}
		reason := oneLine(u.Reason, 100)
		if reason == "" && u.Answer != "" {
			reason = "“" + oneLine(u.Answer, 60) + "”"
		}
		row := fmt.Sprintf("%d\t%s\t%s\t%s\t%s\t%s\t$%.4f\t%s\t%s", u.ID, u.Slot.Local().Format("2006-01-02 15:04"), started, ended,
			status, delivery, u.CostUSD, orDash(u.Session), reason)
		if withJob {
			row = fmt.Sprintf("%d %s\t", u.Schedule, oneLine(u.Title, 30)) + row
		}
		fmt.Fprintln(tw, row)
	}
	return tw.Flush()
}

// noServe says, when no den serve runs on the data dir, that jobs run
// only while one does.
func (g *globals) noServe() {
	if serving, _ := daemon.Serving(DataDir(g.dataDir)); !serving {
		fmt.Fprintln(g.stderr, "den: den serve is not running: jobs run while it does (when it starts, each job's misfire policy decides what to do with the times it missed)")
	}
}

func when(t *time.Time) string {
	if t == nil {
		return "-"
	}
	l := t.Local()
	if l.Year() != time.Now().Year() {
		return l.Format("2006-01-02 15:04:05")
	}
	return l.Format("Mon Jan 2 15:04:05")
}

func lastRun(u *schedule.RunView) string {
	if u == nil {
		return "-"
	}
	s := u.Status
	if u.Ended != nil {
		s += " " + u.Ended.Local().Format("Jan 2 15:04")
	}
	if u.Delivery == schedule.DeliveryFailed {
		s += " (not delivered)"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func parens(s string) string {
	if s == "" {
		return "(made at its first run)"
	}
	return "(" + s + ")"
}
