package cli

import (
	"bufio"
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
	"den.dev/den/internal/agent/ctxwin"
	"den.dev/den/internal/hostsvc"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/permission"
)

const chatHelp = `Type a message and press Enter. Ctrl-C stops the agent's current turn
(twice at the prompt quits). Commands:
  /new              start a new session
  /sessions         list this agent's recent sessions
  /model [REF]      show or change the model (provider/model, a group, or a chain)
  /compact          summarize the older part of the conversation now
  /help             this text
  /exit             quit
`

func chatCmd(g *globals) *cobra.Command {
	f := &runFlags{}
	c := &cobra.Command{
		Use:   "chat",
		Short: "Chat with the agent in the terminal",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return chat(cmd.Context(), g, f)
		},
	}
	c.Flags().StringVar(&f.agent, "agent", "default", "agent to chat with")
	c.Flags().StringVar(&f.sessionID, "session", "", "continue this session")
	c.Flags().BoolVar(&f.cont, "continue", false, "continue the agent's latest session")
	c.Flags().StringVar(&f.model, "model", "", "model ref, group, or comma-separated chain")
	c.Flags().StringVar(&f.thinking, "thinking", "", "thinking level: off, low, medium, high")
	c.Flags().IntVar(&f.maxTurns, "max-turns", agent.DefaultMaxTurns, "stop a reply after this many model turns")
	c.Flags().StringVar(&f.rootfs, "rootfs", "", "source of a new computer")
	c.Flags().StringVar(&f.network, "network", "", "network policy: on or off")
	c.Flags().StringArrayVar(&f.mounts, "mount", nil, "bind a host folder: HOST:GUEST[:ro] (repeatable)")
	c.Flags().BoolVar(&f.wait, "wait", false, "when another den runs a turn in the session, wait for it instead of stopping")
	return c
}

// chatView prints a run's events for a person: text as it streams, each
// tool call and result on a short line of its own.
type chatView struct {
	w     io.Writer
	color bool
	mu    sync.Mutex
	mid   bool // in the middle of a line of text
	md    markdown
	ctx   ctxwin.Use // the last request's context use
	cost  float64    // this session's spending so far in this chat
}

func (v *chatView) dim(s string) string {
	if v.color {
		return "\033[2m" + s + "\033[0m"
	}
	return s
}

func (v *chatView) emit(e agent.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch e := e.(type) {
	case *agent.TextEvent:
		if v.color {
			io.WriteString(v.w, v.md.feed(e.Text))
		} else {
			io.WriteString(v.w, e.Text)
		}
		v.mid = !strings.HasSuffix(e.Text, "\n")
	case *agent.ToolCallEvent:
		v.newline()
		fmt.Fprintf(v.w, "%s\n", v.dim("  ⚙ "+e.Name+" "+oneLine(callSummary(e), 100)))
	case *agent.ToolResultEvent:
		mark := "  ✓ "
		if e.IsError {
			mark = "  ✗ "
		}
		fmt.Fprintf(v.w, "%s\n", v.dim(mark+oneLine(e.Output, 100)))
	case *agent.UsageEvent:
		if e.Context.Window > 0 {
			v.ctx = e.Context
		}
		v.cost += e.CostUSD
	case *agent.CompactionEvent:
		v.newline()
		fmt.Fprintf(v.w, "%s\n", v.dim(fmt.Sprintf("  ─ %d earlier messages summarized to fit the context ─", e.Compacted)))
	case *agent.RetryEvent:
		v.newline()
		fmt.Fprintf(v.w, "%s\n", v.dim(fmt.Sprintf("  ↻ retrying in %v (%s)", e.Delay.Round(time.Millisecond), oneLine(e.Reason, 80))))
	case *agent.SessionEvent:
		fmt.Fprintf(v.w, "%s\n", v.dim("session "+e.SessionID+" · agent "+e.Agent))
	case *agent.WarningEvent:
		v.newline()
		fmt.Fprintf(v.w, "  ! %s\n", e.Message)
	case *agent.QueuedEvent:
		v.newline()
		fmt.Fprintf(v.w, "%s\n", v.dim(fmt.Sprintf("  ✉ %d queued message(s) from other sessions joined the conversation", e.Delivered)))
	}
}

