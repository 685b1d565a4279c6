package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"den.dev/den/internal/agent"
	"den.dev/den/internal/hostsvc"
	"den.dev/den/internal/llm"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/push"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/schedule"
	"den.dev/den/internal/session"
	"den.dev/den/internal/store"
	"den.dev/den/internal/webpush"
)

// verifyTimeout bounds a job's verification command.
const verifyTimeout = 5 * time.Minute

// newScheduler makes den serve's scheduler: the engine, its runner
// and the book the faces change jobs with.
func (d *Daemon) newScheduler() error {
	cfg := d.rt.Config()
	retries, err := cfg.Schedule.Retries()
	if err != nil {
		return err
	}
	d.runner = &runner{rt: d.rt, st: d.st}
	d.sched = schedule.New(schedule.Options{Store: d.st, Runner: d.runner, Deliverer: &deliverer{d: d},
		Lock: filepath.Join(d.o.DataDir, "schedule.lock"), MaxRunning: cfg.Schedule.MaxRunning, DeliveryRetry: retries,
		Grace: d.o.Grace + 10*time.Second, Owner: fmt.Sprintf("den serve pid %d", os.Getpid()), Log: d.log})
	d.book = &schedule.Book{Store: d.st, Wake: d.sched.Wake}
	return nil
}

// startScheduler runs the scheduler (which waits for the leader's
// lock, DATA/schedule.lock), woken by the changes other processes
// store after event last (den schedule, den-schedule in den run) as
// well as by this daemon's own.
func (d *Daemon) startScheduler(last int64) {
	d.changes = d.rt.Subscribe("", last, func(e store.Event) bool { return e.Type == (&schedule.Changed{}).Type() })
	ctx, cancel := context.WithCancel(context.Background())
	d.endScheduler, d.scheduling = cancel, make(chan struct{})
	go func() {
		for {
			if _, err := d.changes.Next(context.Background()); err != nil {
				return
			}
			d.sched.Wake()
		}
	}()
	go func() {
		defer close(d.scheduling)
		if err := d.sched.Run(ctx); err != nil {
			d.log.Error("scheduler stopped", "err", err)
		}
	}()
}

// stopPlanning ends the scheduler's planning: nothing new starts; the
// runs in flight go on until the runtime stops them.
func (d *Daemon) stopPlanning() {
	if d.endScheduler != nil {
		d.runner.stopping.Store(true)
		d.endScheduler()
		d.changes.Close()
	}
}

// waitScheduler waits for the scheduler to record how its runs ended.
func (d *Daemon) waitScheduler() {
	if d.scheduling != nil {
		<-d.scheduling
	}
}

// pushWanted is the events push sends: those of push.Wanted, but a
// scheduled run's own end (the scheduler tells the user how it went,
// and whether its verification passed).
func (d *Daemon) pushWanted(e store.Event) bool {
	if !push.Wanted(e) {
		return false
	}
	if d.sched != nil && (e.Type == "done" || e.Type == "status") && e.Session != "" && d.sched.Quiet(e.Session) {
		return false
	}
	return true
}

// runner runs jobs' prompts in sessions of the runtime.
type runner struct {
	rt       *session.Runtime
	st       *store.Store
	stopping atomic.Bool // den serve is stopping: a canceled turn was interrupted, not stopped by a person
}

var _ schedule.Runner = (*runner)(nil)

// Session is a fresh session titled after the job, or the session the
// job continues: the one it made before, or the agent's session whose id
// the job names, or a new one titled with the name.
func (r *runner) Session(ctx context.Context, j store.Schedule) (string, error) {
	if j.Session != "" {
		for _, id := range []string{j.SessionID, j.Session} {
			if id == "" {
				continue
			}
			if s, err := r.st.GetSession(ctx, id); err == nil && s.Agent == j.Agent {
				return s.ID, nil
			}
		}
	}
	s, err := r.rt.Create(ctx, j.Agent, j.Model)
	if err != nil {
		return "", err
	}
	ttl := schedule.Title(j)
	if j.Session != "" {
		ttl = j.Session
	}
	if err := r.st.SetTitle(ctx, s.ID, ttl); err != nil {
		return "", err
	}
	return s.ID, nil
}

