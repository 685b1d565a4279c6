package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"den.dev/den/internal/store"
)

// Statuses of a run row.
const (
	Queued      = "queued"      // due, waiting for its turn to start
	Running     = "running"     // claimed and started
	OK          = "ok"          // the agent ended its turn and the verification passed
	Failed      = "failed"      // the run ended otherwise; Reason says why
	Missed      = "missed"      // the slot passed while nothing could run it
	Skipped     = "skipped"     // the slot came while the job's previous run still ran
	Interrupted = "interrupted" // den stopped during the run
)

// Causes of a run row.
const (
	CauseTime    = "time"     // its slot came
	CauseCatchUp = "catch-up" // its slot was missed; the misfire policy ran it late
	CauseRetry   = "retry"    // an earlier attempt was interrupted or failed
	CauseManual  = "manual"   // a person (or the agent) asked to run it now
)

// Misfire policies: what a job does with slots missed while den was not
// running (or the machine slept).
const (
	RunOnce = "run-once" // run once, for the newest missed slot
	RunAll  = "run-all"  // run every missed slot, one after another
	Skip    = "skip"     // run none
)

// Delivery settings and statuses.
const (
	DeliverNotify = "notify" // to the faces: an event, the web page, Web Push
	DeliverNone   = "none"   // nothing, but failures and missed runs

	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
	DeliveryNone      = "none"
)

// Approval modes of a run: nobody watches a scheduled run, so what
// would ask a person is denied, unless the job says to wait for an
// answer from a face (den approve, the web page, a phone).
const (
	ApprovalsDeny = "deny"
	ApprovalsWait = "wait"
)

// Defaults and limits of a job's settings.
const (
	DefaultGrace   = 5 * time.Minute
	DefaultJitter  = 30 * time.Second // cron jobs: a spread within the minute they name
	DefaultRetries = 2
	MaxRetries     = 10
	MaxJitter      = time.Hour
	MaxPrompt      = 64 << 10
	MaxVerify      = 4 << 10
	MaxName        = 80
	// MaxJobsPerAgent bounds the jobs an agent may have (den-schedule
	// add refuses past it; a person is not bounded).
	MaxJobsPerAgent = 100
)

// Params are a job's settings as a face gives them. For Add, nil fields
// take their defaults; for Edit, nil fields are left as they are, and
// When is changed only when given.
type Params struct {
	Name      *string
	When      Spec
	Prompt    *string
	Session   *string
	Model     *string
	Budget    *string
	MaxTurns  *int
	Verify    *string
	Deliver   *string
	Speak     *bool
	Approvals *string
	Misfire   *string
	Grace     *time.Duration
	Jitter    *time.Duration
	Retries   *int
}

// ErrBadParams wraps every refusal of a job's settings.
var ErrBadParams = errors.New("bad schedule")

// ErrNotRunning is what Stop gives for a job with no run in progress
// (or whose run named is not in progress).
var ErrNotRunning = errors.New("nothing to stop")

// ErrStopped is the cause a run's context is canceled with when a
// person stops the run (Book.Stop): the Runner ends the run's turn as
// a person's cancel of its session does.
var ErrStopped = errors.New("stopped by the user")

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadParams, fmt.Sprintf(format, args...))
}

// apply sets p's fields on j and checks the result.
func (p Params) apply(j *store.Schedule) error {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = strings.TrimSpace(*v)
		}
	}
	set(&j.Name, p.Name)
	if p.Prompt != nil {
		j.Prompt = strings.TrimSpace(*p.Prompt)
	}
	set(&j.Session, p.Session)
	set(&j.Model, p.Model)
	set(&j.Budget, p.Budget)
	set(&j.Verify, p.Verify)
	set(&j.Deliver, p.Deliver)
	set(&j.Approvals, p.Approvals)
	set(&j.Misfire, p.Misfire)
	if p.MaxTurns != nil {
		j.MaxTurns = *p.MaxTurns
	}
	if p.Speak != nil {
		j.Speak = *p.Speak
	}
	if p.Grace != nil {
		j.Grace = *p.Grace
	}
	if p.Jitter != nil {
		j.Jitter = *p.Jitter
	}
	if p.Retries != nil {
		j.Retries = *p.Retries
	}
	return check(j)
}

