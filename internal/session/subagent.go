package session

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/event"
	"den.dev/den/internal/hostsvc"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/store"
	"den.dev/den/internal/tool"
)

// ErrSubagentLimit refuses a sub-agent that would cross a limit of
// [subagents]: too many running for the parent, or nested too deep.
var ErrSubagentLimit = errors.New("sub-agent limit")

// SpawnOptions say what sub-agent to start.
type SpawnOptions struct {
	// Task is its first message.
	Task string
	// Profile names a [profiles.NAME] of the config; "" is the profile
	// called "default" when there is one, else the parent's settings.
	Profile string
	// Agent is the agent whose computer it runs in; "" is the parent's.
	Agent string
	// Report delivers its answer into the parent's conversation when it
	// ends, unless someone waits for it then (den-agent spawn); the
	// parent's run, if it ends first, waits for such answers.
	Report bool
}

// Subagent is a sub-agent as its parent sees it.
type Subagent struct {
	store.Session
	// Running says it works (or is about to): its answer is not final.
	Running bool
	// Answer is the text of its last answer ("" before it has one).
	Answer string
	// Ended is how its last run ended: "done", "canceled", "budget",
	// "error", "interrupted" (den stopped during it); "" while it runs
	// or before it ran.
	Ended string
	// Error is what stopped its last run, when it failed.
	Error string
}

// subagents is what the runtime knows of the sub-agents it runs. What
// a sub-agent owes its parent is kept in the store too
// (store.SubagentState), so that a den started again delivers it.
type subagents struct {
	spawn   sync.Mutex // one start at a time: the running count is kept
	mu      sync.Mutex
	kids    map[string]*kid    // by sub-agent session id
	ledgers map[string]*ledger // each session's budget of its last run
	ended   chan struct{}      // closed (and replaced) when a sub-agent's run ends
}

// kid is a sub-agent run in this process.
type kid struct {
	parent  string
	report  bool // its answer joins the parent's conversation when it ends
	pending bool // it runs, or its answer is not yet delivered
	waiters int  // den-agent wait/run calls waiting for it
	// adopted: its answer was owed when it began to run here (a den that
	// stopped started it), and is delivered whether or not its parent's
	// turn runs here.
	adopted bool
}

func (s *subagents) kid(id string) *kid {
	if s.kids == nil {
		s.kids = map[string]*kid{}
	}
	k := s.kids[id]
	if k == nil {
		k = &kid{}
		s.kids[id] = k
	}
	return k
}

// endedChan is the channel closed at the next end of a sub-agent's run.
// s.mu is held.
func (s *subagents) endedChan() chan struct{} {
	if s.ended == nil {
		s.ended = make(chan struct{})
	}
	return s.ended
}

// setup is how a session runs as a sub-agent (or as a parent of some).
type setup struct {
	parent      store.Session // zero for a session no session started
	depth       int           // how many sessions above it
	profileName string
	profile     config.Profile
	trust       permission.Trust
	maxDepth    int
	maxRunning  int
}

// setupOf reads how sess runs: its parent, depth, profile and trust.
func (r *Runtime) setupOf(ctx context.Context, sess store.Session) (setup, error) {
	cfg := r.Config()
	s := setup{trust: trustLevel(cfg.Agent(sess.Agent).Trust), maxDepth: cfg.Subagents.Depth(), maxRunning: cfg.Subagents.Running()}
	if sess.Parent == "" {
		return s, nil
	}
	if sess.Profile != "" {
		p, ok := cfg.Profile(sess.Profile)
		if !ok {
			return s, fmt.Errorf("sub-agent profile %q is no longer in the config", sess.Profile)
		}
		s.profileName, s.profile = sess.Profile, p
		if p.Trust != "" {
			s.trust = lowerTrust(s.trust, trustLevel(p.Trust))
		}
	}
	parent, err := r.st.GetSession(ctx, sess.Parent)
	if err != nil {
		return s, fmt.Errorf("the parent of sub-agent %s: %w", sess.ID, err)
	}
	ps, err := r.setupOf(ctx, parent)
	if err != nil {
		return s, err
	}
	s.parent, s.depth = parent, ps.depth+1
	s.trust = lowerTrust(s.trust, ps.trust)
	return s, nil
}

// isChild reports whether the session is a sub-agent.
func (s setup) isChild() bool { return s.parent.ID != "" }