// Turn sends the prompt with the job's model, budget and turn limit.
// Nobody watches a scheduled run: what would ask a person is denied,
// unless the job waits for an answer from a face. It tells an ended
// turn (the model's own end_turn) from every other end. A run the user
// stops (ctx's cause is schedule.ErrStopped) has its turn canceled as
// POST /api/v1/sessions/{id}/cancel does, and Turn waits for the turn
// to end.
func (r *runner) Turn(ctx context.Context, sessionID string, j store.Schedule, prompt string) schedule.Turn {
	before, err := r.st.GetSession(ctx, sessionID)
	if err != nil {
		return schedule.Turn{Reason: "the session could not be read: " + err.Error(), Retryable: true}
	}
	mode := permission.DenyAsks
	if j.Approvals == schedule.ApprovalsWait {
		mode = permission.Wait
	}
	start := time.Now()
	sent, err := r.rt.Send(ctx, sessionID, session.Message{Text: prompt},
		session.TurnOptions{Model: j.Model, MaxTurns: j.MaxTurns, Budget: j.Budget, Approvals: mode, IfBusy: session.Wait})
	switch {
	case errors.Is(err, session.ErrClosed) || r.stopping.Load() && err != nil:
		return schedule.Turn{Interrupted: true, Reason: "den stopped before the turn began"}
	case errors.Is(err, session.ErrBadOptions):
		return schedule.Turn{Reason: err.Error()}
	case err != nil:
		return schedule.Turn{Reason: "the prompt could not be sent: " + err.Error(), Retryable: true}
	case sent.Done == nil:
		// Stored for the next start of den, which runs it: the retry
		// would send it again.
		return schedule.Turn{Reason: "den stopped before the turn began; the prompt waits in the session for den's next start"}
	}
	var o session.Outcome
	select {
	case o = <-sent.Done:
	case <-ctx.Done():
		if !errors.Is(context.Cause(ctx), schedule.ErrStopped) {
			return schedule.Turn{Interrupted: true, Reason: "den stopped during the turn"}
		}
		r.rt.Cancel(sessionID)
		o = <-sent.Done
	}
	t := schedule.Turn{Answer: strings.TrimSpace(o.Result.Text)}
	if after, err := r.st.GetSession(context.WithoutCancel(ctx), sessionID); err == nil {
		t.CostUSD = after.Usage.CostUSD - before.Usage.CostUSD
	}
	switch {
	case errors.Is(o.Err, agent.ErrHalted):
		t.Interrupted, t.Reason = true, "den stopped at a turn boundary"
	case errors.Is(o.Err, agent.ErrCanceled) && r.stopping.Load():
		t.Interrupted, t.Reason = true, "den stopped during the turn"
	case errors.Is(o.Err, agent.ErrCanceled):
		t.Reason = "a person stopped the turn"
	case errors.Is(o.Err, agent.ErrBudget), errors.Is(o.Err, agent.ErrMaxTurns), errors.Is(o.Err, agent.ErrContextFull):
		t.Reason = o.Err.Error()
	case o.Err != nil:
		t.Reason, t.Retryable = o.Err.Error(), true
	case o.Result.Stop == llm.StopEndTurn:
		t.Ended = true
		t.Note = r.denied(context.WithoutCancel(ctx), j.Agent, sessionID, start)
	case o.Result.Stop == llm.StopMaxTokens:
		t.Reason = "the model's answer was cut at its output limit"
	case o.Result.Stop == llm.StopRefusal:
		t.Reason = "the model refused"
	default:
		t.Reason = fmt.Sprintf("the model stopped (%s) without ending its turn", o.Result.Stop)
	}
	return t
}

// denied says which host commands the run asked for that were denied
// because nobody was there to approve them ("" for none).
func (r *runner) denied(ctx context.Context, agentName, sessionID string, since time.Time) string {
	list, err := r.st.ListAudit(ctx, store.AuditFilter{Agent: agentName, Session: sessionID, Since: since}, 100)
	if err != nil {
		return ""
	}
	var cmds []string
	for _, e := range list {
		if e.DecidedBy == string(permission.ByUnattended) || e.DecidedBy == string(permission.ByTimeout) {
			cmds = append(cmds, strings.TrimSpace(e.Command+" "+e.Action))
		}
	}
	if len(cmds) == 0 {
		return ""
	}
	return fmt.Sprintf("%d host command(s) that ask were denied, nobody being there to approve them: %s", len(cmds), strings.Join(cmds, ", "))
}

