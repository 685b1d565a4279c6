package schedule

import (
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	// The time zone database, for hosts without one (a container):
	// den uses the system's when there is one.
	_ "time/tzdata"
)

// Kinds of when-spec, as a job stores them. A countdown (--in 20m) is
// stored as the one-shot time it names.
const (
	Cron  = "cron"
	Every = "every"
	At    = "at"
)

// MinEvery is the shortest interval of --every.
const MinEvery = time.Minute

// When is a job's when-spec, read: the slots (the times a job is
// scheduled for) it gives.
type When struct {
	Kind string
	// Spec is the cron expression, the interval ("2h") or the one-shot
	// time (RFC 3339).
	Spec string
	// TZ is the time zone of a cron expression (and of a one-shot time
	// as it was written).
	TZ string
	// Anchor is where the slots of an interval are counted from: they
	// are Anchor + k·interval, k ≥ 1. For a one-shot time, the time.
	Anchor time.Time

	cron  *cronSpec
	every time.Duration
}

// ParseWhen reads a stored when-spec.
func ParseWhen(kind, spec, tz string, anchor time.Time) (When, error) {
	w := When{Kind: kind, Spec: spec, TZ: tz, Anchor: anchor}
	switch kind {
	case Cron:
		loc, err := LoadZone(tz)
		if err != nil {
			return w, err
		}
		if w.cron, err = parseCron(spec, loc); err != nil {
			return w, err
		}
	case Every:
		d, err := ParseDuration(spec)
		if err != nil {
			return w, err
		}
		if d < MinEvery {
			return w, fmt.Errorf("--every %s: the shortest interval is %s", spec, MinEvery)
		}
		if anchor.IsZero() {
			return w, errors.New("an interval needs the time it counts from")
		}
		w.every = d
	case At:
		if anchor.IsZero() {
			return w, errors.New("a one-shot job needs its time")
		}
	default:
		return w, fmt.Errorf("unknown kind of when-spec %q", kind)
	}
	return w, nil
}

// Next is the first slot after after, or the zero time when there is
// none (a one-shot time that passed, an expression that matches no day
// for years).
func (w When) Next(after time.Time) time.Time {
	switch w.Kind {
	case Cron:
		return w.cron.next(after)
	case Every:
		if after.Before(w.Anchor.Add(w.every)) {
			return w.Anchor.Add(w.every)
		}
		k := after.Sub(w.Anchor)/w.every + 1
		return w.Anchor.Add(k * w.every)
	case At:
		if w.Anchor.After(after) {
			return w.Anchor
		}
	}
	return time.Time{}
}

// String says the when-spec as a person would: "cron 0 7 * * *
// (Europe/Berlin)", "every 2h", "at 2026-12-24 18:00 CET".
func (w When) String() string {
	switch w.Kind {
	case Cron:
		return fmt.Sprintf("cron %s (%s)", w.Spec, w.TZ)
	case Every:
		return "every " + w.Spec
	case At:
		t := w.Anchor
		if loc, err := LoadZone(firstOf(w.TZ, localZoneOr("UTC"))); err == nil {
			t = t.In(loc)
		}
		return "at " + t.Format("2006-01-02 15:04 MST")
	}
	return w.Kind + " " + w.Spec
}

// Spec is a when-spec as a person gives it: exactly one of a cron
// expression (with its time zone), an interval, a one-shot time or a
// countdown.
type Spec struct {
	Cron  string // "0 7 * * *"
	TZ    string // "Europe/Berlin"; "" for this machine's
	Every string // "2h"
	At    string // "2026-12-24T18:00", in TZ unless it says its offset
	In    string // "20m"
}

// Given reports whether any part of the spec is set.
func (s Spec) Given() bool { return s.Cron != "" || s.Every != "" || s.At != "" || s.In != "" }

// Resolve reads the spec as of now into a When.
func (s Spec) Resolve(now time.Time) (When, error) {
	n := 0
	for _, v := range []string{s.Cron, s.Every, s.At, s.In} {
		if v != "" {
			n++
		}
	}
	if n != 1 {
		return When{}, errors.New("say when with exactly one of --cron, --every, --at or --in")
	}
	tz := s.TZ
	if tz == "" && (s.Cron != "" || s.At != "") {
		var err error
		if tz, err = LocalZone(); err != nil {
			return When{}, err
		}
	}
	if tz != "" && s.Cron == "" && s.At == "" {
		return When{}, errors.New("--tz goes with --cron or --at")
	}
	var w When
	var err error
	switch {
	case s.Cron != "":
		w, err = ParseWhen(Cron, s.Cron, tz, time.Time{})
		if err == nil && w.Next(now).IsZero() {
			err = fmt.Errorf("cron expression %q matches no time in the next %d years", s.Cron, searchYears)
		}
	case s.Every != "":
		w, err = ParseWhen(Every, s.Every, "", now.Truncate(time.Second))
	case s.At != "":
		loc, lerr := LoadZone(tz)
		if lerr != nil {
			return When{}, lerr
		}
		var at time.Time
		if at, err = parseAt(s.At, loc); err == nil {
			w, err = ParseWhen(At, at.UTC().Format(time.RFC3339), tz, at)
		}
		if err == nil && !at.After(now) {
			err = fmt.Errorf("--at %s: that time has passed (it is %s now)", s.At, now.In(loc).Format("2006-01-02 15:04 MST"))
		}
	case s.In != "":
		var d time.Duration
		if d, err = ParseDuration(s.In); err == nil && d <= 0 {
			err = fmt.Errorf("--in %s: want a positive duration", s.In)
		}
		if err == nil {
			at := now.Add(d).Truncate(time.Second)
			w, err = ParseWhen(At, at.UTC().Format(time.RFC3339), "", at)
		}
	}
	return w, err
}