// allows reports whether the profile's tool allow-list lets the
// sub-agent use name (a tool, a host command, or "mcp").
func (s setup) allows(name string) bool {
	if !s.isChild() || s.profile.Tools == nil {
		return true
	}
	for _, p := range s.profile.Tools {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// hidden are the model's tools the profile leaves out.
func (s setup) hidden(names []string) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		if !s.allows(n) {
			out[n] = true
		}
	}
	return out
}

// policy is the agent's policy as the sub-agent gets it: its trust
// level, and a denial for every host command its profile leaves out.
func (s setup) policy(p permission.Policy) permission.Policy {
	if !s.isChild() {
		return p
	}
	p.Trust = lowerTrust(trustLevel(string(p.Trust)), s.trust)
	over := map[string]permission.Decision{}
	for k, v := range p.Overrides {
		over[k] = v
	}
	for _, c := range hostsvc.Commands() {
		if s.allows(c.Name) || (c.Name == permission.CmdMCP && s.allows("mcp")) {
			continue
		}
		for k := range over {
			if strings.HasPrefix(k, c.Name+" ") {
				delete(over, k)
			}
		}
		over[c.Name] = permission.Deny
	}
	p.Overrides = over
	return p
}

// toolNames are the names a profile's tools may match: the model's
// tools, the host commands and "mcp".
func toolNames() []string {
	var names []string
	for _, t := range append(tool.Builtin(), tool.MemoryTools()...) {
		names = append(names, t.Spec().Name)
	}
	names = append(names, browserToolName, "mcp")
	for _, c := range hostsvc.Commands() {
		names = append(names, c.Name)
	}
	return names
}

// checkTools refuses a profile whose allow-list names nothing den has.
func checkTools(name string, p config.Profile) error {
	names := toolNames()
	for _, pat := range p.Tools {
		if strings.HasPrefix(pat, "mcp") {
			continue
		}
		if !slices.ContainsFunc(names, func(n string) bool { ok, _ := path.Match(pat, n); return ok }) {
			return fmt.Errorf("profile %s: tools: %q names none of den's tools or host commands (%s)", name, pat, strings.Join(names, ", "))
		}
	}
	return nil
}

func trustLevel(s string) permission.Trust {
	if s == "" {
		return permission.Trusted
	}
	return permission.Trust(s)
}

// lowerTrust is the lower of two trust levels.
func lowerTrust(a, b permission.Trust) permission.Trust {
	rank := map[permission.Trust]int{permission.Restricted: 0, permission.Trusted: 1, permission.Full: 2}
	if rank[b] < rank[a] {
		return b
	}
	return a
}