// Verify runs command in the session's computer, as den exec does.
func (r *runner) Verify(ctx context.Context, sessionID, command string) schedule.Verified {
	res, err := r.rt.Exec(ctx, sessionID, sandbox.Command{Script: command, Timeout: verifyTimeout})
	switch {
	case err != nil && (r.stopping.Load() || errors.Is(err, session.ErrClosed)):
		return schedule.Verified{Interrupted: true}
	case err != nil:
		return schedule.Verified{Err: err}
	case res.Canceled && r.stopping.Load():
		return schedule.Verified{Interrupted: true}
	case res.TimedOut:
		return schedule.Verified{Err: fmt.Errorf("it ran longer than %s", verifyTimeout)}
	}
	return schedule.Verified{Exit: res.ExitCode, Output: res.Output}
}

// deliverer delivers the scheduler's messages beyond the event the
// faces show: Web Push to every subscribed browser (unless the user is
// using den in a browser now: the page shows it), and speech.
type deliverer struct{ d *Daemon }

var _ schedule.Deliverer = (*deliverer)(nil)

// maxSpoken bounds the text a delivery speaks.
const maxSpoken = 4000

func (x *deliverer) Deliver(ctx context.Context, m store.ScheduleDelivery) schedule.Attempt {
	d := x.d
	reached := map[string]bool{}
	for _, r := range m.Reached {
		reached[r] = true
	}
	var a schedule.Attempt
	var said, failed []string
	switch {
	case d.push == nil:
		said = append(said, "the faces (Web Push is off)")
	case d.rt.Devices().InUse(time.Now()):
		said = append(said, "the web page in use")
	default:
		n := push.Notification{Title: m.Title, Body: m.Body, Tag: fmt.Sprintf("schedule-%d", m.ID), Session: m.Session,
			Kind: push.KindSchedule, Urgency: webpush.Normal, TTL: 24 * time.Hour}
		if m.Kind != "result" {
			n.Urgency = webpush.High
		}
		res, err := d.push.Send(ctx, n, func(endpoint string) bool { return reached["push "+endpoint] })
		if err != nil {
			failed = append(failed, "Web Push: "+err.Error())
			break
		}
		ok := 0
		for _, r := range res {
			switch {
			case r.Err == nil:
				ok++
				a.Reached = append(a.Reached, "push "+r.Endpoint)
			case errors.Is(r.Err, webpush.ErrGone):
				// Unsubscribed: nothing to deliver to any more.
			default:
				failed = append(failed, fmt.Sprintf("Web Push to %s: %v", r.Host(), r.Err))
			}
		}
		total := 0
		for r := range reached {
			if strings.HasPrefix(r, "push ") {
				total++
			}
		}
		total += ok
		switch {
		case total == 0 && len(failed) == 0:
			said = append(said, "the faces (no browser is subscribed to Web Push)")
		case total > 0:
			said = append(said, fmt.Sprintf("Web Push to %d browser(s)", total))
		}
	}
	if m.Speak && !reached["speech"] {
		if err := x.speak(ctx, m); err != nil {
			failed = append(failed, "speech: "+err.Error())
		} else {
			a.Reached = append(a.Reached, "speech")
		}
	}
	if m.Speak && (reached["speech"] || len(a.Reached) > 0 && a.Reached[len(a.Reached)-1] == "speech") {
		said = append(said, "spoken")
	}
	a.Detail = strings.Join(said, "; ")
	if len(failed) > 0 {
		a.Err = errors.New(strings.Join(failed, "; "))
	}
	return a
}

// speak makes the audio of m's text in its session's attachments as
// den-speak does, which the faces play (a speech event).
func (x *deliverer) speak(ctx context.Context, m store.ScheduleDelivery) error {
	if m.Session == "" {
		return errors.New("no session to keep the audio in")
	}
	sess, err := x.d.st.GetSession(ctx, m.Session)
	if err != nil {
		return err
	}
	f, err := x.d.rt.Folders(ctx, m.Session)
	if err != nil {
		return err
	}
	svc := &hostsvc.Service{Attachments: f.Attachments, Owner: f.Owner,
		Emit: func(e hostsvc.Event) { x.d.rt.Publish(m.Session, e) }}
	text := m.Body
	if r := []rune(text); len(r) > maxSpoken {
		text = string(r[:maxSpoken])
	}
	for _, c := range hostsvc.Commands() {
		if c.Name != permission.CmdSpeak {
			continue
		}
		p, bad := c.Parse(svc, &hostsvc.Call{Agent: sess.Agent, Session: sess.ID, Args: []string{"--", text}})
		if bad != nil {
			return errors.New(bad.Message)
		}
		if res := p.Run(ctx); res.Code != "" {
			return errors.New(res.Message)
		}
		return nil
	}
	return errors.New("den-speak is missing")
}