// atLayouts are the forms --at takes without an offset.
var atLayouts = []string{"2006-01-02T15:04", "2006-01-02T15:04:05", "2006-01-02 15:04", "2006-01-02 15:04:05"}

// parseAt reads a one-shot time: RFC 3339 with its offset, or a wall
// time in loc (a time the clocks skip runs at the jump; one they pass
// twice, the first time).
func parseAt(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	for _, l := range atLayouts {
		t, err := time.Parse(l, s)
		if err != nil {
			continue
		}
		xs, jump := wallInstants(t, loc)
		if len(xs) == 0 {
			return jump, nil
		}
		return xs[0], nil
	}
	return time.Time{}, fmt.Errorf("--at %q: want a time such as 2026-12-24T18:00 (in --tz or this machine's zone) or 2026-12-24T18:00:00+01:00", s)
}

var durationPart = regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d|w)`)

// ParseDuration reads a duration as Go does ("1h30m"), with days ("d",
// 24 hours) and weeks ("w") besides.
func ParseDuration(s string) (time.Duration, error) {
	rest := strings.TrimSpace(s)
	if rest == "" {
		return 0, errors.New("empty duration")
	}
	var total time.Duration
	for rest != "" {
		m := durationPart.FindStringSubmatch(rest)
		if m == nil {
			return 0, fmt.Errorf("duration %q: want a number and a unit (s, m, h, d, w), such as 20m or 1d12h", s)
		}
		v, _ := strconv.ParseFloat(m[1], 64)
		unit := map[string]time.Duration{"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour,
			"d": 24 * time.Hour, "w": 7 * 24 * time.Hour}[m[2]]
		if v*float64(unit) > float64(100*365*24*time.Hour) {
			return 0, fmt.Errorf("duration %q is too long", s)
		}
		total += time.Duration(v * float64(unit))
		rest = rest[len(m[0]):]
	}
	return total, nil
}

// LoadZone loads an IANA time zone ("Europe/Berlin", "UTC").
func LoadZone(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return nil, errors.New("no time zone: name one such as Europe/Berlin")
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("time zone %q: not an IANA zone name such as Europe/Berlin", name)
	}
	return loc, nil
}

// LocalZone is this machine's time zone by its IANA name: $TZ, else
// what /etc/localtime links to, else /etc/timezone. den stores the name
// with the job, so that the job keeps its zone when the machine's
// changes.
func LocalZone() (string, error) {
	if tz := strings.TrimPrefix(os.Getenv("TZ"), ":"); tz != "" {
		if _, err := LoadZone(tz); err == nil {
			return tz, nil
		}
	}
	if target, err := os.Readlink("/etc/localtime"); err == nil {
		if i := strings.Index(target, "zoneinfo/"); i >= 0 {
			name := filepath.Clean(target[i+len("zoneinfo/"):])
			if _, err := LoadZone(name); err == nil {
				return name, nil
			}
		}
	}
	if b, err := os.ReadFile("/etc/timezone"); err == nil {
		name := strings.TrimSpace(string(b))
		if _, err := LoadZone(name); err == nil {
			return name, nil
		}
	}
	if _, err := os.Stat("/etc/localtime"); os.IsNotExist(err) {
		return "UTC", nil
	}
	return "", errors.New("den cannot tell this machine's time zone: give one with --tz, such as --tz Europe/Berlin")
}

// jitterOf is a job's fixed offset from its slots: a spread in [0,
// span), the same for every run of the job, drawn from its id.
func jitterOf(id int64, span time.Duration) time.Duration {
	if span < time.Second {
		return 0
	}
	h := fnv.New64a()
	fmt.Fprintf(h, "den-schedule-%d", id)
	return time.Duration(h.Sum64()%uint64(span/time.Second)) * time.Second
}

func mustRE(s string) *regexp.Regexp { return regexp.MustCompile(s) }
