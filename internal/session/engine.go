package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/computer"
	"den.dev/den/internal/egress"
	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/hostsvc"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/mcpclient"
	"den.dev/den/internal/memory"
	"den.dev/den/internal/models"
	"den.dev/den/internal/models/retry"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/sandbox/rootfs"
	"den.dev/den/internal/skill"
	"den.dev/den/internal/store"
	"den.dev/den/internal/tool"
)

// engine is a loaded session's computer: started, with its host
// commands and tools. It lives while the session is used and a while
// after (Options.IdleStop).
type engine struct {
	agent    string
	comp     *computer.Computer
	opts     computer.SessionOptions
	info     rootfs.Info
	box      *computer.Session
	gate     *permission.Gate
	policy   permission.Policy
	stopHost func()
	reg      *tool.Registry
	book     *memory.Book    // the agent's memory
	skills   *skill.Catalog  // the agent's skills
	files    hostsvc.GuestFS // reads the computer's files as its root would
	warned   map[string]bool // models whose unknown facts were told, MCP warnings given
	mcp      *mcpclient.Set  // the session's MCP servers, started at their first use
	web      webSession      // the session's browser, made at its first action
	denials  *denials        // connections den refused the computer, for commands' results
	rt       *Runtime
	session  string
}

// start opens the session's computer and starts it.
func (r *Runtime) start(ctx context.Context, l *live, sess store.Session) (*engine, error) {
	comp, o, err := r.computer(ctx, sess.Agent)
	if err != nil {
		return nil, err
	}
	e := &engine{agent: sess.Agent, comp: comp, warned: map[string]bool{}, rt: r, session: sess.ID, denials: &denials{}}
	e.info, _, _ = comp.Info()
	faces := Faces{
		Emit:   func(ev any) { r.emit(sess.ID, ev) },
		Ask:    r.o.Ask,
		Prompt: r.prompt,
		ModeOf: l.mode,
	}
	if r.o.Devices {
		faces.Device = r.devices.Request
	}
	su, err := r.setupOf(ctx, sess)
	if err != nil {
		return nil, err
	}
	faces.Policy, faces.Agents = su.policy, hostAgents{r: r}
	host, gate, policy, stop, err := HostCommands(r.o.DataDir, r.Config(), r.st, comp, sess.Agent, sess.ID, o, faces, hostMCP{e}, r.hostBrowserOf(e))
	if err != nil {
		return nil, err
	}
	e.gate, e.policy, e.stopHost = gate, policy, stop
	o.Egress.Record, o.Egress.Ask = r.egressRecord(e.denials), EgressAsk(gate, sess.ID)
	e.mcp = r.mcpSet(comp, sess, o, gate, policy, string(e.info.PackageManager))
	// The session's own computer (not its MCP servers) also reaches
	// the hosts of the skills the session uses.
	agentPolicy := o.Egress.Current
	o.Egress.Current = func() egress.Policy { return r.withSkillRules(sess.Agent, sess.ID, agentPolicy()) }
	o.Host = host
	e.opts = o
	r.emit(sess.ID, &agent.SessionEvent{SessionID: sess.ID, Agent: sess.Agent, Workspace: filepath.Join(comp.SessionDir(sess.ID), "workspace")})
	if e.box, err = comp.Start(ctx, sess.ID, o); err != nil {
		stop()
		return nil, err
	}
	tools := append(tool.Builtin(), tool.MemoryTools()...)
	if r.browserReady(comp) {
		tools = append(tools, browserTool{r: r, e: e})
	}
	if e.reg, err = tool.NewRegistry(tools...); err != nil {
		e.close()
		return nil, err
	}
	e.book = r.bookOf(comp, sess.Agent)
	if e.skills, err = r.catalogOf(comp, sess.Agent); err != nil {
		e.close()
		return nil, err
	}
	if e.files, _, err = guestFS(comp, sess.ID, o); err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

// bookOf is the memory of comp's agent.
func (r *Runtime) bookOf(comp *computer.Computer, agentName string) *memory.Book {
	b := &memory.Book{Agent: agentName, Dir: comp.AgentDir("memory"), Owner: computerOwner(comp), Index: r.st}
	if b.Owner != nil {
		b.As = &hostfs.Identity{UID: b.Owner.UID, GID: b.Owner.GID}
	}
	return b
}

// MemoryOn reports whether memory is on for the session: the session's
// own choice, else its agent's.
func (r *Runtime) MemoryOn(ctx context.Context, sess store.Session) (bool, error) {
	return r.memoryOn(ctx, sess)
}

func (r *Runtime) memoryOn(ctx context.Context, sess store.Session) (bool, error) {
	on, err := r.st.SessionMemory(ctx, sess.ID)
	if err != nil {
		return false, err
	}
	if on != nil {
		return *on, nil
	}
	return r.Config().Agent(sess.Agent).MemoryOn(), nil
}

func (e *engine) close() {
	e.web.close()
	if e.mcp != nil {
		e.mcp.Close()
	}
	if e.box != nil {
		e.box.Close()
	}
	if e.stopHost != nil {
		e.stopHost()
	}
}

// turnConfig is the loop's configuration for the next run of the
// session: the model chain (the turn's own model, else the session's,
// else the agent's, else the default), the tools on the started
// computer, the system prompt and the context management.
func (r *Runtime) turnConfig(ctx context.Context, e *engine, sess store.Session, opts TurnOptions) (agent.Config, error) {
	cfg := r.Config()
	res := &models.Resolver{Config: cfg}
	ref := firstNonEmpty(opts.Model, sess.Model, cfg.Agent(sess.Agent).Model)
	var err error
	if ref == "" {
		if ref, err = res.Default(); err != nil {
			return agent.Config{}, fmt.Errorf("%w: %w", ErrBadOptions, err)
		}
	}
	targets, err := res.Resolve(ref)
	if err != nil {
		return agent.Config{}, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	if opts.Model != "" && opts.Model != sess.Model {
		if err := r.st.SetModel(ctx, sess.ID, opts.Model); err != nil {
			return agent.Config{}, err
		}
	}
	su, err := r.setupOf(ctx, sess)
	if err != nil {
		return agent.Config{}, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	budget, err := r.subagentsBudget(ctx, sess, opts, su)
	if err != nil {
		return agent.Config{}, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	for _, t := range targets {
		if budget.MaxCostUSD > 0 && !t.Info.PricesKnown {
			return agent.Config{}, fmt.Errorf("%w: a budget in dollars needs prices, and den does not know those of %s: set them in the config "+
				"([models.%q] price_input = …, price_output = …, in USD per million tokens), or give the budget in tokens (\"200k tokens\")", ErrBadOptions, t.Ref, t.Ref)
		}
		if msg := res.Explain(t); msg != "" && !e.warned[t.Ref] {
			e.warned[t.Ref] = true
			r.emit(sess.ID, &agent.WarningEvent{Message: msg})
		}
	}
	policy, err := retryPolicy(cfg, opts.Stall)
	if err != nil {
		return agent.Config{}, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	chain := &retry.Model{Targets: targets, Open: models.Open, Policy: policy, Strategy: strategyOf(cfg, ref)}
	instructions, err := agentInstructions(cfg.Agent(sess.Agent))
	if err != nil {
		return agent.Config{}, err
	}
	var mounts []agent.Mount
	for _, m := range e.opts.Mounts {
		mounts = append(mounts, agent.Mount{Guest: m.Guest, ReadOnly: m.ReadOnly})
	}
	remember, err := r.memoryOn(ctx, sess)
	if err != nil {
		return agent.Config{}, err
	}
	now := time.Now()
	base := agent.SystemPrompt(agent.Computer{
		Distro: string(e.info.Distro), Version: e.info.Version, PackageManager: string(e.info.PackageManager),
		Network: e.opts.Network, Mounts: mounts, Egress: r.egressPrompt(e.agent), Secrets: r.secretsPrompt(e.agent),
		// What den offers this agent: host commands, memory, skills and
		// the browser. (Attachments are told with each message that
		// has them.)
		Features: agent.Features{HostCommands: e.opts.Host != nil, Memory: remember, Skills: true, Browser: e.hasBrowser()},
	}, instructions, now)
	sections := []agent.Section{{Name: agent.PartSystem, Text: base}}
	if p := r.subagentPrompt(sess, su); p != "" {
		sections = append(sections, agent.Section{Name: "subagents", Text: p})
	}
	if p := r.skillsPrompt(e.skills, sess.ID, targets[0].Info.ContextWindow, now); p != "" {
		sections = append(sections, agent.Section{Name: "skills", Text: p})
	}
	if ctxFiles := contextFiles(e.files, e.opts.Mounts); ctxFiles != "" {
		sections = append(sections, agent.Section{Name: "context_files", Text: ctxFiles})
	}
	var mcpTools *mcpTools
	var mcpPrompt string
	if su.allows("mcp") {
		mcpTools, mcpPrompt = r.mcpOffer(ctx, e, sess.ID, targets[0].Info.ContextWindow)
	}
	if mcpPrompt != "" {
		sections = append(sections, agent.Section{Name: "mcp", Text: mcpPrompt})
	}
	env := &tool.Env{Computer: e.box, Images: targets[0].Info.Images, Shell: e.box.Shell(), Session: sess.ID}
	var onCompact func(ctx context.Context, summary string)
	if remember {
		env.Memory = e.book
		sections = append(sections, agent.Section{Name: "memory", Text: r.memoryPrompt(ctx, e.book, sess.ID, now, targets[0].Info.ContextWindow)})
		book, id := e.book, sess.ID
		onCompact = func(ctx context.Context, summary string) {
			if _, err := book.AppendSummary(context.WithoutCancel(ctx), id, summary, time.Now()); err != nil {
				r.emit(id, &agent.WarningEvent{Message: "the summary of the compacted conversation was not kept in memory: " + err.Error()})
			}
		}
	}
	system := joinSections(sections)
	hidden := su.hidden(specNames(e.reg.Specs()))
	for n := range hiddenTools(remember) {
		hidden[n] = true
	}
	tools := &registryTools{reg: e.reg, mcp: mcpTools, env: env, hidden: hidden, skills: e.skills,
		session: sess.ID, mounts: scanMounts(e.opts.Mounts), gate: e.gate, restricted: e.policy.Trust == permission.Restricted,
		checkpoint: r.checkpointer(e), denials: e.denials, useSkill: func(name string) { r.useSkill(e.skills, sess.ID, name) }}
	id := sess.ID
	return agent.Config{
		Model:     chain,
		ModelName: targets[0].Model,
		ModelRef:  targets[0].Ref,
		Store:     loopStore{st: r.st},
		Tools:     tools,
		System:    system,
		Sections:  sections,
		Context: contextFor(r.st, id, filepath.Join(e.comp.SessionDir(id), "offloads"), computerOwner(e.comp), targets[0], chain,
			system, tools.Specs(), onCompact),
		MaxTurns: cmp.Or(opts.MaxTurns, su.profile.MaxTurns),
		Halt:     r.halting.Load,
		Thinking: opts.Thinking,
		Budget:   budget,
		Emit:     func(ev agent.Event) { r.emit(id, ev) },
		// Each request is priced by the model that answered it.
		Cost: func(model string, u llm.Usage) float64 { return priceOf(chain, model).Cost(u) },
		OnUsage: func(model string, u llm.Usage, latency time.Duration) {
			err := r.st.RecordUsage(context.WithoutCancel(ctx), store.UsageRecord{
				Session: id, Model: model, Purpose: store.PurposeConversation,
				InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
				CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens,
				CostUSD: priceOf(chain, model).Cost(u), Latency: latency,
			})
			if err != nil {
				r.emit(id, &agent.WarningEvent{Message: "usage not recorded: " + err.Error()})
			}
		},
	}, nil
}

// ErrBadOptions marks a turn's options den cannot run with (a model
// that does not resolve, a budget it cannot keep): the face's input was
// wrong, not den.
var ErrBadOptions = errors.New("bad options")

// memoryPrompt is the memory's part of the system prompt; a memory den
// cannot read is said so, not fatal. (The search index is brought up
// to date when it is searched, not on every turn.)
func (r *Runtime) memoryPrompt(ctx context.Context, b *memory.Book, sessionID string, now time.Time, window int) string {
	p, err := b.Prompt(now, memory.PromptBudget(window))
	if err != nil {
		r.emit(sessionID, &agent.WarningEvent{Message: "memory not read: " + err.Error()})
		return "# Your memory\nden could not read /den/memory this time: " + err.Error() + "\n"
	}
	return p
}

// hiddenTools are the tools the model does not see: the memory tools
// when memory is off.
func hiddenTools(remember bool) map[string]bool {
	if remember {
		return nil
	}
	hidden := map[string]bool{}
	for _, t := range tool.MemoryTools() {
		hidden[t.Spec().Name] = true
	}
	return hidden
}

// joinSections is the system prompt its sections make.
func joinSections(sections []agent.Section) string {
	texts := make([]string, len(sections))
	for i, s := range sections {
		texts[i] = s.Text
	}
	return strings.Join(texts, "\n")
}