func (v *chatView) newline() {
	if v.color {
		io.WriteString(v.w, v.md.flush())
	}
	if v.mid {
		io.WriteString(v.w, "\n")
		v.mid = false
	}
}

// callSummary shows the title the model gave, else the command or path.
func callSummary(e *agent.ToolCallEvent) string {
	var in map[string]any
	if err := json.Unmarshal(e.Input, &in); err != nil {
		return string(e.Input)
	}
	for _, k := range []string{"tool_title", "command", "path"} {
		if s, ok := in[k].(string); ok && s != "" {
			return s
		}
	}
	return string(e.Input)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func chat(ctx context.Context, g *globals, f *runFlags) error {
	color := false
	if out, ok := g.stdout.(*os.File); ok {
		color = term.IsTerminal(int(out.Fd()))
	}
	view := &chatView{w: g.stdout, color: color}
	// One goroutine reads lines; the prompt, den-ask and approvals take
	// them from it, so a question can give up when answered elsewhere.
	readLine, stopReading := lineReader(g.stdin)
	defer stopReading()
	faces := hostFaces{mode: permission.Wait}
	faces.emit = func(e any) {
		view.mu.Lock()
		defer view.mu.Unlock()
		view.newline()
		switch e := e.(type) {
		case *hostsvc.NotifyEvent:
			fmt.Fprintf(view.w, "  🔔 %s: %s\n", permission.Printable(e.Title), permission.PrintableLines(e.Message))
		case *hostsvc.OpenEvent:
			fmt.Fprintf(view.w, "  ↗ open %s\n", permission.Printable(e.Target))
		case *hostsvc.SpeechEvent:
			fmt.Fprintf(view.w, "  🔊 %s\n", e.Path)
		}
	}
	faces.ask, faces.prompt = terminalQuestions(view.w, &view.mu, view.newline, readLine)
	r, err := newRunner(ctx, g, f, view.emit, faces, "")
	if err != nil {
		return err
	}
	defer func() { r.close() }()
	fmt.Fprintf(g.stdout, "den chat · %s · /help for commands\n", r.targets[0].Ref)

	// Ctrl-C stops the current turn; at the prompt, a second one quits.
	var mu sync.Mutex
	var cancelTurn context.CancelFunc
	interrupts := 0
	g.mu.Lock()
	g.onInterrupt = func() bool {
		mu.Lock()
		defer mu.Unlock()
		if cancelTurn != nil {
			cancelTurn()
			return true
		}
		interrupts++
		if interrupts >= 2 {
			return false
		}
		fmt.Fprint(g.stdout, "\n(press Ctrl-C again or type /exit to quit)\n> ")
		return true
	}
	g.mu.Unlock()

	titled := r.sess.Title != ""
	for {
		fmt.Fprint(g.stdout, "> ")
		line, ok := readLine(ctx)
		if !ok {
			fmt.Fprintln(g.stdout)
			return nil
		}
		mu.Lock()
		interrupts = 0
		mu.Unlock()
		switch {
		case line == "":
			continue
		case line == "/exit" || line == "/quit":
			return nil
		case line == "/help":
			io.WriteString(g.stdout, chatHelp)
			continue
		case line == "/new":
			r.close()
			f.sessionID, f.cont = "", false
			if r, err = newRunner(ctx, g, f, view.emit, faces, ""); err != nil {
				return err
			}
			titled = false
			continue
		case line == "/compact":
			n, err := r.compact(ctx)
			switch {
			case err != nil:
				fmt.Fprintln(g.stdout, "compact:", err)
			default:
				fmt.Fprintf(g.stdout, "%s\n", view.dim(fmt.Sprintf("%d messages summarized", n)))
			}
			continue
		case line == "/sessions":
			list, err := r.st.ListSessions(ctx, f.agent, 10)
			if err != nil {
				fmt.Fprintln(g.stdout, "error:", err)
			}
			for _, s := range list {
				fmt.Fprintf(g.stdout, "  %s  %s  %s\n", s.ID, s.Updated.Local().Format("01-02 15:04"), s.Title)
			}
			continue
		case line == "/model" || strings.HasPrefix(line, "/model "):
			ref := strings.TrimSpace(strings.TrimPrefix(line, "/model"))
			if ref == "" {
				fmt.Fprintln(g.stdout, "model:", r.targets[0].Ref)
				continue
			}
			old := f.model
			f.model, f.sessionID, f.cont = ref, r.sess.ID, false
			r.close()
			if r, err = newRunner(ctx, g, f, view.emit, faces, ""); err != nil {
				fmt.Fprintln(g.stdout, "error:", err)
				f.model = old
				if r, err = newRunner(ctx, g, f, view.emit, faces, ""); err != nil {
					return err
				}
			}
			continue
		case strings.HasPrefix(line, "/"):
			fmt.Fprintln(g.stdout, "unknown command; /help lists them")
			continue
		}
		if !titled {
			if err := r.st.SetTitle(ctx, r.sess.ID, title(line)); err != nil {
				fmt.Fprintln(g.stderr, "den: the session's title was not saved:", err)
			}
			titled = true
		}
		turnCtx, cancel := context.WithCancel(ctx)
		mu.Lock()
		cancelTurn = cancel
		mu.Unlock()
		res, err := r.send(turnCtx, line)
		mu.Lock()
		cancelTurn = nil
		mu.Unlock()
		cancel()
		view.newline()
		switch {
		case errors.Is(err, agent.ErrCanceled):
			fmt.Fprintln(g.stdout, view.dim("(stopped)"))
		case err != nil:
			fmt.Fprintln(g.stdout, "error:", err)
		case res.Stop != llm.StopEndTurn:
			fmt.Fprintln(g.stdout, view.dim("(stopped: "+string(res.Stop)+")"))
		}
		if u := view.ctx; u.Window > 0 {
			fmt.Fprintln(g.stdout, view.dim(fmt.Sprintf("context %dk/%dk (%.0f%%) · $%.4f", u.Estimated/1000, u.Window/1000, u.Percent, view.cost)))
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// lineReader reads lines from r in a goroutine of its own; the function
// it returns waits for the next one, or gives up when ctx ends (false
// at the end of input too).
//
// stop ends the reading goroutine and waits for it; the read func then
// reports the end of input.
func lineReader(r io.Reader) (read func(ctx context.Context) (string, bool), stop func()) {
	in, interrupt := interruptible(r)
	lines := make(chan string)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(lines)
		br := bufio.NewReader(in)
		for {
			line, err := br.ReadString('\n')
			if line != "" || err == nil {
				select {
				case lines <- line:
				case <-quit:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	read = func(ctx context.Context) (string, bool) {
		select {
		case l, ok := <-lines:
			return strings.TrimSpace(l), ok
		case <-ctx.Done():
			return "", false
		}
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			close(quit)
			interrupt()
			<-done
		})
	}
	return read, stop
}

// terminalQuestions asks den-ask questions and approvals on a terminal.
func terminalQuestions(w io.Writer, mu *sync.Mutex, newline func(), readLine func(context.Context) (string, bool)) (
	func(ctx context.Context, q string, choices []string) (string, error),
	func(ctx context.Context, a *permission.ApprovalRequest) (permission.Answer, error)) {
	ask := func(ctx context.Context, q string, choices []string) (string, error) {
		mu.Lock()
		newline()
		if len(choices) > 0 {
			fmt.Fprintf(w, "? %s [%s] ", q, strings.Join(choices, "/"))
		} else {
			fmt.Fprintf(w, "? %s ", q)
		}
		mu.Unlock()
		l, ok := readLine(ctx)
		if !ok {
			return "", context.Canceled
		}
		return l, nil
	}
	prompt := func(ctx context.Context, a *permission.ApprovalRequest) (permission.Answer, error) {
		mu.Lock()
		newline()
		fmt.Fprintf(w, "! %s\n  allow? [y]es once / [s]ession: %s, for this session / [a]lways: %s, in every session / [N]o\n  (or den approve %s elsewhere; den approvals show %s prints it all): ", a.Question(), a.Covers, a.Covers, a.ID, a.ID)
		mu.Unlock()
		l, ok := readLine(ctx)
		if !ok {
			return permission.Answer{}, context.Canceled
		}
		switch strings.ToLower(l) {
		case "y", "yes":
			return permission.Answer{Approve: true, Scope: permission.Once}, nil
		case "s", "session":
			return permission.Answer{Approve: true, Scope: permission.Session}, nil
		case "a", "always":
			return permission.Answer{Approve: true, Scope: permission.Always}, nil
		}
		return permission.Answer{Approve: false}, nil
	}
	return ask, prompt
}
