package hostsvc

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"den.dev/den/internal/schedule"
	"den.dev/den/internal/store"
)

// Schedules is the agent's scheduled jobs, as den-schedule may use
// them: each method acts for the calling agent, on its own jobs only
// (package schedule's Book).
type Schedules interface {
	List(ctx context.Context, agent string) ([]schedule.JobView, error)
	Get(ctx context.Context, agent string, id int64) (schedule.JobView, error)
	Add(ctx context.Context, agent, by string, p schedule.Params) (schedule.JobView, error)
	Edit(ctx context.Context, agent string, id int64, p schedule.Params) (schedule.JobView, error)
	Remove(ctx context.Context, agent string, id int64) error
	Pause(ctx context.Context, agent string, id int64) (schedule.JobView, error)
	Resume(ctx context.Context, agent string, id int64) (schedule.JobView, error)
	RunNow(ctx context.Context, agent string, id int64) (schedule.RunView, error)
	Stop(ctx context.Context, agent string, id, run int64) ([]schedule.RunView, error)
	History(ctx context.Context, agent string, id int64, limit int, before int64) ([]schedule.RunView, error)
}

var _ Schedules = (*schedule.Book)(nil)

const scheduleUsage = "den-schedule list | add WHEN [flags] PROMPT | show ID | edit ID [flags] [PROMPT] | rm ID | pause ID | resume ID | run ID | stop ID | history [ID]"

