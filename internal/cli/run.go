package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/cmdscan"
	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/models"
	"den.dev/den/internal/models/retry"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/store"
	"den.dev/den/internal/tool"
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
}

func runCmd(g *globals) *cobra.Command {
	f := &runFlags{}
	c := &cobra.Command{
		Use:   "run [flags] [PROMPT | -]",
		Short: "Run the agent on one prompt, headless",
		Long: `Send one prompt to the agent and let it work in its computer until it ends
its turn. Without --json, prints the final answer; with --json, prints one
JSON object per line for every event (session, text, thinking, tool_call,
tool_result, usage, model, retry, compaction, warning, queued, error, done).
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
	var events func(agent.Event)
	faces := hostFaces{emit: func(any) {}, mode: permission.DenyAsks}
	if f.json {
		je := newJSONEvents(g.stdout)
		events, faces.emit = je.emit, je.emitHost
	} else {
		events = func(agent.Event) {}
		faces.emit = func(e any) {
			if a, ok := e.(*permission.ApprovalRequest); ok {
				fmt.Fprintf(g.stderr, "den: approval needed: %s\n     answer with: den approve %s   (or den deny %s)\n", a.Question(), a.ID, a.ID)
			}
		}
	}
	switch {
	case f.yes:
		faces.mode = permission.AutoApprove
	case isTerminal(g.stdin):
		// A person is at the terminal: den-ask and approvals ask there
		// (an approval can also come from den approve elsewhere).
		faces.mode = permission.Wait
		var mu sync.Mutex
		readLine, stopReading := lineReader(g.stdin)
		defer stopReading()
		faces.ask, faces.prompt = terminalQuestions(g.stderr, &mu, func() {}, readLine)
	case isTerminal(g.stderr):
		faces.mode = permission.Wait
	}
	r, err := newRunner(ctx, g, f, events, faces, prompt)
	if err != nil {
		var u usageError
		if f.json && !errors.As(err, &u) {
			events(&agent.ErrorEvent{Message: err.Error()})
		}
		return err
	}
	defer r.close()
	result, err := r.send(ctx, prompt)
	switch {
	case errors.Is(err, agent.ErrCanceled):
		events(&agent.DoneEvent{Stop: "canceled", Text: result.Text})
		return exitError{130}
	case errors.Is(err, agent.ErrBudget):
		events(&agent.ErrorEvent{Message: err.Error()})
		events(&agent.DoneEvent{Stop: "budget", Text: result.Text})
		if !f.json {
			fmt.Fprintln(g.stderr, "den:", err)
		}
		return exitError{1}
	case err != nil:
		events(&agent.ErrorEvent{Message: err.Error()})
		events(&agent.DoneEvent{Stop: result.Stop, Text: result.Text})
		if !f.json {
			fmt.Fprintln(g.stderr, "den:", err)
		}
		return exitError{1}
	}
	events(&agent.DoneEvent{Stop: result.Stop, Text: result.Text})
	if !f.json {
		fmt.Fprintln(g.stdout, strings.TrimRight(result.Text, "\n"))
	}
	if result.Stop != llm.StopEndTurn {
		return exitError{1}
	}
	return nil
}

// runner is one session of the agent, ready to take prompts: its store
// record, its running computer, the model chain and the tools.
type runner struct {
	st      *store.Store
	sess    store.Session
	box     *computer.Session
	chain   *retry.Model
	targets []models.Target
	acfg    agent.Config
	emit    func(agent.Event)
	wait    bool // wait for a session another den holds

	stopHost func()
}

// newRunner opens (or creates) the session and starts its computer.
// titleHint names a new session.
func newRunner(ctx context.Context, g *globals, f *runFlags, events func(agent.Event), faces hostFaces, titleHint string) (*runner, error) {
	if f.maxTurns <= 0 {
		return nil, usageError{fmt.Errorf("--max-turns %d: want a positive number", f.maxTurns)}
	}
	thinking, err := parseThinking(f.thinking)
	if err != nil {
		return nil, err
	}
	if f.cont && f.sessionID != "" {
		return nil, usageError{errors.New("--session and --continue exclude each other")}
	}
	cfg, err := g.config()
	if err != nil {
		return nil, err
	}
	if err := computer.ValidName("agent", f.agent); err != nil {
		return nil, usageError{err}
	}
	st, err := g.openStore()
	if err != nil {
		return nil, err
	}
	r := &runner{st: st, emit: events, wait: f.wait}
	ok := false
	defer func() {
		if !ok {
			r.close()
		}
	}()
	if err := st.EnsureAgent(ctx, f.agent); err != nil {
		return nil, err
	}
	sess, err := chooseSession(ctx, st, f, cfg)
	if err != nil {
		return nil, err
	}
	res := &models.Resolver{Config: cfg}
	ref := firstNonEmpty(f.model, sess.Model, cfg.Agent(f.agent).Model)
	if ref == "" {
		if ref, err = res.Default(); err != nil {
			return nil, usageError{err}
		}
	}
	if r.targets, err = res.Resolve(ref); err != nil {
		return nil, usageError{err}
	}
	if sess.ID == "" {
		if sess, err = st.CreateSession(ctx, f.agent, ref); err != nil {
			return nil, err
		}
		if titleHint != "" {
			if err := st.SetTitle(ctx, sess.ID, title(titleHint)); err != nil {
				return nil, err
			}
		}
	} else if f.model != "" && f.model != sess.Model {
		if err := st.SetModel(ctx, sess.ID, f.model); err != nil {
			return nil, err
		}
	}
	r.sess = sess
	f.session = sess.ID
	budget, err := parseBudgets(f.budget, f.sbudget, sess)
	if err != nil {
		return nil, err
	}
	for _, t := range r.targets {
		if budget.MaxCostUSD > 0 && !t.Info.PricesKnown {
			return nil, usageError{fmt.Errorf("a budget in dollars needs prices, and den does not know those of %s: set them in the config "+
				"([models.%q] price_input = …, price_output = …, in USD per million tokens), or give the budget in tokens (--budget \"200k tokens\")", t.Ref, t.Ref)}
		}
		if msg := res.Explain(t); msg != "" {
			events(&agent.WarningEvent{Message: msg})
		}
	}
	comp, o, err := f.open(ctx, g)
	if err != nil {
		return nil, err
	}
	info, _, _ := comp.Info()
	host, gate, perm, stopHost, err := hostCommands(DataDir(g.dataDir), cfg, st, comp, f.agent, sess.ID, o, faces)
	if err != nil {
		return nil, err
	}
	r.stopHost = stopHost
	o.Host = host
	events(&agent.SessionEvent{SessionID: sess.ID, Agent: f.agent, Workspace: filepath.Join(comp.SessionDir(sess.ID), "workspace")})
	if r.box, err = comp.Start(ctx, sess.ID, o); err != nil {
		return nil, err
	}
	reg, err := tool.NewRegistry(tool.Builtin()...)
	if err != nil {
		return nil, err
	}
	policy, err := retryPolicy(cfg, f.stall)
	if err != nil {
		return nil, err
	}
	r.chain = &retry.Model{Targets: r.targets, Open: models.Open, Policy: policy, Strategy: strategyOf(cfg, ref)}
	instructions, err := agentInstructions(cfg.Agent(f.agent))
	if err != nil {
		return nil, err
	}
	var mounts []agent.Mount
	for _, m := range o.Mounts {
		mounts = append(mounts, agent.Mount{Guest: m.Guest, ReadOnly: m.ReadOnly})
	}
	system := agent.SystemPrompt(agent.Computer{
		Distro: string(info.Distro), Version: info.Version, PackageManager: string(info.PackageManager),
		Network: o.Network, Mounts: mounts,
		// What den offers this agent today: host commands. Attachments,
		// the browser, memory and skills are not yet features of den.
		Features: agent.Features{HostCommands: o.Host != nil},
	}, instructions, time.Now())
	chain := r.chain
	tools := &registryTools{reg: reg, env: &tool.Env{Computer: r.box, Images: r.targets[0].Info.Images, Shell: r.box.Shell()},
		session: sess.ID, mounts: scanMounts(o.Mounts), gate: gate, restricted: perm.Trust == permission.Restricted}
	r.acfg = agent.Config{
		Model:     chain,
		ModelName: r.targets[0].Model,
		ModelRef:  r.targets[0].Ref,
		Store:     loopStore{st: st},
		Tools:     tools,
		System:    system,
		Context:   contextFor(st, sess.ID, filepath.Join(comp.SessionDir(sess.ID), "offloads"), computerOwner(comp), r.targets[0], chain, system, tools.Specs()),
		MaxTurns:  f.maxTurns,
		Thinking:  thinking,
		Budget:    budget,
		Emit:      events,
		// Each request is priced by the model that answered it.
		Cost: func(model string, u llm.Usage) float64 { return priceOf(chain, model).Cost(u) },
		OnUsage: func(model string, u llm.Usage, latency time.Duration) {
			err := st.RecordUsage(context.WithoutCancel(ctx), store.UsageRecord{
				Session: sess.ID, Model: model, Purpose: store.PurposeConversation,
				InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
				CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens,
				CostUSD: priceOf(chain, model).Cost(u), Latency: latency,
			})
			if err != nil {
				events(&agent.WarningEvent{Message: "usage not recorded: " + err.Error()})
			}
		},
	}
	ok = true
	return r, nil
}

// priceOf is what den knows of the model of chain that answered as ref
// (the chain's first model when ref is none of its, which cannot
// happen for refs the chain itself reports).
func priceOf(chain *retry.Model, ref string) models.Info {
	if t, ok := chain.Target(ref); ok {
		return t.Info
	}
	return chain.Targets[0].Info
}

// send runs the agent on one prompt, holding the session: two dens
// never interleave turns in one session.
func (r *runner) send(ctx context.Context, prompt string) (agent.Result, error) {
	lock, err := r.st.LockSession(ctx, r.sess.ID, "den run", r.wait)
	if errors.Is(err, store.ErrSessionBusy) {
		return agent.Result{}, fmt.Errorf("session %s is in use (%v); run again when it is done, or add --wait to wait for it", r.sess.ID, err)
	}
	if err != nil {
		return agent.Result{}, err
	}
	defer lock.Unlock()
	return agent.Run(ctx, r.acfg, r.sess.ID, llm.Message{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: prompt}}})
}

// compact summarizes the older part of the session now (den chat's
// /compact) and returns how many messages the summary stands for.
func (r *runner) compact(ctx context.Context) (int, error) {
	c := r.acfg.Context
	history, err := c.Store.Messages(ctx, r.sess.ID)
	if err != nil {
		return 0, err
	}
	sums, err := c.Store.Summaries(ctx, r.sess.ID)
	if err != nil {
		return 0, err
	}
	res, err := c.Window.Compact(ctx, history, sums)
	if err != nil {
		return 0, err
	}
	if err := c.Store.AddSummary(ctx, r.sess.ID, res.Summary, res.Compacted); err != nil {
		return 0, err
	}
	return res.Compacted, nil
}

func (r *runner) close() {
	if r.box != nil {
		r.box.Close()
	}
	if r.stopHost != nil {
		r.stopHost()
	}
	r.st.Close()
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

func agentInstructions(a config.Agent) (string, error) {
	if a.InstructionsFile == "" {
		return a.Instructions, nil
	}
	b, err := os.ReadFile(a.InstructionsFile)
	if err != nil {
		return "", fmt.Errorf("instructions file: %w", err)
	}
	return strings.TrimSpace(a.Instructions + "\n\n" + string(b)), nil
}

func title(prompt string) string {
	t := strings.Join(strings.Fields(prompt), " ")
	if utf8.RuneCountInString(t) > 60 {
		t = string([]rune(t)[:60]) + "…"
	}
	return t
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// registryTools adapts the tool registry to the loop, and puts shell
// commands through the command scanner: labels for the faces and, under
// restricted trust, an approval before a command that could destroy
// files in a read-write user mount.
type registryTools struct {
	reg        *tool.Registry
	env        *tool.Env
	session    string
	mounts     []cmdscan.Mount
	gate       *permission.Gate
	restricted bool
}

func (r *registryTools) Specs() []llm.Tool { return r.reg.Specs() }

// Concurrent: reads, and shell commands that only read and leave the
// shell as it was (each then gets a fresh process), may run beside the
// other calls of their turn. Anything else runs alone in call order:
// [apt-get install x, x --version] or [mkdir d, cd d] must not race.
func (r *registryTools) Concurrent(c *llm.ToolCall) bool {
	if cmd, ok := shellCommand(c); ok {
		class, err := cmdscan.Classify(cmd, "", r.mounts)
		return err == nil && class.ReadOnly() && !cmdscan.ChangesShell(cmd)
	}
	return c.Name != "shell_execute" && r.reg.ReadOnly(*c)
}

// Labels classifies a shell command for tool cards.
func (r *registryTools) Labels(c *llm.ToolCall) []string {
	cmd, ok := shellCommand(c)
	if !ok {
		return nil
	}
	class, _ := cmdscan.Classify(cmd, "", r.mounts)
	return class.Labels()
}

func (r *registryTools) Call(ctx context.Context, c *llm.ToolCall, o agent.CallOptions) agent.Outcome {
	env := *r.env
	env.Output = o.Output
	res, exit := r.call(ctx, &env, c, o.Concurrent)
	return agent.Outcome{Result: res, ExitCode: exit}
}

func (r *registryTools) call(ctx context.Context, env *tool.Env, c *llm.ToolCall, concurrent bool) (llm.ToolResult, *int) {
	if cmd, ok := shellCommand(c); ok && r.restricted && r.gate != nil {
		class, _ := cmdscan.Classify(cmd, "", r.mounts)
		if class.DestroysWritableMount() {
			pc, err := r.gate.Check(ctx, permission.Request{Session: r.session, Command: "shell_execute", Action: "destructive",
				Subject: strings.Join(class.WritableMounts(), ","), Args: []string{cmd}})
			if err != nil || pc.Decision != permission.Allow {
				why := "the user did not approve it"
				if err != nil {
					why = err.Error()
				}
				return llm.ToolResult{IsError: true, Content: []llm.Part{&llm.Text{Text: fmt.Sprintf(
					"not run: this command could delete or overwrite files in the user's folder %s, and %s. Ask the user, or change only files you created.",
					strings.Join(class.WritableMounts(), ", "), why)}}}, nil
			}
			res, exit, _ := r.reg.Run(ctx, env, *c, concurrent)
			code := 0
			if res.IsError {
				code = 1
			}
			if exit != nil {
				code = *exit
			}
			pc.Finish(context.WithoutCancel(ctx), code)
			return res, exit
		}
	}
	// A Go error (the computer is gone, the run was canceled) is also
	// described in the result, which the model reads.
	res, exit, _ := r.reg.Run(ctx, env, *c, concurrent)
	return res, exit
}

func shellCommand(c *llm.ToolCall) (string, bool) {
	if c.Name != "shell_execute" {
		return "", false
	}
	var in struct {
		Command string `json:"command"`
	}
	if json.Unmarshal(c.Input, &in) != nil || in.Command == "" {
		return "", false
	}
	return in.Command, true
}

func scanMounts(binds []sandbox.Bind) []cmdscan.Mount {
	out := make([]cmdscan.Mount, len(binds))
	for i, b := range binds {
		out[i] = cmdscan.Mount{Guest: b.Guest, ReadOnly: b.ReadOnly}
	}
	return out
}

// parseBudget reads "0.50", "$2" or "2usd" as dollars, and "200k tokens",
// "1.5m tok" or "50000t" as tokens.
func parseBudget(s string) (usd float64, tokens int64, err error) {
	t := strings.ToLower(strings.TrimSpace(s))
	if t == "" {
		return 0, 0, nil
	}
	bad := usageError{fmt.Errorf("budget %q: want dollars (0.50, $2) or tokens (200k tokens)", s)}
	for _, suf := range []string{"tokens", "token", "tok", "t"} {
		if rest, ok := strings.CutSuffix(t, suf); ok {
			rest = strings.TrimSpace(rest)
			mult := 1.0
			switch {
			case strings.HasSuffix(rest, "k"):
				mult, rest = 1e3, strings.TrimSuffix(rest, "k")
			case strings.HasSuffix(rest, "m"):
				mult, rest = 1e6, strings.TrimSuffix(rest, "m")
			}
			n, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil || n <= 0 {
				return 0, 0, bad
			}
			return 0, int64(n * mult), nil
		}
	}
	t = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(t, "$"), "usd"))
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 {
		return 0, 0, bad
	}
	return v, 0, nil
}

// parseBudgets combines the run and session budgets: the tighter limit
// of each kind wins, a session budget counting what the session spent.
func parseBudgets(run, session string, sess store.Session) (agent.Budget, error) {
	var b agent.Budget
	usd, tok, err := parseBudget(run)
	if err != nil {
		return b, err
	}
	b.MaxCostUSD, b.MaxTokens = usd, tok
	susd, stok, err := parseBudget(session)
	if err != nil {
		return b, err
	}
	spentUSD := sess.Usage.CostUSD
	spentTok := sess.Usage.InputTokens + sess.Usage.OutputTokens + sess.Usage.CacheReadTokens + sess.Usage.CacheWriteTokens
	if susd > 0 && (b.MaxCostUSD == 0 || susd-spentUSD < b.MaxCostUSD) {
		b.MaxCostUSD, b.SpentCostUSD = susd, spentUSD
	}
	if stok > 0 && (b.MaxTokens == 0 || stok-spentTok < b.MaxTokens) {
		b.MaxTokens, b.SpentTokens = stok, spentTok
	}
	return b, nil
}

// retryPolicy reads [retry] from the config; --stall-timeout wins.
func retryPolicy(cfg *config.Config, stall time.Duration) (retry.Policy, error) {
	var p retry.Policy
	for _, d := range cfg.Retry.Delays {
		v, err := time.ParseDuration(d)
		if err != nil || v < 0 {
			return p, fmt.Errorf("config: retry.delays: %q is not a duration", d)
		}
		p.Delays = append(p.Delays, v)
	}
	if cfg.Retry.Delays != nil && len(p.Delays) == 0 {
		p.Delays = []time.Duration{}
	}
	if cfg.Retry.StallTimeout != "" {
		v, err := time.ParseDuration(cfg.Retry.StallTimeout)
		if err != nil || v <= 0 {
			return p, fmt.Errorf("config: retry.stall_timeout: %q is not a positive duration", cfg.Retry.StallTimeout)
		}
		p.Stall = v
	}
	if stall < 0 {
		return p, usageError{fmt.Errorf("--stall-timeout %v: want a positive duration", stall)}
	}
	if stall > 0 {
		p.Stall = stall
	}
	return p, nil
}

// strategyOf is the group's strategy when ref names one group.
func strategyOf(cfg *config.Config, ref string) string {
	if g, ok := cfg.Groups[ref]; ok {
		return g.Strategy
	}
	return ""
}

func isTerminal(v any) bool {
	f, ok := v.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
