package permission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"den.dev/den/internal/store"
)

// Exit codes of the host-command contract that the gate produces.
const (
	ExitError  = 1 // the call failed before it could run
	ExitDenied = 3 // authorization denied
)

// Defaults of Options.
const (
	DefaultTimeout      = 5 * time.Minute
	DefaultPollInterval = 100 * time.Millisecond
)

// By says who decided a call.
type By string

// Who decides.
const (
	ByPolicy     By = "policy"     // the trust level's defaults and the config's overrides
	ByRule       By = "rule"       // an earlier answer with scope always
	BySession    By = "session"    // an earlier answer with scope session, in this session
	ByUser       By = "user"       // a person answered this call's approval
	ByAuto       By = "auto"       // approved unasked (den run --yes)
	ByUnattended By = "unattended" // nobody to ask (den run without a terminal or --yes)
	ByTimeout    By = "timeout"    // nobody answered in time
	ByCanceled   By = "canceled"   // the call was canceled while waiting
	ByError      By = "error"      // the gate failed (a store error)
	ByInvalid    By = "invalid"    // the arguments did not parse: refused before any decision
)

// Mode is what the gate does with a call whose decision is ask.
type Mode int

// The modes.
const (
	// Wait raises an approval request and waits for an answer from the
	// face's Prompt or from another process (den approve, den deny),
	// denying when Timeout passes first.
	Wait Mode = iota
	// AutoApprove approves at once, scope once (den run --yes).
	AutoApprove
	// DenyAsks denies at once: nobody could answer (den run without a
	// terminal and without --yes).
	DenyAsks
)

// Store is the state the gate keeps: approvals, rules and the audit
// log. *store.Store implements it.
type Store interface {
	CreateApproval(ctx context.Context, a store.Approval) (store.Approval, error)
	GetApproval(ctx context.Context, id string) (store.Approval, error)
	AnswerApproval(ctx context.Context, id string, ans store.ApprovalAnswer) (store.Approval, error)
	SessionAnswer(ctx context.Context, agent, session, command, action, subject string) (store.Approval, bool, error)
	Rules(ctx context.Context, agent string) ([]store.Rule, error)
	AddAudit(ctx context.Context, e store.AuditEntry) (int64, error)
}

var _ Store = (*store.Store)(nil)

// Answer is a person's answer to an approval request.
type Answer struct {
	Approve bool
	Scope   Scope // "" is Once
}

// Options tune a Gate. The zero value waits up to five minutes for
// answers from other processes only.
type Options struct {
	// Emit receives the gate's events (approval requests and their
	// resolution) for the faces. Nil drops them. It must not block long:
	// the call waits for it.
	Emit func(Event)
	// Prompt asks a person in the face in use (den chat asks on the
	// terminal). It runs while the gate also watches the store for an
	// answer from another process; once the request is resolved
	// otherwise its ctx is canceled, and it must then return promptly:
	// the gate waits for it. An error means the face could not ask; the
	// gate keeps waiting for other answers. Nil: no face asks.
	Prompt func(ctx context.Context, r *ApprovalRequest) (Answer, error)
	// Mode is what an ask does: Wait (the zero value), AutoApprove or
	// DenyAsks.
	Mode Mode
	// ModeOf, when set, gives the mode at each ask instead of Mode: a
	// session's gate lives across turns that differ (den run --yes).
	ModeOf func() Mode
	// Timeout is how long an approval waits before the call is denied;
	// 0 is DefaultTimeout.
	Timeout time.Duration
	// PollInterval is how often the waiting gate reads the approval's
	// row for an answer from another process; 0 is DefaultPollInterval.
	PollInterval time.Duration
}

// Request is one host-command call as den received it. Everything in it
// comes from the sandbox except Session, which den knows from the
// socket the call arrived on; nothing in it can approve the call.
//
// Action, Subject and Detail come from the same parse of Args that the
// command runs on, so the gate decides on what will actually run.
type Request struct {
	Session string // the calling session's id
	Command string // "den-model"
	Action  string // "run"; "" for commands without actions
	// Subject is what the action acts on: the model ref of den-model
	// run, the target of den-open, the key of den-config set, the
	// session of den-sessions send. The policy decides on it, and an
	// answer with scope session or always covers this subject only.
	Subject string
	// Detail is the exact effect, for the person asked, such as
	// `agents.default.model: "a" → "b"`.
	Detail string
	Args   []string // argv after the command name, as given (redacted before it is stored or shown)
}

// Gate decides one agent's host-command calls: by policy, by earlier
// answers, or by asking; and records every call in the audit log. It is
// safe for concurrent use.
type Gate struct {
	st     Store
	agent  string
	policy Policy
	o      Options
}

// New returns the gate of agent.
func New(st Store, agent string, p Policy, o Options) *Gate {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	return &Gate{st: st, agent: agent, policy: p, o: o}
}

