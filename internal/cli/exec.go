package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/egress"
	"den.dev/den/internal/event"
	"den.dev/den/internal/hostsvc"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/rootfs"
	"den.dev/den/internal/session"
	"den.dev/den/internal/store"
)

// computerFlags are the flags that choose and shape an agent's computer.
type computerFlags struct {
	agent   string
	session string
	rootfs  string
	network string
	mounts  []string
	timeout time.Duration
}

func (f *computerFlags) add(c *cobra.Command, full bool) {
	c.Flags().StringVar(&f.agent, "agent", "default", "agent whose computer to use")
	c.Flags().StringVar(&f.session, "session", "default", "session (its own /workspace and den folders)")
	if !full {
		return
	}
	c.Flags().StringVar(&f.rootfs, "rootfs", "", "source of a new computer: alpine[:VERSION], debian[:SUITE], ubuntu[:SUITE], tar:PATH, dir:PATH, busybox")
	c.Flags().StringVar(&f.network, "network", "", "network policy: on or off (default from config, else on)")
	c.Flags().StringArrayVar(&f.mounts, "mount", nil, "bind a host folder: HOST:GUEST[:ro] (repeatable)")
}

// open provisions the agent's computer if needed and returns the
// session options from config and flags.
func (f *computerFlags) open(ctx context.Context, g *globals) (*computer.Computer, computer.SessionOptions, error) {
	var o computer.SessionOptions
	m, cfg, err := g.manager()
	if err != nil {
		return nil, o, err
	}
	c, err := m.Computer(f.agent)
	if err != nil {
		return nil, o, usageError{err}
	}
	// den run and den chat name sessions by id; den exec and den sh by
	// a name of the user's.
	if f.session != "" {
		if err := computer.ValidName("session", f.session); err != nil {
			return nil, o, usageError{err}
		}
	}
	ac := cfg.Agent(f.agent)
	o, err = sessionOptions(ac, f)
	if err != nil {
		return nil, o, err
	}
	for _, w := range computer.MountWarnings(o.Mounts) {
		fmt.Fprintln(g.stderr, "den: warning:", w)
	}
	srcText, explicit := f.rootfs, f.rootfs != ""
	if !explicit && ac.Rootfs != "" {
		srcText, explicit = ac.Rootfs, true
	}
	src := rootfs.DefaultSource()
	if explicit {
		if src, err = rootfs.ParseSource(srcText); err != nil {
			return nil, o, usageError{err}
		}
	}
	// Progress of provisioning, and of giving an older computer's files
	// to its own ids.
	m.RootfsOptions.Progress = progressPrinter(g.stderr)
	if _, ok, _ := c.Info(); !ok {
		fmt.Fprintf(g.stderr, "den: creating the computer of agent %s from %s\n", f.agent, src)
		info, err := c.Ensure(ctx, src, explicit)
		if err != nil {
			return nil, o, err
		}
		if err := c.RestoreHome(); err != nil {
			return nil, o, err
		}
		fmt.Fprintf(g.stderr, "den: computer ready: %s %s (%s)\n", info.Distro, info.Version, info.Source)
	} else if _, err := c.Ensure(ctx, src, f.rootfs != ""); err != nil {
		return nil, o, err
	}
	return c, o, nil
}

// undoPolicy is an agent's checkpoint policy: its config, else den's
// defaults.
func undoPolicy(ac config.Agent) (computer.Undo, error) {
	u := computer.DefaultUndo()
	budget, off, err := ac.CheckpointBudget()
	if err != nil {
		return u, err
	}
	if off {
		return computer.Undo{}, nil
	}
	if budget > 0 {
		u.Budget = budget
	}
	if ac.CheckpointsKeep > 0 {
		u.Keep = ac.CheckpointsKeep
	}
	return u, nil
}

func sessionOptions(ac config.Agent, f *computerFlags) (computer.SessionOptions, error) {
	o := computer.SessionOptions{Network: true, Timeout: f.timeout}
	pol, err := ac.EgressPolicy()
	if err != nil {
		return o, usageError{err}
	}
	switch f.network {
	case "":
	case "on":
		if pol.Mode == egress.Off {
			pol.Mode = egress.Open
		}
	case "off":
		pol.Mode = egress.Off
	default:
		return o, usageError{fmt.Errorf("--network %q: want on or off", f.network)}
	}
	o.Network, o.Egress.Policy = pol.Mode != egress.Off, pol
	for _, s := range append(append([]string(nil), ac.Mounts...), f.mounts...) {
		b, err := sandbox.ParseMount(s)
		if err != nil {
			return o, usageError{err}
		}
		o.Mounts = append(o.Mounts, b)
	}
	o.Limits = computer.DefaultLimits()
	for _, l := range []struct {
		v   string
		dst *int64
	}{{ac.Memory, &o.Limits.MemoryBytes}, {ac.Tmp, &o.Limits.TmpBytes}, {ac.Disk, &o.Limits.DiskBytes}} {
		n, set, err := config.ParseLimit(l.v)
		if err != nil {
			return o, err
		}
		if set {
			*l.dst = n
		}
	}
	if ac.Pids != 0 {
		o.Limits.Pids = ac.Pids
	}
	u, err := undoPolicy(ac)
	if err != nil {
		return o, err
	}
	o.Undo = u
	if ac.CPUWeight != 0 {
		o.Limits.CPUWeight = ac.CPUWeight
	}
	return o, nil
}

// DefaultPids is computer.DefaultPids.
const DefaultPids = computer.DefaultPids

