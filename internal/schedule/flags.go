package schedule

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Flag is one flag of add and edit, which den schedule and den-schedule
// take alike.
type Flag struct {
	Name  string
	Usage string
	Kind  string // "string", "int", "bool" or "duration"
}

// Flags are the settings of a job as flags.
var Flags = []Flag{
	{"name", "a name for the job, shown in lists and notifications", "string"},
	{"cron", `when: a cron expression ("0 7 * * *": minute hour day month weekday), in --tz`, "string"},
	{"tz", "the time zone of --cron or --at, such as Europe/Berlin (default: this machine's)", "string"},
	{"every", "when: every interval (2h, 30m, 1d), counted from now; at least 1m", "string"},
	{"at", "when: once, at a time (2026-12-24T18:00, in --tz; or with its offset)", "string"},
	{"in", "when: once, after a countdown (20m, 2h, 1d)", "string"},
	{"prompt", "what the agent is asked (or give it as the arguments)", "string"},
	{"session", "continue this session (an id, or a name den keeps a session under) instead of a fresh one per run", "string"},
	{"model", "the model of its runs (a model ref or group)", "string"},
	{"budget", `stop a run before it spends more: dollars ("0.50") or tokens ("200k tokens")`, "string"},
	{"max-turns", "stop a run after this many model turns (0: den's default)", "int"},
	{"verify", "a command run in the computer after the turn: the run is ok only if it exits 0", "string"},
	{"deliver", "notify (the answer to the web page, Web Push and /api/v1/events) or none (failures and missed runs still notify)", "string"},
	{"speak", "also speak the answer (den-speak's audio file, played by the web page)", "bool"},
	{"approvals", "what a host command that asks does in a run: deny (nobody is there) or wait (for den approve or a face)", "string"},
	{"misfire", "slots missed while den was not running: run-once (default), run-all or skip", "string"},
	{"grace", "how late a slot may still start as on time (default 5m)", "duration"},
	{"jitter", "spread the job's start over this span after each slot (cron default 30s: within the minute; 0: exact)", "duration"},
	{"retries", "attempts after an interrupted or errored run (default 2)", "int"},
}

// ParamsFrom reads the flags given (name → value as typed) into Params;
// a flag not given is nil there.
func ParamsFrom(given map[string]string) (Params, error) {
	var p Params
	kinds := map[string]string{}
	for _, f := range Flags {
		kinds[f.Name] = f.Kind
	}
	for name := range given {
		if _, ok := kinds[name]; !ok {
			return p, bad("unknown flag --%s", name)
		}
	}
	str := func(name string) *string {
		if v, ok := given[name]; ok {
			return &v
		}
		return nil
	}
	num := func(name string) (*int, error) {
		v, ok := given[name]
		if !ok {
			return nil, nil
		}
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil {
			return nil, bad("--%s %q: not a whole number", name, v)
		}
		return &n, nil
	}
	var err error
	p.Name, p.Prompt, p.Session, p.Model = str("name"), str("prompt"), str("session"), str("model")
	p.Budget, p.Verify, p.Deliver, p.Approvals, p.Misfire = str("budget"), str("verify"), str("deliver"), str("approvals"), str("misfire")
	p.When = Spec{Cron: given["cron"], TZ: given["tz"], Every: given["every"], At: given["at"], In: given["in"]}
	if p.MaxTurns, err = num("max-turns"); err != nil {
		return p, err
	}
	if p.Retries, err = num("retries"); err != nil {
		return p, err
	}
	if v, ok := given["speak"]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return p, bad("--speak %q: want true or false", v)
		}
		p.Speak = &b
	}
	for _, d := range []struct {
		name string
		dst  **time.Duration
	}{{"grace", &p.Grace}, {"jitter", &p.Jitter}} {
		v, ok := given[d.name]
		if !ok {
			continue
		}
		var t time.Duration
		if strings.TrimSpace(v) != "0" {
			if t, err = ParseDuration(v); err != nil {
				return p, fmt.Errorf("%w: --%s: %w", ErrBadParams, d.name, err)
			}
		}
		*d.dst = &t
	}
	return p, nil
}
