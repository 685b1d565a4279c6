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
	"den.dev/den/internal/llm"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/session"
	"den.dev/den/internal/store"
)

const chatHelp = `Type a message and press Enter. Ctrl-C stops the agent's current turn
(twice at the prompt quits). Commands:
  /new              start a new session
  /sessions         list this agent's recent sessions
  /model [REF]      show or change the model (provider/model, a group, or a chain)
  /compact          summarize the older part of the conversation now
  /memory [on|off]  turn the agent's memory on or off for this session
  /SKILL [message]  send the message with that skill's instructions (den skills list)
  /SERVER:PROMPT [name=value ...]
                    send an MCP server's prompt (den mcp list; docs/mcp.md)
  /help             this text
  /exit             quit
`

func chatCmd(g *globals) *cobra.Command {
	f := &runFlags{verb: "chat"}
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

// emit shows one event of the session.
func (v *chatView) emit(e store.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	var f struct {
		Text, Name, Output, Message, Reason, Agent, Title, Target, Path, Status, Detail string
		ID                                                                              string
		Input                                                                           json.RawMessage
		IsError                                                                         bool    `json:"is_error"`
		CostUSD                                                                         float64 `json:"cost_usd"`
		ContextTokens                                                                   int     `json:"context_tokens"`
		ContextWindow                                                                   int     `json:"context_window"`
		Compacted                                                                       int
		DelayMS                                                                         int64 `json:"delay_ms"`
		Queued                                                                          bool
		Role                                                                            string
	}
	if json.Unmarshal(e.Data, &f) != nil {
		return
	}
	switch e.Type {
	case "text":
		if v.color {
			io.WriteString(v.w, v.md.feed(f.Text))
		} else {
			io.WriteString(v.w, f.Text)
		}
		v.mid = !strings.HasSuffix(f.Text, "\n")
	case "tool_call":
		v.newline()
		fmt.Fprintf(v.w, "%s\n", v.dim("  ⚙ "+f.Name+" "+oneLine(callSummary(f.Input), 100)))
	case "tool_result":
		mark := "  ✓ "
		if f.IsError {
			mark = "  ✗ "
		}
		fmt.Fprintf(v.w, "%s\n", v.dim(mark+oneLine(f.Output, 100)))
	case "usage":
		if f.ContextWindow > 0 {
			v.ctx = ctxwin.Use{Estimated: f.ContextTokens, Window: f.ContextWindow, Percent: 100 * float64(f.ContextTokens) / float64(f.ContextWindow)}
		}
		v.cost += f.CostUSD
	case "compaction":
		v.newline()
		fmt.Fprintf(v.w, "%s\n", v.dim(fmt.Sprintf("  ─ %d earlier messages summarized to fit the context ─", f.Compacted)))
	case "retry":
		v.newline()
		fmt.Fprintf(v.w, "%s\n", v.dim(fmt.Sprintf("  ↻ retrying in %v (%s)", (time.Duration(f.DelayMS)*time.Millisecond).Round(time.Millisecond), oneLine(f.Reason, 80))))
	case "session":
		fmt.Fprintf(v.w, "%s\n", v.dim("session "+e.Session+" · agent "+f.Agent))
	case "warning":
		v.newline()
		fmt.Fprintf(v.w, "  ! %s\n", f.Message)
	case "message":
		if f.Queued && f.Role == "user" {
			v.newline()
			fmt.Fprintf(v.w, "%s\n", v.dim("  ✉ a queued message joined the conversation"))
		}
	case "notify":
		v.newline()
		fmt.Fprintf(v.w, "  🔔 %s: %s\n", permission.Printable(f.Title), permission.PrintableLines(f.Message))
	case "open":
		v.newline()
		fmt.Fprintf(v.w, "  ↗ open %s\n", permission.Printable(f.Target))
	case "speech":
		v.newline()
		fmt.Fprintf(v.w, "  🔊 %s\n", f.Path)
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
func callSummary(input json.RawMessage) string {
	var in map[string]any
	if err := json.Unmarshal(input, &in); err != nil {
		return string(input)
	}
	for _, k := range []string{"tool_title", "command", "path"} {
		if s, ok := in[k].(string); ok && s != "" {
			return s
		}
	}
	return string(input)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

func chat(ctx context.Context, g *globals, f *runFlags) error {
	opts, err := f.turnOptions()
	if err != nil {
		return err
	}
	color := false
	if out, ok := g.stdout.(*os.File); ok {
		color = term.IsTerminal(int(out.Fd()))
	}
	view := &chatView{w: g.stdout, color: color}
	// One goroutine reads lines; the prompt, den-ask and approvals take
	// them from it, so a question can give up when answered elsewhere.
	readLine, stopReading := lineReader(g.stdin)
	defer stopReading()
	var faces session.Faces
	faces.Ask, faces.Prompt = terminalQuestions(view.w, &view.mu, view.newline, readLine)
	rt, st, sess, err := openRuntime(ctx, g, f, faces)
	if err != nil {
		return err
	}
	defer st.Close()
	defer rt.Close()
	ref, err := rt.ModelRef(sess, f.model)
	if err != nil {
		return usageError{err}
	}
	fmt.Fprintf(g.stdout, "den chat · %s · /help for commands\n", ref)

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
			cfg, err := g.config()
			if err == nil {
				sess, err = newSession(ctx, st, sess.Agent, opts.Model, cfg)
			}
			if err != nil {
				fmt.Fprintln(g.stdout, "error:", err)
			}
			continue
		case line == "/compact":
			n, err := rt.Compact(ctx, sess.ID, opts)
			switch {
			case err != nil:
				fmt.Fprintln(g.stdout, "compact:", err)
			default:
				fmt.Fprintf(g.stdout, "%s\n", view.dim(fmt.Sprintf("%d messages summarized", n)))
			}
			continue
		case line == "/sessions":
			list, err := st.ListSessions(ctx, sess.Agent, 10)
			if err != nil {
				fmt.Fprintln(g.stdout, "error:", err)
			}
			for _, s := range list {
				fmt.Fprintf(g.stdout, "  %s  %s  %s\n", s.ID, s.Updated.Local().Format("01-02 15:04"), s.Title)
			}
			continue
		case line == "/model" || strings.HasPrefix(line, "/model "):
			want := strings.TrimSpace(strings.TrimPrefix(line, "/model"))
			if want == "" {
				fmt.Fprintln(g.stdout, "model:", ref)
				continue
			}
			got, err := rt.ModelRef(sess, want)
			if err != nil {
				fmt.Fprintln(g.stdout, "error:", err)
				continue
			}
			opts.Model, ref = want, got
			continue
		case line == "/memory" || strings.HasPrefix(line, "/memory "):
			if err := chatMemory(ctx, g.stdout, st, rt, sess.ID, strings.TrimSpace(strings.TrimPrefix(line, "/memory"))); err != nil {
				fmt.Fprintln(g.stdout, "error:", err)
			}
			continue
		case strings.HasPrefix(line, "/") && !isSkill(ctx, rt, sess, line) && !rt.IsMCPPrompt(sess.Agent, line):
			fmt.Fprintln(g.stdout, "unknown command; /help lists them (den skills list, the skills; den mcp list, the MCP servers)")
			continue
		}
		turnCtx, cancel := context.WithCancel(ctx)
		mu.Lock()
		cancelTurn = cancel
		mu.Unlock()
		out, err := follow(turnCtx, rt, sess.ID, session.Message{Text: line}, opts, view.emit)
		mu.Lock()
		cancelTurn = nil
		mu.Unlock()
		cancel()
		view.newline()
		switch {
		case err != nil:
			fmt.Fprintln(g.stdout, "error:", err)
		case errors.Is(out.Err, agent.ErrCanceled):
			fmt.Fprintln(g.stdout, view.dim("(stopped)"))
		case out.Err != nil:
			fmt.Fprintln(g.stdout, "error:", out.Err)
		case out.Result.Stop != llm.StopEndTurn:
			fmt.Fprintln(g.stdout, view.dim("(stopped: "+string(out.Result.Stop)+")"))
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

// chatMemory is /memory: it turns the session's memory on ("on"), off
// ("off") or the other way ("").
func chatMemory(ctx context.Context, w io.Writer, st *store.Store, rt *session.Runtime, id, arg string) error {
	sess, err := st.GetSession(ctx, id)
	if err != nil {
		return err
	}
	on, err := rt.MemoryOn(ctx, sess)
	if err != nil {
		return err
	}
	switch arg {
	case "":
		on = !on
	case "on":
		on = true
	case "off":
		on = false
	default:
		return fmt.Errorf("/memory takes on or off, not %q", arg)
	}
	if err := st.SetSessionMemory(ctx, id, &on); err != nil {
		return err
	}
	if on {
		fmt.Fprintln(w, "memory is on for this session: the agent remembers and recalls (/den/memory)")
	} else {
		fmt.Fprintln(w, "memory is off for this session: nothing is remembered or recalled")
	}
	return nil
}

// isSkill reports whether a line "/NAME ..." names a skill the session
// may use (den sends it with the skill; see session.Runtime.Send).
func isSkill(ctx context.Context, rt *session.Runtime, sess store.Session, line string) bool {
	name, _, _ := strings.Cut(strings.TrimPrefix(line, "/"), " ")
	cat, err := rt.Skills(ctx, sess.Agent)
	if err != nil {
		return false
	}
	e, err := cat.Get(name, sess.ID, time.Now())
	return err == nil && e.Usable()
}