// Call is a decided call. Finish records it in the audit log.
type Call struct {
	Request
	Decision   Decision // Allow or Deny, never Ask
	By         By
	ApprovalID string // the approval that decided it, if one did
	Scope      Scope  // the answer's scope, when a person or --yes answered

	gate     *Gate
	args     []string // Request.Args redacted
	arrived  time.Time
	started  time.Time
	mu       sync.Mutex
	finished bool
}

// Check decides r, asking when the policy says ask and no earlier answer
// (scope session or always) applies. It returns a Call whose Decision
// is Allow or Deny. Its error is a Go error (the store failed, ctx was
// canceled): the call must not run, and Check has already recorded it
// in the audit log.
func (g *Gate) Check(ctx context.Context, r Request) (*Call, error) {
	return g.check(ctx, r, g.policy.DecideFor(r.Command, r.Action, r.Subject))
}

// CheckWith is Check for a call that den's configuration decides
// outside the agent's Policy (an MCP tool's call: its server's
// permissions, then Policy.DecideMCP): d takes the policy's place.
// Earlier answers, asking and the audit work as in Check; d comes from
// den, never from the computer.
func (g *Gate) CheckWith(ctx context.Context, r Request, d Decision) (*Call, error) {
	switch d {
	case Allow, Ask, Deny:
	default:
		d = Ask
	}
	return g.check(ctx, r, d)
}

func (g *Gate) check(ctx context.Context, r Request, d Decision) (*Call, error) {
	c := &Call{Request: r, gate: g, args: Redact(r.Args), arrived: time.Now()}
	c.Decision, c.By = d, ByPolicy
	err := g.recall(ctx, c)
	if err == nil && c.Decision == Ask {
		err = g.ask(ctx, c)
	}
	c.started = time.Now()
	if err != nil {
		c.Decision, c.By = Deny, ByError
		if ctx.Err() != nil {
			c.By = ByCanceled
		}
		if ferr := c.Finish(ctx, ExitError); ferr != nil {
			err = errors.Join(err, ferr)
		}
		return nil, fmt.Errorf("permission: %s: %w", key(r.Command, r.Action), err)
	}
	return c, nil
}

// Do checks r and, if it is allowed, runs it; either way it records the
// call. run returns the call's exit code; a denied call's code is
// ExitDenied. The error is Check's or the audit log's.
func (g *Gate) Do(ctx context.Context, r Request, run func(context.Context) int) (*Call, int, error) {
	c, err := g.Check(ctx, r)
	if err != nil {
		return nil, ExitError, err
	}
	code := ExitDenied
	if c.Decision == Allow {
		code = run(ctx)
	}
	return c, code, c.Finish(ctx, code)
}

