package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/daemon"
	"den.dev/den/internal/event"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/models"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/session"
	"den.dev/den/internal/store"
)

// runFlags are den run's flags beyond the computer's.
type runFlags struct {
	computerFlags
	json      bool
	cont      bool
	model     string
	thinking  string
	maxTurns  int
	yes       bool
	sessionID string
	budget    string
	sbudget   string
	stall     time.Duration
	wait      bool
	verb      string // the command: run or chat
}

func runCmd(g *globals) *cobra.Command {
	f := &runFlags{verb: "run"}
	c := &cobra.Command{
		Use:   "run [flags] [PROMPT | -]",
		Short: "Run the agent on one prompt, headless",
		Long: `Send one prompt to the agent and let it work in its computer until it ends
its turn. Without --json, prints the final answer, each den:// URL in it
followed by the file's path on this machine; with --json, prints one
JSON object per line for every event (session, status, message, text,
thinking, tool_call, tool_result, usage, model, retry, compaction,
approval_request, approval_resolved, warning, queued, error, done; see
docs/agent.md).
The prompt is the arguments, or standard
input when it is "-" or absent. Exits 0 when the model ended its turn
itself, 1 otherwise (130 when interrupted).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			prompt, err := readPrompt(args, g.stdin)
			if err != nil {
				return err
			}
			return runPrompt(cmd.Context(), g, f, prompt)
		},
	}
	c.Flags().BoolVar(&f.json, "json", false, "print events as JSON lines")
	c.Flags().StringVar(&f.agent, "agent", "default", "agent to run")
	c.Flags().StringVar(&f.sessionID, "session", "", "continue this session")
	c.Flags().BoolVar(&f.cont, "continue", false, "continue the agent's latest session")
	c.Flags().StringVar(&f.model, "model", "", "model ref (provider/model or a group), or a comma-separated fallback chain")
	c.Flags().StringVar(&f.thinking, "thinking", "", "thinking level: off, low, medium, high")
	c.Flags().IntVar(&f.maxTurns, "max-turns", agent.DefaultMaxTurns, "stop after this many model turns")
	c.Flags().BoolVar(&f.yes, "yes", false, "approve what would otherwise need a person's approval")
	c.Flags().StringVar(&f.budget, "budget", "", `stop before this run spends more: dollars ("0.50", "$2") or tokens ("200k tokens")`)
	c.Flags().StringVar(&f.sbudget, "session-budget", "", "the same limit for the whole session, this run included")
	c.Flags().DurationVar(&f.stall, "stall-timeout", 0, "retry a model stream that sends nothing for this long (default 2m)")
	c.Flags().BoolVar(&f.wait, "wait", false, "when another den runs a turn in the session, wait for it instead of stopping")
	c.Flags().StringVar(&f.rootfs, "rootfs", "", "source of a new computer: alpine[:VERSION], debian[:SUITE], ubuntu[:SUITE], tar:PATH, dir:PATH, busybox")
	c.Flags().StringVar(&f.network, "network", "", "network policy: on or off")
	c.Flags().StringArrayVar(&f.mounts, "mount", nil, "bind a host folder: HOST:GUEST[:ro] (repeatable)")
	return c
}

// readPrompt takes the prompt from the arguments, or from stdin for "-"
// or when there are none.
func readPrompt(args []string, stdin io.Reader) (string, error) {
	if len(args) > 0 && !(len(args) == 1 && args[0] == "-") {
		return strings.Join(args, " "), nil
	}
	if f, ok := stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) && len(args) == 0 {
		return "", usageError{errors.New("no prompt: give it as an argument or on standard input")}
	}
	b, err := io.ReadAll(io.LimitReader(stdin, 16<<20))
	if err != nil {
		return "", fmt.Errorf("read prompt: %w", err)
	}
	if strings.TrimSpace(string(b)) == "" {
		return "", usageError{errors.New("empty prompt")}
	}
	return string(b), nil
}

func runPrompt(ctx context.Context, g *globals, f *runFlags, prompt string) error {
	opts, err := f.turnOptions()
	if err != nil {
		return err
	}
	var render func(store.Event)
	if f.json {
		render = jsonLines(g.stdout)
	} else {
		render = func(e store.Event) {
			if e.Type == "approval_request" {
				var a struct{ ID, Question string }
				json.Unmarshal(e.Data, &a)
				fmt.Fprintf(g.stderr, "den: approval needed: %s\n     answer with: den approve %s   (or den deny %s)\n", a.Question, a.ID, a.ID)
			}
		}
	}
	var faces session.Faces
	switch {
	case f.yes:
		opts.Approvals = permission.AutoApprove
	case isTerminal(g.stdin):
		// A person is at the terminal: den-ask and approvals ask there
		// (an approval can also come from den approve, or any face of a
		// den serve on this data dir).
		var mu sync.Mutex
		readLine, stopReading := lineReader(g.stdin)
		defer stopReading()
		faces.Ask, faces.Prompt = terminalQuestions(g.stderr, &mu, func() {}, readLine)
	case isTerminal(g.stderr):
	default:
		// Nobody at this terminal: a den serve on the same data dir can
		// still ask a person (its faces, a phone); without one, deny.
		if serving, _ := daemon.Serving(DataDir(g.dataDir)); !serving {
			opts.Approvals = permission.DenyAsks
		}
	}
	rt, st, sess, err := openRuntime(ctx, g, f, faces)
	if err != nil {
		return err
	}
	defer st.Close()
	defer rt.Close()
	out, err := follow(ctx, rt, sess.ID, session.Message{Text: prompt}, opts, render)
	var usage usageError
	switch {
	case err != nil && f.json && !errors.As(err, &usage):
		// Not an event of the session (none was stored): the same line,
		// without an id.
		line, _ := json.Marshal(map[string]string{"type": "error", "message": err.Error()})
		fmt.Fprintf(g.stdout, "%s\n", line)
		return exitError{1}
	case err != nil && !errors.As(err, &usage):
		fmt.Fprintln(g.stderr, "den:", err)
		return exitError{1}
	case err != nil:
		return err
	}
	switch {
	case errors.Is(out.Err, agent.ErrCanceled):
		return exitError{130}
	case errors.Is(out.Err, session.ErrBadOptions):
		return usageError{out.Err}
	case out.Err != nil:
		if !f.json {
			fmt.Fprintln(g.stderr, "den:", out.Err)
		}
		return exitError{1}
	}
	if !f.json {
		fmt.Fprintln(g.stdout, withHostPaths(strings.TrimRight(out.Result.Text, "\n"), hostPaths(ctx, rt, sess.ID)))
	}
	if out.Result.Stop != llm.StopEndTurn {
		return exitError{1}
	}
	return nil
}

// turnOptions checks the flags that shape a run.
func (f *runFlags) turnOptions() (session.TurnOptions, error) {
	var o session.TurnOptions
	if f.maxTurns <= 0 {
		return o, usageError{fmt.Errorf("--max-turns %d: want a positive number", f.maxTurns)}
	}
	thinking, err := parseThinking(f.thinking)
	if err != nil {
		return o, err
	}
	if f.cont && f.sessionID != "" {
		return o, usageError{errors.New("--session and --continue exclude each other")}
	}
	if f.stall < 0 {
		return o, usageError{fmt.Errorf("--stall-timeout %v: want a positive duration", f.stall)}
	}
	o = session.TurnOptions{Model: f.model, Thinking: thinking, MaxTurns: f.maxTurns, Budget: f.budget,
		SessionBudget: f.sbudget, Stall: f.stall, IfBusy: session.Fail}
	if f.wait {
		o.IfBusy = session.Wait
	}
	return o, nil
}

// openRuntime starts this command's runtime (computers opened with f's
// flags) on the store, and finds or creates the session f names. The
// caller closes the runtime, then the store.
func openRuntime(ctx context.Context, g *globals, f *runFlags, faces session.Faces) (*session.Runtime, *store.Store, store.Session, error) {
	cfg, err := g.config()
	if err != nil {
		return nil, nil, store.Session{}, err
	}
	if err := computer.ValidName("agent", f.agent); err != nil {
		return nil, nil, store.Session{}, usageError{err}
	}
	st, err := g.openStore()
	if err != nil {
		return nil, nil, store.Session{}, err
	}
	sess, err := chooseSession(ctx, st, f, cfg)
	if err == nil && sess.ID == "" {
		sess, err = newSession(ctx, st, f.agent, f.model, cfg)
	}
	if err != nil {
		st.Close()
		return nil, nil, store.Session{}, err
	}
	flags := f.computerFlags
	rt, err := session.New(session.Options{
		Store: st, DataDir: DataDir(g.dataDir), Config: cfg, Holder: "den " + f.verb,
		Computer: func(ctx context.Context, agentName string) (*computer.Computer, computer.SessionOptions, error) {
			cf := flags
			cf.agent = agentName
			return cf.open(ctx, g)
		},
		Ask: faces.Ask, Prompt: faces.Prompt, Version: Version,
	})
	if err != nil {
		st.Close()
		return nil, nil, store.Session{}, err
	}
	return rt, st, sess, nil
}

// newSession creates a session of agentName, checking the model it
// will use resolves.
func newSession(ctx context.Context, st *store.Store, agentName, model string, cfg *config.Config) (store.Session, error) {
	if err := st.EnsureAgent(ctx, agentName); err != nil {
		return store.Session{}, err
	}
	res := &models.Resolver{Config: cfg}
	ref := firstNonEmpty(model, cfg.Agent(agentName).Model)
	var err error
	if ref == "" {
		if ref, err = res.Default(); err != nil {
			return store.Session{}, usageError{err}
		}
	}
	if _, err := res.Resolve(ref); err != nil {
		return store.Session{}, usageError{err}
	}
	return st.CreateSession(ctx, agentName, ref)
}

// follow sends m to the session and renders the session's events until
// the runs it started have ended, then returns how they ended. Ctrl-C
// (ctx) stops the running turn.
func follow(ctx context.Context, rt *session.Runtime, sessionID string, m session.Message, opts session.TurnOptions,
	render func(store.Event)) (session.Outcome, error) {
	after, err := rt.LastEventID(ctx)
	if err != nil {
		return session.Outcome{}, err
	}
	sub := rt.Subscribe(sessionID, after, nil)
	defer sub.Close()
	sent, err := rt.Send(ctx, sessionID, m, opts)
	switch {
	case errors.Is(err, store.ErrSessionBusy):
		return session.Outcome{}, fmt.Errorf("session %s is in use (%v); run again when it is done, or add --wait to wait for it", sessionID, err)
	case errors.Is(err, session.ErrBadOptions):
		return session.Outcome{}, usageError{err}
	case err != nil:
		return session.Outcome{}, err
	}
	if sent.Done == nil {
		return session.Outcome{}, fmt.Errorf("session %s is run by another den: the message is queued as %s for its next turn", sessionID, sent.MessageID)
	}
	ended, stop := context.WithCancel(context.Background())
	var out session.Outcome
	var wg sync.WaitGroup
	wg.Go(func() {
		defer stop()
		select {
		case out = <-sent.Done:
		case <-ctx.Done():
			rt.Cancel(sessionID)
			out = <-sent.Done
		}
	})
	for {
		e, err := sub.Next(ended)
		if err != nil {
			break
		}
		render(e)
	}
	wg.Wait()
	// The last events of the run may still be on their way.
	rt.Sync()
	for {
		e, ok, err := sub.Poll(context.Background())
		if err != nil || !ok {
			break
		}
		render(e)
	}
	return out, nil
}

// jsonLines renders events as den run --json prints them: one JSON
// object per line.
func jsonLines(w io.Writer) func(store.Event) {
	return func(e store.Event) {
		b, err := event.Marshal(e)
		if err != nil {
			return
		}
		w.Write(append(b, '\n'))
	}
}

// chooseSession finds the session to continue, or returns a zero one
// for a new session.
func chooseSession(ctx context.Context, st *store.Store, f *runFlags, cfg *config.Config) (store.Session, error) {
	switch {
	case f.sessionID != "":
		s, err := st.GetSession(ctx, f.sessionID)
		if errors.Is(err, store.ErrNotFound) {
			return s, usageError{fmt.Errorf("no session %q", f.sessionID)}
		}
		if err == nil && s.Agent != f.agent {
			f.agent = s.Agent
		}
		return s, err
	case f.cont:
		s, err := st.LatestSession(ctx, f.agent)
		if errors.Is(err, store.ErrNotFound) {
			return s, usageError{fmt.Errorf("agent %s has no session to continue", f.agent)}
		}
		return s, err
	}
	return store.Session{}, nil
}

func parseThinking(s string) (llm.ThinkingLevel, error) {
	switch llm.ThinkingLevel(s) {
	case "":
		return "", nil
	case llm.ThinkingOff, llm.ThinkingLow, llm.ThinkingMedium, llm.ThinkingHigh, llm.ThinkingMax:
		return llm.ThinkingLevel(s), nil
	}
	return "", usageError{fmt.Errorf("--thinking %q: want off, low, medium or high", s)}
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}