func (s *Service) parseSchedule(c *Call) (*Plan, *Result) {
	if s.Schedules == nil {
		return nil, unavailable("", "schedules are not available here")
	}
	if len(c.Args) == 0 {
		return nil, invalid("", "want an action: %s", scheduleUsage)
	}
	action := c.Args[0]
	f := newFlags("den-schedule " + action)
	var vals map[string]*string
	var sets map[string]*bool
	if action == "add" || action == "edit" {
		vals, sets = map[string]*string{}, map[string]*bool{}
		for _, fl := range schedule.Flags {
			if fl.Kind == "bool" {
				sets[fl.Name] = f.Bool(fl.Name, fl.Usage)
			} else {
				vals[fl.Name] = f.String(fl.Name, fl.Usage)
			}
		}
	}
	limit := new(int)
	if action == "history" {
		limit = f.Int("limit", "at most this many runs, newest first (20)")
	}
	// The job's id comes first (edit 3 --every 2h), or after the flags.
	rest := c.Args[1:]
	idText := ""
	if action != "add" && action != "list" && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		idText, rest = rest[0], rest[1:]
	}
	args, bad := f.parse(action, rest)
	if bad != nil {
		return nil, bad
	}
	if idText == "" && action != "add" && action != "list" && len(args) > 0 {
		idText, args = args[0], args[1:]
	}
	switch {
	case !f.set["limit"]:
		*limit = 20
	case *limit < 1 || *limit > 1000:
		return nil, invalid(action, "--limit %d: want 1 to 1000", *limit)
	}
	idArg := func() (int64, *Result) {
		if idText == "" {
			return 0, invalid(action, "want %s ID", action)
		}
		id, err := strconv.ParseInt(idText, 10, 64)
		if err != nil || id <= 0 {
			return 0, invalid(action, "%q is not a schedule's id (den-schedule list shows them)", idText)
		}
		return id, nil
	}
	run := func(f func(ctx context.Context) (any, error)) func(ctx context.Context) Result {
		return func(ctx context.Context) Result {
			data, err := f(ctx)
			switch {
			case errors.Is(err, schedule.ErrBadParams):
				return fail(action, CodeInvalidArgs, "%v", err)
			case errors.Is(err, store.ErrNotFound), errors.Is(err, schedule.ErrNotRunning):
				return fail(action, CodeNoData, "%v", err)
			case err != nil:
				return fail(action, CodeInternal, "%v", err)
			}
			return ok(action, data)
		}
	}
	switch action {
	case "list":
		if len(args) > 0 {
			return nil, invalid(action, "list takes no arguments")
		}
		return plan(action, "", "", run(func(ctx context.Context) (any, error) {
			list, err := s.Schedules.List(ctx, c.Agent)
			if list == nil {
				list = []schedule.JobView{}
			}
			return list, err
		}))
	case "history":
		var id int64
		if idText != "" {
			var bad *Result
			if id, bad = idArg(); bad != nil {
				return nil, bad
			}
		}
		if len(args) > 0 {
			return nil, invalid(action, "want history [--limit N] [ID]")
		}
		subject := ""
		if id != 0 {
			subject = strconv.FormatInt(id, 10)
		}
		return plan(action, subject, "", run(func(ctx context.Context) (any, error) {
			runs, err := s.Schedules.History(ctx, c.Agent, id, *limit, 0)
			if runs == nil {
				runs = []schedule.RunView{}
			}
			return runs, err
		}))
	case "show", "rm", "pause", "resume", "run", "stop":
		id, bad := idArg()
		if bad != nil {
			return nil, bad
		}
		if len(args) > 0 {
			return nil, invalid(action, "want %s ID", action)
		}
		subject := strconv.FormatInt(id, 10)
		return plan(action, subject, "", run(func(ctx context.Context) (any, error) {
			switch action {
			case "show":
				return s.Schedules.Get(ctx, c.Agent, id)
			case "rm":
				return map[string]int64{"removed": id}, s.Schedules.Remove(ctx, c.Agent, id)
			case "pause":
				return s.Schedules.Pause(ctx, c.Agent, id)
			case "resume":
				return s.Schedules.Resume(ctx, c.Agent, id)
			case "stop":
				return s.Schedules.Stop(ctx, c.Agent, id, 0)
			}
			return s.Schedules.RunNow(ctx, c.Agent, id)
		}))
	case "add", "edit":
		given := map[string]string{}
		for name, v := range vals {
			if f.set[name] {
				given[name] = *v
			}
		}
		for name, v := range sets {
			if f.set[name] {
				given[name] = strconv.FormatBool(*v)
			}
		}
		var id int64
		if action == "edit" {
			var bad *Result
			if id, bad = idArg(); bad != nil {
				return nil, bad
			}
		}
		if len(args) > 0 {
			if _, dup := given["prompt"]; dup {
				return nil, invalid(action, "give the prompt with --prompt or as the arguments, not both")
			}
			given["prompt"] = strings.Join(args, " ")
			if len(args) == 1 && args[0] == "-" {
				b, err := readAll(c.Stdin, schedule.MaxPrompt)
				if err != nil {
					return nil, invalid(action, "%v", err)
				}
				given["prompt"] = string(b)
			}
		}
		if action == "edit" && len(given) == 0 {
			return nil, invalid(action, "nothing to change: give the flags to change")
		}
		p, err := schedule.ParamsFrom(given)
		if err != nil {
			return nil, invalid(action, "%v", err)
		}
		subject := given["model"]
		if action == "edit" && subject == "" {
			subject = strconv.FormatInt(id, 10)
		}
		return plan(action, subject, scheduleDetail(action, id, given), run(func(ctx context.Context) (any, error) {
			if action == "add" {
				return s.Schedules.Add(ctx, c.Agent, "agent (session "+c.Session+")", p)
			}
			return s.Schedules.Edit(ctx, c.Agent, id, p)
		}))
	}
	return nil, invalid("", "unknown action %q: want list, add, show, edit, rm, pause, resume, run, stop or history", action)
}

// scheduleDetail is what an add or edit will do, for the person asked.
func scheduleDetail(action string, id int64, given map[string]string) string {
	var parts []string
	for _, f := range schedule.Flags {
		v, ok := given[f.Name]
		if !ok || f.Name == "prompt" {
			continue
		}
		parts = append(parts, fmt.Sprintf("--%s %q", f.Name, v))
	}
	if p, ok := given["prompt"]; ok {
		if r := []rune(p); len(r) > 300 {
			p = string(r[:300]) + "…"
		}
		parts = append(parts, fmt.Sprintf("prompt %q", p))
	}
	what := "a new scheduled job"
	if action == "edit" {
		what = fmt.Sprintf("schedule %d", id)
	}
	return what + ": " + strings.Join(parts, " ")
}