// Finish records the call in the audit log with its exit code and the
// time since Check returned. It records once; later calls fail. The
// record is written even when ctx is canceled.
func (c *Call) Finish(ctx context.Context, exitCode int) error {
	c.mu.Lock()
	done := c.finished
	c.finished = true
	c.mu.Unlock()
	if done {
		return errors.New("permission: call already finished")
	}
	var ran time.Duration
	if c.Decision == Allow {
		ran = time.Since(c.started)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_, err := c.gate.st.AddAudit(ctx, store.AuditEntry{
		Time:       c.arrived,
		Agent:      c.gate.agent,
		Session:    c.Session,
		Command:    c.Command,
		Action:     c.Action,
		Args:       c.args,
		Decision:   string(c.Decision),
		DecidedBy:  string(c.By),
		ApprovalID: c.ApprovalID,
		ExitCode:   exitCode,
		Waited:     c.started.Sub(c.arrived),
		Duration:   ran,
	})
	if err != nil {
		return fmt.Errorf("permission: audit: %w", err)
	}
	return nil
}

// Reject records a call refused before any decision (its arguments did
// not parse) in the audit log, as denied, with the exit code returned.
func (g *Gate) Reject(ctx context.Context, r Request, exitCode int) error {
	c := &Call{Request: r, gate: g, args: Redact(r.Args), arrived: time.Now(), Decision: Deny, By: ByInvalid}
	c.started = c.arrived
	return c.Finish(ctx, exitCode)
}

// recall turns an ask into the answer given earlier with scope session
// (in this session) or always (a rule), for the same command, action
// and subject, if there is one. Earlier answers never override the
// policy's allow or deny: the user's config stays in charge.
func (g *Gate) recall(ctx context.Context, c *Call) error {
	if c.Decision != Ask {
		return nil
	}
	a, ok, err := g.st.SessionAnswer(ctx, g.agent, c.Session, c.Command, c.Action, c.Subject)
	if err != nil {
		return err
	}
	if ok {
		c.Decision, c.By, c.ApprovalID, c.Scope = answerDecision(a.Status), BySession, a.ID, Session
		return nil
	}
	rules, err := g.st.Rules(ctx, g.agent)
	if err != nil {
		return err
	}
	for _, r := range rules {
		if r.Command == c.Command && r.Action == c.Action && r.Subject == c.Subject && r.Decision != string(Ask) {
			c.Decision, c.By, c.Scope = Decision(r.Decision), ByRule, Always
			return nil
		}
	}
	return nil
}

// ask settles an ask by the gate's mode.
func (g *Gate) ask(ctx context.Context, c *Call) error {
	mode := g.o.Mode
	if g.o.ModeOf != nil {
		mode = g.o.ModeOf()
	}
	switch mode {
	case AutoApprove:
		c.Decision, c.By, c.Scope = Allow, ByAuto, Once
		return nil
	case DenyAsks:
		c.Decision, c.By = Deny, ByUnattended
		return nil
	}
	detail := RedactText(c.Detail)
	a, err := g.st.CreateApproval(ctx, store.Approval{
		Agent: g.agent, Session: c.Session, Command: c.Command, Action: c.Action,
		Subject: RedactText(c.Subject), Detail: detail, Args: c.args, Expires: time.Now().Add(g.o.Timeout),
	})
	if err != nil {
		return err
	}
	c.ApprovalID = a.ID
	scopes := []Scope{Once, Session, Always}
	if c.Session == "" {
		scopes = []Scope{Once, Always}
	}
	req := &ApprovalRequest{
		ID: a.ID, Agent: g.agent, Session: c.Session, Command: c.Command, Action: c.Action,
		Subject: RedactText(c.Subject), Detail: detail, Args: c.args, Scopes: scopes, Expires: a.Expires,
	}
	req.Covers = req.covers()
	g.emit(req)
	a, err = g.wait(ctx, a, req)
	if a.Status != store.ApprovalPending {
		g.emit(&ApprovalResolved{ID: a.ID, Approved: a.Status == store.ApprovalApproved, Scope: Scope(a.Scope), DecidedBy: By(a.DecidedBy)})
	}
	if err != nil {
		return err
	}
	c.Decision, c.By, c.Scope = answerDecision(a.Status), By(a.DecidedBy), Scope(a.Scope)
	return nil
}

// wait waits for the approval's answer from the face's Prompt, from
// another process (through the store), the timeout or ctx, and returns
// the approval as answered. Whoever answers first wins: every answer
// goes through the store, which keeps only the first.
func (g *Gate) wait(ctx context.Context, a store.Approval, req *ApprovalRequest) (store.Approval, error) {
	pctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	answers := make(chan Answer, 1)
	if g.o.Prompt != nil {
		wg.Go(func() {
			if ans, err := g.o.Prompt(pctx, req); err == nil {
				answers <- ans
			}
		})
	}
	timer := time.NewTimer(time.Until(a.Expires))
	defer timer.Stop()
	tick := time.NewTicker(g.o.PollInterval)
	defer tick.Stop()
	for {
		select {
		case ans := <-answers:
			return g.answer(ctx, a.ID, personAnswer(ans))
		case <-tick.C:
			got, err := g.st.GetApproval(ctx, a.ID)
			if err != nil && ctx.Err() != nil {
				continue // the ctx.Done case records the cancellation
			}
			if err != nil || got.Status != store.ApprovalPending {
				return got, err
			}
		case <-timer.C:
			return g.answer(ctx, a.ID, store.ApprovalAnswer{Status: store.ApprovalExpired, DecidedBy: string(ByTimeout)})
		case <-ctx.Done():
			wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			got, _ := g.answer(wctx, a.ID, store.ApprovalAnswer{Status: store.ApprovalExpired, DecidedBy: string(ByCanceled)})
			wcancel()
			return got, ctx.Err()
		}
	}
}

// answer records ans unless another answer came first, and returns the
// approval as it stands.
func (g *Gate) answer(ctx context.Context, id string, ans store.ApprovalAnswer) (store.Approval, error) {
	a, err := g.st.AnswerApproval(ctx, id, ans)
	if errors.Is(err, store.ErrAnswered) || errors.Is(err, store.ErrExpired) {
		return a, nil
	}
	return a, err
}

func (g *Gate) emit(ev Event) {
	if g.o.Emit != nil {
		g.o.Emit(ev)
	}
}

// personAnswer is a face's answer as the store records it.
func personAnswer(ans Answer) store.ApprovalAnswer {
	scope, err := ParseScope(string(ans.Scope))
	if err != nil {
		scope = Once
	}
	status := store.ApprovalDenied
	if ans.Approve {
		status = store.ApprovalApproved
	}
	return store.ApprovalAnswer{Status: status, Scope: string(scope), DecidedBy: string(ByUser)}
}

// answerDecision is the decision an answered approval's status makes.
func answerDecision(status string) Decision {
	if status == store.ApprovalApproved {
		return Allow
	}
	return Deny
}