// progressPrinter renders provisioning progress on w: a line per stage,
// and byte counts rewritten in place on a terminal.
func progressPrinter(w io.Writer) func(rootfs.Progress) {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	var mu sync.Mutex
	inPlace := false
	return func(p rootfs.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if p.Total > 0 {
			line := fmt.Sprintf("den: %s: %s %s / %s (%d%%)", p.Stage, p.Message, config.FormatBytes(p.Done), config.FormatBytes(p.Total), p.Done*100/p.Total)
			if tty {
				fmt.Fprintf(w, "\r\033[K%s", line)
				inPlace = p.Done < p.Total
				if !inPlace {
					fmt.Fprintln(w)
				}
				return
			}
			if p.Done == p.Total {
				fmt.Fprintln(w, line)
			}
			return
		}
		if inPlace {
			fmt.Fprintln(w)
			inPlace = false
		}
		fmt.Fprintf(w, "den: %s: %s\n", p.Stage, strings.TrimSpace(p.Message))
	}
}

func execCmd(g *globals) *cobra.Command {
	f := &computerFlags{}
	c := &cobra.Command{
		Use:   "exec [flags] -- COMMAND [ARG...]",
		Short: "Run one command in an agent's computer",
		Long: `Run one command in an agent's computer, streaming its output, and exit
with its exit code (124 when it timed out, 130 when interrupted, 125 when
den itself failed). The computer is created on first use.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.timeout < 0 || f.timeout > sandbox.MaxTimeout {
				return usageError{fmt.Errorf("--timeout %v: want a duration up to %v", f.timeout, sandbox.MaxTimeout)}
			}
			ctx := cmd.Context()
			comp, o, stop, err := f.openWithHost(ctx, g)
			if err != nil {
				return err
			}
			defer stop()
			sess, err := comp.Start(ctx, f.session, o)
			if err != nil {
				return err
			}
			defer sess.Close()
			var outMu sync.Mutex
			res, err := sess.ExecStream(ctx, sandbox.Command{
				Script:    "exec " + sandbox.QuoteArgs(args),
				Timeout:   f.timeout,
				NoOffload: true,
				RawOutput: true,
				OnOutput: func(stream, text string) {
					outMu.Lock()
					defer outMu.Unlock()
					if stream == "stdout" {
						io.WriteString(g.stdout, text)
					} else {
						io.WriteString(g.stderr, text)
					}
				},
			}, g.stdin)
			if err != nil {
				return err
			}
			if res.TimedOut || res.Canceled {
				fmt.Fprintf(g.stderr, "den: %s\n", res.Note)
			}
			if res.ExitCode != 0 {
				return exitError{res.ExitCode}
			}
			return nil
		},
	}
	f.add(c, true)
	c.Flags().DurationVar(&f.timeout, "timeout", 0, "end the command's whole process tree after this long (default 10m)")
	return c
}

// openWithHost is open, with the computer's host commands wired; stop
// releases them.
func (f *computerFlags) openWithHost(ctx context.Context, g *globals) (*computer.Computer, computer.SessionOptions, func(), error) {
	comp, o, err := f.open(ctx, g)
	if err != nil {
		return nil, o, nil, err
	}
	stop, err := g.withHostCommands(ctx, comp, f.agent, f.session, &o)
	if err != nil {
		return nil, o, nil, err
	}
	return comp, o, stop, nil
}

// withHostCommands gives a computer started by den exec or den sh the
// host commands: events are told on stderr. The terminal belongs to the
// command, so nothing is asked on it: with a terminal, an approval waits
// for den approve from another one; without, asks are denied.
func (g *globals) withHostCommands(ctx context.Context, comp *computer.Computer, agentName, sessionID string, o *computer.SessionOptions) (func(), error) {
	cfg, err := g.config()
	if err != nil {
		return nil, err
	}
	st, err := g.openStore()
	if err != nil {
		return nil, err
	}
	if err := st.EnsureAgent(ctx, agentName); err != nil {
		st.Close()
		return nil, err
	}
	faces := session.Faces{Mode: permission.DenyAsks, Emit: func(e any) {
		switch e := e.(type) {
		case *hostsvc.NotifyEvent:
			fmt.Fprintf(g.stderr, "den: notification: %s: %s\n", permission.Printable(e.Title), permission.PrintableLines(e.Message))
		case *hostsvc.OpenEvent:
			fmt.Fprintf(g.stderr, "den: open %s\n", permission.Printable(e.Target))
		case *hostsvc.SpeechEvent:
			fmt.Fprintf(g.stderr, "den: speech in %s\n", e.Path)
		case *permission.ApprovalRequest:
			fmt.Fprintf(g.stderr, "den: approval needed: %s (den approve %s)\n", e.Question(), e.ID)
		}
	}}
	if isTerminal(g.stdin) {
		faces.Mode = permission.Wait
	}
	host, gate, _, stopHost, err := session.HostCommands(DataDir(g.dataDir), cfg, st, comp, agentName, sessionID, *o, faces, nil, nil)
	if err != nil {
		st.Close()
		return nil, err
	}
	o.Host = host
	// The computer's connections go to den's log (den network log) as
	// events of no session, and refused ones to stderr too.
	o.Egress.Ask = session.EgressAsk(gate, sessionID)
	o.Egress.Record = func(rec egress.Record) {
		if !rec.Allowed {
			fmt.Fprintf(g.stderr, "%s\n", egress.Denied(rec))
		}
		if typ, data, ok := event.Encode(&rec); ok {
			st.AddEvents(context.Background(), []store.Event{{Type: typ, Data: data}})
		}
	}
	return func() { stopHost(); st.Close() }, nil
}