// Spawn starts a sub-agent of the session parentID: a session of its
// own (in the parent's agent's computer, with its own /workspace, or
// in another agent's) that runs o.Task with a profile of the config.
// It refuses (ErrSubagentLimit) a sub-agent nested deeper than
// [subagents] max_depth, or beyond max_running of the parent's at
// once; a profile or task den cannot run is ErrBadOptions.
func (r *Runtime) Spawn(ctx context.Context, parentID string, o SpawnOptions) (store.Session, error) {
	task := strings.TrimSpace(o.Task)
	if task == "" {
		return store.Session{}, fmt.Errorf("%w: a sub-agent needs a task", ErrBadOptions)
	}
	parent, err := r.st.GetSession(ctx, parentID)
	if err != nil {
		return store.Session{}, err
	}
	ps, err := r.setupOf(ctx, parent)
	if err != nil {
		return store.Session{}, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	if ps.depth >= ps.maxDepth {
		return store.Session{}, fmt.Errorf("%w: a sub-agent at depth %d starts no sub-agents of its own ([subagents] max_depth = %d)", ErrSubagentLimit, ps.depth, ps.maxDepth)
	}
	cfg := r.Config()
	name := o.Profile
	prof, ok := cfg.Profile(name)
	switch {
	case name == "":
		if prof, ok = cfg.Profile("default"); ok {
			name = "default"
		}
	case !ok:
		return store.Session{}, fmt.Errorf("%w: no sub-agent profile %q in the config (%s)", ErrBadOptions, name, profileList(cfg))
	}
	if err := checkTools(name, prof); err != nil {
		return store.Session{}, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	agentName := firstNonEmpty(o.Agent, parent.Agent)
	if err := computer.ValidName("agent", agentName); err != nil {
		return store.Session{}, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	if agentName != parent.Agent {
		// Never a new computer for a misspelt name.
		if known, err := r.knownAgent(ctx, agentName); err != nil {
			return store.Session{}, err
		} else if !known {
			return store.Session{}, fmt.Errorf("%w: no agent %q", ErrBadOptions, agentName)
		}
	}
	model := firstNonEmpty(prof.Model, parent.Model, cfg.Agent(parent.Agent).Model)
	if _, err := r.ModelRef(store.Session{Agent: agentName}, model); err != nil {
		return store.Session{}, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	if _, _, err := parseBudget(prof.Budget); err != nil {
		return store.Session{}, fmt.Errorf("%w: %w", ErrBadOptions, err)
	}
	r.subs.spawn.Lock()
	defer r.subs.spawn.Unlock()
	if err := r.roomFor(ctx, parent.ID, ps.maxRunning); err != nil {
		return store.Session{}, err
	}
	child, err := r.st.CreateChild(ctx, parent.ID, agentName, model, name, o.Report)
	if err != nil {
		return store.Session{}, err
	}
	r.subs.mu.Lock()
	k := r.subs.kid(child.ID)
	k.parent, k.report, k.pending = parent.ID, o.Report, true
	r.subs.mu.Unlock()
	if _, err := r.Send(ctx, child.ID, Message{Text: task}, r.childOptions(parent.ID, prof)); err != nil {
		r.subs.mu.Lock()
		k.pending = false
		r.subs.mu.Unlock()
		// It never ran: it owes nothing.
		if _, serr := r.st.SettleAnswer(context.WithoutCancel(ctx), child.ID, store.EndedNone); serr != nil {
			r.log.Warn("sub-agent", "session", child.ID, "err", serr)
		}
		return child, err
	}
	return r.st.GetSession(ctx, child.ID)
}

// profileList names the config's profiles for an error.
func profileList(cfg *config.Config) string {
	var names []string
	for n := range cfg.Profiles {
		names = append(names, n)
	}
	if len(names) == 0 {
		return "the config has no [profiles.NAME]"
	}
	slices.Sort(names)
	return "profiles: " + strings.Join(names, ", ")
}

// roomFor refuses one more running sub-agent of parent beyond max.
// r.subs.spawn is held.
func (r *Runtime) roomFor(ctx context.Context, parent string, max int) error {
	kids, err := r.st.Subagents(ctx, parent)
	if err != nil {
		return err
	}
	n := 0
	for _, c := range kids {
		if r.busy(c) {
			n++
		}
	}
	if n >= max {
		return fmt.Errorf("%w: %d sub-agents of this session run already, the most at once ([subagents] max_running = %d): wait for one, or cancel one", ErrSubagentLimit, n, max)
	}
	return nil
}

// busy reports whether a sub-agent runs, or has an answer on its way
// to its parent, or runs in another den process.
func (r *Runtime) busy(c store.Session) bool {
	if r.Running(c.ID) {
		return true
	}
	r.subs.mu.Lock()
	k := r.subs.kids[c.ID]
	pending := k != nil && k.pending
	r.subs.mu.Unlock()
	return pending || (c.Status == event.Running || c.Status == event.Waiting) && !r.knows(c.ID)
}

// knows reports whether this process ran the session.
func (r *Runtime) knows(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.live[id] != nil
}

// childOptions are the turn options of a sub-agent's runs: approvals
// as its parent's run has them (den run --yes approves its sub-agents'
// asks too), the profile's turn limit.
func (r *Runtime) childOptions(parent string, p config.Profile) TurnOptions {
	o := TurnOptions{MaxTurns: p.MaxTurns, IfBusy: Queue}
	r.mu.Lock()
	l := r.live[parent]
	r.mu.Unlock()
	if l != nil {
		o.Approvals = l.mode()
		r.mu.Lock()
		o.Stall, o.Thinking = l.opts.Stall, l.opts.Thinking
		r.mu.Unlock()
	}
	return o
}

// child finds a sub-agent of parent; another session's is not found.
func (r *Runtime) child(ctx context.Context, parent, id string) (store.Session, error) {
	c, err := r.st.GetSession(ctx, id)
	if errors.Is(err, store.ErrNotFound) || (err == nil && c.Parent != parent) {
		return store.Session{}, fmt.Errorf("%w: no sub-agent %q of session %s", store.ErrNotFound, id, parent)
	}
	return c, err
}

// Subagents lists the sub-agents of a session, oldest first.
func (r *Runtime) Subagents(ctx context.Context, parent string) ([]Subagent, error) {
	if _, err := r.st.GetSession(ctx, parent); err != nil {
		return nil, err
	}
	kids, err := r.st.Subagents(ctx, parent)
	if err != nil {
		return nil, err
	}
	out := make([]Subagent, len(kids))
	for i, c := range kids {
		if out[i], err = r.describe(ctx, c); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// SubagentStatus describes one sub-agent of parent.
func (r *Runtime) SubagentStatus(ctx context.Context, parent, id string) (Subagent, error) {
	c, err := r.child(ctx, parent, id)
	if err != nil {
		return Subagent{}, err
	}
	return r.describe(ctx, c)
}

func (r *Runtime) describe(ctx context.Context, c store.Session) (Subagent, error) {
	s := Subagent{Session: c, Running: r.busy(c)}
	if !s.Running && (c.Status == event.Running || c.Status == event.Waiting) && r.knows(c.ID) {
		// Its last status may be on its way to the store.
		r.Sync()
		if fresh, err := r.st.GetSession(ctx, c.ID); err == nil {
			s.Session = fresh
		}
	}
	st, err := r.st.SubagentState(ctx, c.ID)
	if err != nil {
		return s, err
	}
	if !s.Running {
		s.Ended, s.Error = st.Ended, st.Error
		if s.Ended == store.EndedRunning {
			// Nobody runs it: den stopped during its run.
			s.Ended = store.EndedInterrupted
		}
	}
	s.Answer, err = r.lastAnswer(ctx, c.ID)
	return s, err
}

// lastAnswer is the text of a session's last answer ("" before it has
// one).
func (r *Runtime) lastAnswer(ctx context.Context, id string) (string, error) {
	hist, err := r.st.History(ctx, id)
	if err != nil {
		return "", err
	}
	for i := len(hist) - 1; i >= 0; i-- {
		if hist[i].Role == llm.Assistant {
			if t := strings.TrimSpace(llm.TextOf(hist[i])); t != "" {
				return t, nil
			}
		}
	}
	return "", nil
}

// WaitSubagent waits until a sub-agent of parent is done (its runs
// ended and its queue empty), or ctx ends (then it returns the
// sub-agent as it is, with ctx's error). A sub-agent someone waits for
// when it ends does not also report to its parent.
func (r *Runtime) WaitSubagent(ctx context.Context, parent, id string) (Subagent, error) {
	c, err := r.child(ctx, parent, id)
	if err != nil {
		return Subagent{}, err
	}
	r.subs.mu.Lock()
	k := r.subs.kid(c.ID)
	k.parent = parent
	k.waiters++
	r.subs.mu.Unlock()
	defer func() {
		r.subs.mu.Lock()
		k.waiters--
		r.subs.mu.Unlock()
	}()
	for {
		r.subs.mu.Lock()
		ended := r.subs.endedChan()
		r.subs.mu.Unlock()
		c, err := r.st.GetSession(ctx, id)
		if err != nil {
			return Subagent{}, err
		}
		if !r.busy(c) {
			s, err := r.describe(ctx, c)
			if err == nil && s.Ended != "" && r.ctx.Err() == nil && !r.halting.Load() {
				// Its answer is taken: it is not delivered too (as a
				// den started again would, the answer being owed).
				r.settle(ctx, id, s.Ended)
			}
			return s, err
		}
		select {
		case <-ended:
		case <-ctx.Done():
			s, _ := r.describe(context.WithoutCancel(ctx), c)
			return s, ctx.Err()
		case <-r.ctx.Done():
			return Subagent{}, ErrClosed
		}
	}
}

// RunSubagent starts a sub-agent and waits for its answer. If ctx
// ends first, the sub-agent goes on as one Spawn started with Report:
// its answer joins the parent's conversation when it ends.
func (r *Runtime) RunSubagent(ctx context.Context, parent string, o SpawnOptions) (Subagent, error) {
	o.Report = false
	c, err := r.Spawn(ctx, parent, o)
	if err != nil {
		return Subagent{}, err
	}
	s, err := r.WaitSubagent(ctx, parent, c.ID)
	if err != nil && ctx.Err() != nil {
		r.subs.mu.Lock()
		r.subs.kid(c.ID).report = true
		r.subs.mu.Unlock()
		// Should it have ended meanwhile, its answer is owed all the
		// same: a watching runtime delivers it.
		if err := r.st.SetReport(context.WithoutCancel(ctx), c.ID, true); err != nil {
			r.log.Warn("sub-agent", "session", c.ID, "err", err)
		}
	}
	return s, err
}

// Steer gives a running sub-agent of parent a message, which joins its
// conversation at its next turn boundary; an idle one runs again with
// it (within max_running).
func (r *Runtime) Steer(ctx context.Context, parent, id, text string) (Sent, error) {
	c, err := r.child(ctx, parent, id)
	if err != nil {
		return Sent{}, err
	}
	if strings.TrimSpace(text) == "" {
		return Sent{}, fmt.Errorf("%w: empty message", ErrBadOptions)
	}
	cfg := r.Config()
	prof, _ := cfg.Profile(c.Profile)
	r.subs.spawn.Lock()
	defer r.subs.spawn.Unlock()
	if !r.busy(c) {
		if err := r.roomFor(ctx, parent, cfg.Subagents.Running()); err != nil {
			return Sent{}, err
		}
	}
	st, err := r.st.SubagentState(ctx, c.ID)
	if err != nil {
		return Sent{}, err
	}
	// A new round: the answer it gives next is owed, if it reports (as
	// it did before den was started again, too).
	if err := r.st.OweAnswer(ctx, c.ID); err != nil {
		return Sent{}, err
	}
	r.subs.mu.Lock()
	k := r.subs.kid(c.ID)
	k.parent, k.pending, k.report = parent, true, st.Reports
	r.subs.mu.Unlock()
	sent, err := r.Send(ctx, c.ID, Message{Text: text, From: parent}, r.childOptions(parent, prof))
	if err != nil || sent.Queued && !r.Running(c.ID) {
		r.subs.mu.Lock()
		k.pending = false
		r.subs.mu.Unlock()
	}
	if err != nil {
		r.settle(ctx, c.ID, store.EndedNone)
	}
	return sent, err
}

// CancelSubagent stops a sub-agent of parent: its running turn (and its
// own sub-agents') and the messages queued for it. It returns once the
// sub-agent has stopped, or after 30 seconds.
func (r *Runtime) CancelSubagent(ctx context.Context, parent, id string) (Subagent, error) {
	c, err := r.child(ctx, parent, id)
	if err != nil {
		return Subagent{}, err
	}
	if _, err := r.st.DropQueued(ctx, c.ID); err != nil {
		return Subagent{}, err
	}
	r.subs.mu.Lock()
	r.subs.kid(c.ID).report = false
	r.subs.mu.Unlock()
	if err := r.st.SetReport(ctx, c.ID, false); err != nil {
		return Subagent{}, err
	}
	r.Cancel(c.ID)
	wctx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	s, err := r.WaitSubagent(wctx, parent, c.ID)
	if err != nil && ctx.Err() == nil && wctx.Err() != nil {
		err = nil // it takes its time to stop; the status says so
	}
	return s, err
}

// cancelSubagents stops the running sub-agents this process started for
// session (and theirs): they end with their parent's turn.
func (r *Runtime) cancelSubagents(session string) {
	r.subs.mu.Lock()
	var ids []string
	for id, k := range r.subs.kids {
		if k.parent == session && k.pending {
			ids = append(ids, id)
			k.report = false
		}
	}
	r.subs.mu.Unlock()
	for _, id := range ids {
		// Its answer stays in its session, whenever den starts again.
		if err := r.st.SetReport(context.WithoutCancel(r.ctx), id, false); err != nil {
			r.log.Warn("sub-agent", "session", id, "err", err)
		}
		r.Cancel(id)
	}
}

// subagentEnded is told that a session's worker ended with out: a
// sub-agent's answer goes to its parent (when it reports and its
// parent's turn still runs here, or it was adopted), and those waiting
// for it are woken. Its answer is owed no more, unless den stops: a
// den started again delivers it.
func (r *Runtime) subagentEnded(id string, out Outcome) {
	r.subs.mu.Lock()
	k := r.subs.kids[id]
	if k == nil {
		r.subs.mu.Unlock()
		return
	}
	ended := r.endedAs(out.Err)
	pending, owes := k.pending, k.pending && k.report && k.waiters == 0 && ended != store.EndedCanceled
	parent, adopted := k.parent, k.adopted
	r.subs.mu.Unlock()
	ctx := context.WithoutCancel(r.ctx)
	stopping := r.ctx.Err() != nil || r.halting.Load()
	switch {
	case !pending:
	case ended == store.EndedInterrupted:
		// den stops: what it owes (word of that) is delivered when den
		// starts again.
	case owes && (adopted || r.Running(parent)):
		// If den stops first, it stays owed.
		if err := r.report(ctx, id, parent, ended); err != nil && !errors.Is(err, ErrClosed) {
			r.log.Warn("sub-agent report", "session", id, "parent", parent, "err", err)
		}
	case owes && stopping:
		// Its parent's turn stopped waiting for it because den stops:
		// it is delivered when den starts again.
	default:
		// Someone waited for it, it was canceled, or its parent's turn
		// is gone: its answer stays in its session.
		r.settle(ctx, id, ended)
	}
	r.subs.mu.Lock()
	k.pending, k.adopted = false, false
	if r.subs.ended != nil {
		close(r.subs.ended)
		r.subs.ended = nil
	}
	r.subs.mu.Unlock()
	r.wake(parent)
}

// parentEnded is told that a session's worker ended with its run
// stopped or failed, not waiting for the sub-agents it spawned: their
// answers stay in their sessions, unless den stops (a den started
// again delivers them then, the parent's turn having been interrupted).
func (r *Runtime) parentEnded(id string) {
	if r.ctx.Err() != nil || r.halting.Load() {
		return
	}
	r.subs.mu.Lock()
	var ids []string
	for kid, k := range r.subs.kids {
		if k.parent == id && k.pending && k.report {
			ids = append(ids, kid)
		}
	}
	r.subs.mu.Unlock()
	ctx := context.WithoutCancel(r.ctx)
	for _, kid := range ids {
		if st, err := r.st.SubagentState(ctx, kid); err != nil {
			r.log.Warn("sub-agent", "session", kid, "err", err)
		} else if st.Owed {
			r.settle(ctx, kid, st.Ended)
		}
	}
}

// settle says what a sub-agent's run that ended so owes its parent is
// owed no more.
func (r *Runtime) settle(ctx context.Context, id, ended string) {
	if _, err := r.st.SettleAnswer(context.WithoutCancel(ctx), id, ended); err != nil {
		r.log.Warn("sub-agent", "session", id, "err", err)
	}
}

// endedAs names how a run ended (a store.Ended… value): a run
// canceled because den stops was interrupted.
func (r *Runtime) endedAs(err error) string {
	switch {
	case err == nil:
		return store.EndedDone
	case errors.Is(err, agent.ErrHalted):
		return store.EndedInterrupted
	case errors.Is(err, agent.ErrCanceled), errors.Is(err, context.Canceled):
		if r.ctx.Err() != nil || r.halting.Load() {
			return store.EndedInterrupted
		}
		return store.EndedCanceled
	case errors.Is(err, agent.ErrBudget):
		return store.EndedBudget
	}
	return store.EndedError
}

// beginSubagentRun records in the store that a run of a sub-agent
// begins (a den that dies during it leaves it so), and adopts one
// whose answer is owed but that this process did not start: a den
// that stopped did. It returns the sub-agent's state before.
func (r *Runtime) beginSubagentRun(ctx context.Context, sess store.Session) store.SubagentState {
	if sess.Parent == "" {
		return store.SubagentState{}
	}
	st, err := r.st.SubagentState(ctx, sess.ID)
	if err != nil {
		r.log.Warn("sub-agent run", "session", sess.ID, "err", err)
		return st
	}
	if st.Owed {
		r.subs.mu.Lock()
		if k := r.subs.kid(sess.ID); !k.pending {
			k.parent, k.report, k.pending, k.adopted = sess.Parent, true, true, true
		}
		r.subs.mu.Unlock()
	}
	if err := r.st.SetEnded(ctx, sess.ID, store.EndedRunning, ""); err != nil {
		r.log.Warn("sub-agent run", "session", sess.ID, "err", err)
	}
	return st
}

// endSubagentRun records how a run of a sub-agent ended (with err), or,
// when it did not run after all, puts back how the one before ended.
func (r *Runtime) endSubagentRun(sess store.Session, before store.SubagentState, err error, ran bool) {
	if sess.Parent == "" {
		return
	}
	ended, text := before.Ended, before.Error
	if ran {
		ended, text = r.endedAs(err), ""
		if err != nil {
			text = err.Error()
		}
	}
	if err := r.st.SetEnded(context.WithoutCancel(r.ctx), sess.ID, ended, text); err != nil {
		r.log.Warn("sub-agent run", "session", sess.ID, "err", err)
	}
}

// errNotOwed is an answer that was delivered, or settled, meanwhile.
var errNotOwed = errors.New("the sub-agent's answer is owed no more")

// report delivers the answer of a sub-agent's run that ended (as
// ended) into its parent's conversation, as a message from the
// sub-agent's session.
func (r *Runtime) report(ctx context.Context, id, parent, ended string) error {
	c, err := r.st.GetSession(ctx, id)
	if err != nil {
		return err
	}
	st, err := r.st.SubagentState(ctx, id)
	if err != nil {
		return err
	}
	answer, err := r.lastAnswer(ctx, id)
	if err != nil {
		return err
	}
	head := "Sub-agent " + id
	if c.Profile != "" {
		head += " (profile " + c.Profile + ")"
	}
	switch {
	case st.Error == "":
		head += " finished."
	default:
		head += " stopped: " + st.Error + "."
	}
	if answer == "" {
		answer = "(it gave no answer)"
	}
	return r.deliver(ctx, store.Answer{Subagent: id, Run: ended, Message: store.Queued{Session: parent, Text: head + "\n\n" + answer}})
}

// reportInterrupted tells a sub-agent's parent that den stopped during
// the sub-agent's run (ended: store.EndedRunning when den died, else
// store.EndedInterrupted), and how to go on.
func (r *Runtime) reportInterrupted(ctx context.Context, c store.Session, ended string) error {
	answer, err := r.lastAnswer(ctx, c.ID)
	if err != nil {
		return err
	}
	head := "Sub-agent " + c.ID
	if c.Profile != "" {
		head += " (profile " + c.Profile + ")"
	}
	text := head + " was interrupted: den stopped during its run, before it gave its answer. " +
		"What it did is in its session (den-agent status " + c.ID + "). " +
		"To go on, den-agent steer " + c.ID + " MESSAGE runs it again with your message; or spawn a new sub-agent for the task."
	if answer != "" {
		text += "\n\nIts last message before den stopped:\n\n" + answer
	}
	return r.deliver(ctx, store.Answer{Subagent: c.ID, Run: ended, Ended: store.EndedInterrupted, Error: "den stopped during its run",
		Message: store.Queued{Session: c.Parent, Text: text}})
}

// deliver sends a sub-agent's answer to its parent, queued in the
// transaction that records its delivery (so it is delivered once,
// however den stops): the parent's running worker takes it at its next
// turn boundary, a parent nobody runs runs with it. An answer owed no
// more is not delivered, and no error.
func (r *Runtime) deliver(ctx context.Context, a store.Answer) error {
	parent := a.Message.Session
	r.mu.Lock()
	var opts TurnOptions
	if l := r.live[parent]; l != nil {
		opts = l.opts
	}
	r.mu.Unlock()
	opts.IfBusy = Queue
	put := func(ctx context.Context, _ store.Session, m Message) (store.Queued, error) {
		a.Message.Text, a.Message.FromSession = m.Text, a.Subagent
		q, ok, err := r.st.DeliverAnswer(ctx, a)
		if err == nil && !ok {
			err = errNotOwed
		}
		return q, err
	}
	_, err := r.send(ctx, parent, Message{Text: a.Message.Text, From: a.Subagent}, opts, put)
	if errors.Is(err, errNotOwed) {
		return nil
	}
	return err
}

// deliverOwed delivers what sub-agents nobody runs still owe their
// parents (parent's only, unless it is ""), as a den that stopped left
// it: the answer of a run that ended, or word that den stopped during
// it. A sub-agent with messages queued is left to run them (a watching
// runtime runs it) and report as it ends; one that runs, here or in
// another den process, or whose parent another den process runs, is
// left to that process.
func (r *Runtime) deliverOwed(ctx context.Context, parent string) {
	list, err := r.st.OwedSubagents(ctx, parent)
	if err != nil {
		r.log.Warn("sub-agents: owed answers", "err", err)
		return
	}
	// Newest first: a sub-agent's own sub-agents before it, so that
	// their word resumes it rather than follow its own.
	slices.Reverse(list)
	for _, st := range list {
		if ctx.Err() != nil || r.halting.Load() {
			return
		}
		if err := r.deliverOwedBy(ctx, st); err != nil {
			r.log.Warn("sub-agent report", "session", st.ID, "parent", st.Parent, "err", err)
		}
	}
}

// deliverOwedBy is deliverOwed for one sub-agent.
func (r *Runtime) deliverOwedBy(ctx context.Context, st store.SubagentState) error {
	r.subs.mu.Lock()
	k := r.subs.kids[st.ID]
	pending := k != nil && k.pending
	r.subs.mu.Unlock()
	if pending || st.Ended == store.EndedNone || r.Running(st.ID) {
		return nil // this process's: it reports as it ends
	}
	if !r.Running(st.Parent) {
		pl, err := r.st.LockSession(ctx, st.Parent, r.o.Holder, false)
		if err != nil {
			return nil // another den runs the parent, and may wait for it
		}
		pl.Unlock()
	}
	lock, err := r.st.LockSession(ctx, st.ID, r.o.Holder, false)
	if err != nil {
		return nil // another den runs it
	}
	defer lock.Unlock()
	if q, err := r.st.QueuedMessages(ctx, st.ID); err != nil || len(q) > 0 {
		return err // it runs them (adopted as it begins), then reports
	}
	if st, err = r.st.SubagentState(ctx, st.ID); err != nil || !st.Owed {
		return err
	}
	c, err := r.st.GetSession(ctx, st.ID)
	if err != nil {
		return err
	}
	switch st.Ended {
	case store.EndedNone:
		return nil
	case store.EndedCanceled:
		r.settle(ctx, st.ID, st.Ended)
		return nil
	case store.EndedRunning, store.EndedInterrupted:
		return r.reportInterrupted(ctx, c, st.Ended)
	}
	return r.report(ctx, st.ID, st.Parent, st.Ended)
}

// wake tells a session's worker waiting for its sub-agents to look
// again.
func (r *Runtime) wake(session string) {
	r.mu.Lock()
	l := r.live[session]
	r.mu.Unlock()
	if l == nil || l.wake == nil {
		return
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// pendingReports counts the sub-agents of session whose answers are
// still to join its conversation.
func (r *Runtime) pendingReports(session string) int {
	r.subs.mu.Lock()
	defer r.subs.mu.Unlock()
	n := 0
	for _, k := range r.subs.kids {
		if k.parent == session && k.pending && k.report {
			n++
		}
	}
	return n
}

// awaitSubagents keeps a run that ended with sub-agents still to report
// (den-agent spawn) from ending the worker: it waits until one's answer
// is queued for it (then the worker runs again with it) or none is
// left, the turn is canceled, or den stops.
func (r *Runtime) awaitSubagents(ctx context.Context, l *live) {
	for {
		r.mu.Lock()
		kicked := l.kicked
		r.mu.Unlock()
		n := r.pendingReports(l.id)
		if kicked || n == 0 || ctx.Err() != nil || r.halting.Load() {
			return
		}
		select {
		case <-l.wake:
		case <-ctx.Done():
		case <-time.After(time.Second): // den may be stopping (halting)
		}
	}
}

// subagentPrompt is the system prompt's section on sub-agents: for a
// sub-agent, what it is and how its answer is used; for a session that
// may start sub-agents, how.
func (r *Runtime) subagentPrompt(sess store.Session, su setup) string {
	var b strings.Builder
	if su.isChild() {
		fmt.Fprintf(&b, "# You are a sub-agent\nSession %s gave you a task: the first message. Nobody follows this conversation as it goes, and your last answer is all that session gets back: end with an answer that stands alone (what you did and found, results, the paths of files).", su.parent.ID)
		if su.parent.Agent == sess.Agent {
			b.WriteString(" Your /workspace is your own; that session sees /den/shared, so put files it needs there.")
		} else {
			fmt.Fprintf(&b, " You run in agent %s's computer for a session of agent %s, which sees none of your files: put what it needs in your answer.", sess.Agent, su.parent.Agent)
		}
		b.WriteString(" Messages from that session may join while you work.")
		if s := su.profile.Instructions; s != "" {
			b.WriteString("\n\n" + s)
		}
		b.WriteString("\n")
	}
	if su.depth >= su.maxDepth || !su.allows("den-agent") {
		return b.String()
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "# Sub-agents\nden-agent hands a task to a sub-agent: a session of its own in this computer, with its own /workspace (/den/shared is shared with you), that knows only what the task says.\n"+
		"- den-agent run [--profile NAME] TASK waits and prints its answer.\n"+
		"- den-agent spawn [--profile NAME] TASK starts it and prints its id; its answer joins this conversation as a message when it ends (end your turn meanwhile if you have nothing else to do: den waits for it).\n"+
		"- den-agent status ID | wait ID [--timeout 5m] | steer ID MESSAGE | cancel ID | list.\n"+
		"At most %d run at once; their cost counts against your budget.", su.maxRunning)
	if su.depth+1 >= su.maxDepth {
		b.WriteString(" They start no sub-agents of their own.")
	}
	cfg := r.Config()
	var names []string
	for n := range cfg.Profiles {
		names = append(names, n)
	}
	slices.Sort(names)
	if len(names) > 0 {
		b.WriteString("\nProfiles:")
		for _, n := range names {
			p := cfg.Profiles[n]
			b.WriteString("\n- " + n)
			if p.Description != "" {
				b.WriteString(": " + p.Description)
			}
		}
	}
	b.WriteString("\n")
	return b.String()
}

func specNames(specs []llm.Tool) []string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return names
}