// check refuses a job whose settings den would not run as written.
func check(j *store.Schedule) error {
	text := func(what, s string, max int, oneLine bool) error {
		switch {
		case len(s) > max:
			return bad("%s is %d bytes; the most is %d", what, len(s), max)
		case !utf8.ValidString(s) || strings.ContainsRune(s, 0):
			return bad("%s is not text", what)
		case oneLine && strings.ContainsAny(s, "\r\n"):
			return bad("%s is one line", what)
		}
		return nil
	}
	for _, c := range []struct {
		what, s string
		max     int
		oneLine bool
	}{{"the name", j.Name, MaxName, true}, {"the prompt", j.Prompt, MaxPrompt, false}, {"--session", j.Session, 200, true},
		{"--model", j.Model, 200, true}, {"--budget", j.Budget, 100, true}, {"--verify", j.Verify, MaxVerify, false}} {
		if err := text(c.what, c.s, c.max, c.oneLine); err != nil {
			return err
		}
	}
	switch {
	case j.Prompt == "":
		return bad("no prompt: say what the agent should do")
	case j.MaxTurns < 0:
		return bad("--max-turns %d: want 0 (den's default) or more", j.MaxTurns)
	case j.Deliver != DeliverNotify && j.Deliver != DeliverNone:
		return bad("--deliver %q: want notify or none", j.Deliver)
	case j.Approvals != ApprovalsDeny && j.Approvals != ApprovalsWait:
		return bad("--approvals %q: want deny or wait", j.Approvals)
	case j.Misfire != RunOnce && j.Misfire != RunAll && j.Misfire != Skip:
		return bad("--misfire %q: want run-once, run-all or skip", j.Misfire)
	case j.Grace < 0 || j.Grace > 7*24*time.Hour:
		return bad("--grace %s: want 0 to 7 days", j.Grace)
	case j.Jitter < 0 || j.Jitter > MaxJitter:
		return bad("--jitter %s: want 0 to %s", j.Jitter, MaxJitter)
	case j.Retries < 0 || j.Retries > MaxRetries:
		return bad("--retries %d: want 0 to %d", j.Retries, MaxRetries)
	case j.Budget != "" && !budgetRE.MatchString(strings.ToLower(j.Budget)):
		return bad("--budget %q: want dollars (0.50, $2) or tokens (200k tokens)", j.Budget)
	}
	if j.Session != "" && strings.ContainsAny(j.Session, "/\\") {
		return bad("--session %q: a session's id or a name without slashes", j.Session)
	}
	return nil
}

// budgetRE is the shape of a budget; the runtime reads it exactly when
// the run starts.
var budgetRE = mustRE(`^\s*(\$?\s*[0-9]+(\.[0-9]+)?\s*(usd)?|[0-9]+(\.[0-9]+)?\s*[km]?\s*(tokens|token|tok|t))\s*$`)

// newJob is a job of agent with den's defaults.
func newJob(agent, by string, now time.Time) store.Schedule {
	return store.Schedule{Agent: agent, Deliver: DeliverNotify, Approvals: ApprovalsDeny, Misfire: RunOnce,
		Grace: DefaultGrace, Retries: DefaultRetries, CreatedBy: by, Created: now, Updated: now, Accounted: now}
}

// when reads a stored job's when-spec.
func when(j store.Schedule) (When, error) {
	return ParseWhen(j.Kind, j.Spec, j.TZ, j.Anchor)
}

// jitter is j's fixed offset from its slots.
func jitter(j store.Schedule) time.Duration { return jitterOf(j.ID, j.Jitter) }

// nextDue is when j's first slot after after is due (zero: none).
func nextDue(j store.Schedule, w When, after time.Time) time.Time {
	s := w.Next(after)
	if s.IsZero() {
		return s
	}
	return s.Add(jitter(j))
}

// Title is how deliveries, lists and sessions name a job: its name, or
// the start of its prompt.
func Title(j store.Schedule) string { return title(j) }

func title(j store.Schedule) string {
	if j.Name != "" {
		return j.Name
	}
	t := strings.Join(strings.Fields(j.Prompt), " ")
	if utf8.RuneCountInString(t) > 50 {
		t = string([]rune(t)[:50]) + "…"
	}
	return t
}
