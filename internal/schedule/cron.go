package schedule

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// cronSpec is a cron expression read into the bit sets of its fields
// (bit n set: value n matches), and the time zone its wall times are in.
//
// robfig/cron/v3 parses the expression: the five standard fields with
// ranges, steps, lists and month and weekday names, and the descriptors
// (@daily, @weekly, ...). den computes the times itself from the bit
// sets, because robfig's Next skips a wall time the clocks jump over
// (a 02:30 job does not run on the night the clocks go forward), gives
// up after five years (a job on 29 February finds no time after 2096)
// and leaves a time that happens twice to chance. The rules den keeps
// instead are in next.
type cronSpec struct {
	minute, hour, dom, month, dow uint64
	loc                           *time.Location
}

// starBit is robfig's mark on a field written "*" (or "?").
const starBit = 1 << 63

// allHours is the hour field of an expression that runs every hour.
const allHours = 1<<24 - 1

// searchYears bounds the search for a next time: a leap day after
// 2096 comes again in 2104.
const searchYears = 9

func parseCron(expr string, loc *time.Location) (*cronSpec, error) {
	expr = strings.TrimSpace(expr)
	switch {
	case expr == "":
		return nil, errors.New("empty cron expression")
	case strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ="):
		return nil, errors.New("give the time zone with --tz, not in the expression")
	case strings.HasPrefix(expr, "@every"):
		return nil, errors.New("for an interval, use --every instead of @every")
	}
	s, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("cron expression %q: %w", expr, err)
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("cron expression %q: not a calendar expression", expr)
	}
	if spec.Second&^starBit != 1 {
		return nil, fmt.Errorf("cron expression %q: den's expressions have five fields (minute hour day month weekday)", expr)
	}
	return &cronSpec{minute: spec.Minute, hour: spec.Hour, dom: spec.Dom, month: spec.Month, dow: spec.Dow, loc: loc}, nil
}

// next is the first time after after when the expression matches, or
// the zero time when none comes within searchYears. The expression
// matches wall times in the job's time zone, and when the clocks change
// there:
//   - a wall time the clocks jump over (02:30 when they go from 02:00
//     to 03:00) runs once, at the moment of the jump (03:00): a daily
//     job is never skipped;
//   - a wall time that happens twice (02:30 when they go back from
//     03:00 to 02:00) runs once, the first time, unless the expression
//     runs every hour (its hour field is "*"): such a job is about
//     elapsed time, and runs in both hours.
//
// Several wall times that fall on one moment (every quarter hour of a
// skipped hour) run once.
func (c *cronSpec) next(after time.Time) time.Time {
	a := after.In(c.loc)
	w := naive(a).Truncate(time.Minute)
	limit := w.AddDate(searchYears, 0, 0)
	// The common case: walking the wall times from after's own, the
	// first moment after after that lies before the next change of the
	// clocks is the answer, as wall times and moments keep their order
	// between two changes.
	_, end := a.ZoneBounds()
	for {
		var ok bool
		if w, ok = c.nextWall(w, limit); !ok {
			return time.Time{}
		}
		xs := c.instants(w)
		for _, x := range xs {
			if x.After(after) {
				if end.IsZero() || x.Before(end) {
					return x
				}
				return c.nextAcross(after, limit)
			}
		}
		w = w.Add(time.Minute)
	}
}

// nextAcross is next when a change of the clocks lies between after and
// the answer: every wall time whose moments could fall after after (an
// offset is within 26 hours of another) is tried, and the earliest
// moment wins.
func (c *cronSpec) nextAcross(after, limit time.Time) time.Time {
	const span = 26 * time.Hour
	w := naive(after.In(c.loc)).Truncate(time.Minute).Add(-span)
	var best, bestWall time.Time
	for {
		var ok bool
		if w, ok = c.nextWall(w, limit); !ok {
			return best
		}
		if !best.IsZero() && w.After(bestWall.Add(span)) {
			return best
		}
		for _, x := range c.instants(w) {
			if x.After(after) && (best.IsZero() || x.Before(best)) {
				best, bestWall = x, naive(x.In(c.loc))
			}
		}
		w = w.Add(time.Minute)
	}
}

// instants are the moments the matching wall time w stands for, by the
// rules of next: one; none in a gap, where the moment of the jump
// stands instead; the first of two, or both for an every-hour
// expression.
func (c *cronSpec) instants(w time.Time) []time.Time {
	xs, jump := wallInstants(w, c.loc)
	switch {
	case len(xs) == 0:
		return []time.Time{jump}
	case len(xs) == 2 && c.hour&allHours != allHours:
		return xs[:1]
	}
	return xs
}

// nextWall is the first wall time at or after w (a civil time, held in
// UTC) that the expression matches, if one comes before limit.
func (c *cronSpec) nextWall(w, limit time.Time) (time.Time, bool) {
	for !w.After(limit) {
		switch {
		case c.month&(1<<uint(w.Month())) == 0:
			w = time.Date(w.Year(), w.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		case !c.dayMatches(w):
			w = time.Date(w.Year(), w.Month(), w.Day()+1, 0, 0, 0, 0, time.UTC)
		case c.hour&(1<<uint(w.Hour())) == 0:
			w = time.Date(w.Year(), w.Month(), w.Day(), w.Hour()+1, 0, 0, 0, time.UTC)
		case c.minute&(1<<uint(w.Minute())) == 0:
			w = w.Truncate(time.Minute).Add(time.Minute)
		default:
			return w, true
		}
	}
	return time.Time{}, false
}

// dayMatches is cron's rule for the two day fields: when both are
// restricted, either may match; otherwise both must.
func (c *cronSpec) dayMatches(w time.Time) bool {
	dom := c.dom&(1<<uint(w.Day())) != 0
	dow := c.dow&(1<<uint(w.Weekday())) != 0
	if c.dom&starBit != 0 || c.dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// naive is t's wall time as the same numbers in UTC: a civil time that
// can be stepped through without changes of the clocks.
func naive(t time.Time) time.Time {
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, mo, d, h, mi, s, t.Nanosecond(), time.UTC)
}

// wallInstants are the moments at which the wall time w (a civil time,
// held in UTC) is read on the clocks of loc, earliest first: one, two
// when the clocks go back over it, none when they jump over it; then
// jump is the moment of the jump.
func wallInstants(w time.Time, loc *time.Location) (xs []time.Time, jump time.Time) {
	y, mo, d := w.Date()
	h, mi, s := w.Clock()
	t := time.Date(y, mo, d, h, mi, s, w.Nanosecond(), loc)
	cands := []time.Time{t}
	// The other candidates are w read with the offsets of the periods
	// around t's.
	start, end := t.ZoneBounds()
	if !start.IsZero() {
		_, off := start.Add(-time.Nanosecond).Zone()
		cands = append(cands, w.Add(-time.Duration(off)*time.Second).In(loc))
	}
	if !end.IsZero() {
		_, off := end.Zone()
		cands = append(cands, w.Add(-time.Duration(off)*time.Second).In(loc))
	}
	for _, x := range cands {
		if !naive(x).Equal(w) {
			continue
		}
		dup := false
		for _, y := range xs {
			dup = dup || y.Equal(x)
		}
		if !dup {
			xs = append(xs, x)
		}
	}
	if len(xs) == 2 && xs[1].Before(xs[0]) {
		xs[0], xs[1] = xs[1], xs[0]
	}
	if len(xs) > 0 {
		return xs, time.Time{}
	}
	// In a gap: t was read with the offset of one side of the jump and
	// lies on the other; the jump is the bound of t's period between.
	if naive(t).After(w) {
		return nil, start
	}
	return nil, end
}
