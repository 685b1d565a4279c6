package server

import (
	"net/http"
	"strconv"

	"den.dev/den/internal/schedule"
	"den.dev/den/internal/server/reply"
)

// scheduleReq is a job's settings in a request: the flags of den
// schedule add and edit by their names (max-turns as max_turns), each
// optional; PATCH changes only those given.
type scheduleReq struct {
	Agent     *string `json:"agent"`
	Name      *string `json:"name"`
	Cron      *string `json:"cron"`
	TZ        *string `json:"tz"`
	Every     *string `json:"every"`
	At        *string `json:"at"`
	In        *string `json:"in"`
	Prompt    *string `json:"prompt"`
	Session   *string `json:"session"`
	Model     *string `json:"model"`
	Budget    *string `json:"budget"`
	MaxTurns  *int    `json:"max_turns"`
	Verify    *string `json:"verify"`
	Deliver   *string `json:"deliver"`
	Speak     *bool   `json:"speak"`
	Approvals *string `json:"approvals"`
	Misfire   *string `json:"misfire"`
	Grace     *string `json:"grace"`
	Jitter    *string `json:"jitter"`
	Retries   *int    `json:"retries"`
}

// params reads the request's settings as den schedule's flags.
func (q scheduleReq) params() (schedule.Params, error) {
	given := map[string]string{}
	for name, v := range map[string]*string{"name": q.Name, "cron": q.Cron, "tz": q.TZ, "every": q.Every, "at": q.At, "in": q.In,
		"prompt": q.Prompt, "session": q.Session, "model": q.Model, "budget": q.Budget, "verify": q.Verify, "deliver": q.Deliver,
		"approvals": q.Approvals, "misfire": q.Misfire, "grace": q.Grace, "jitter": q.Jitter} {
		if v != nil {
			given[name] = *v
		}
	}
	for name, v := range map[string]*int{"max-turns": q.MaxTurns, "retries": q.Retries} {
		if v != nil {
			given[name] = strconv.Itoa(*v)
		}
	}
	if q.Speak != nil {
		given["speak"] = strconv.FormatBool(*q.Speak)
	}
	return schedule.ParamsFrom(given)
}

func (s *Server) book() (*schedule.Book, error) {
	if s.o.Schedules == nil {
		return nil, notFound("schedules are not served here")
	}
	return s.o.Schedules, nil
}

// scheduleID reads the route's {id}.
func scheduleID(r *http.Request) (int64, error) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, notFound("no schedule %q", r.PathValue("id"))
	}
	return id, nil
}

// bookJob is the schedules' book and the job the path names.
func (s *Server) bookJob(r *http.Request) (*schedule.Book, int64, error) {
	b, err := s.book()
	if err != nil {
		return nil, 0, err
	}
	id, err := scheduleID(r)
	return b, id, err
}

func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) error {
	b, err := s.book()
	if err != nil {
		return err
	}
	list, err := b.List(r.Context(), r.URL.Query().Get("agent"))
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, map[string]any{"schedules": list})
}

func (s *Server) addSchedule(w http.ResponseWriter, r *http.Request) error {
	b, err := s.book()
	if err != nil {
		return err
	}
	var req scheduleReq
	if err := decode(r, &req); err != nil {
		return err
	}
	p, err := req.params()
	if err != nil {
		return err
	}
	agent := "default"
	if req.Agent != nil && *req.Agent != "" {
		agent = *req.Agent
	}
	j, err := b.Add(r.Context(), agent, "user", p)
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusCreated, j)
}

func (s *Server) getSchedule(w http.ResponseWriter, r *http.Request) error {
	b, id, err := s.bookJob(r)
	if err != nil {
		return err
	}
	j, err := b.Get(r.Context(), "", id)
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, j)
}

func (s *Server) editSchedule(w http.ResponseWriter, r *http.Request) error {
	b, id, err := s.bookJob(r)
	if err != nil {
		return err
	}
	var req scheduleReq
	if err := decode(r, &req); err != nil {
		return err
	}
	if req.Agent != nil {
		return badRequest("a job's agent cannot change: add a job for the other agent")
	}
	p, err := req.params()
	if err != nil {
		return err
	}
	j, err := b.Edit(r.Context(), "", id, p)
	if err != nil {
		return err
	}
	return reply.JSON(w, http.StatusOK, j)
}

func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	b, id, err := s.bookJob(r)
	if err != nil {
		return err
	}
	if err := b.Remove(r.Context(), "", id); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// scheduleAction answers POST /api/v1/schedules/{id}/{pause,resume,run,stop};
// stop takes ?run= (a run's id) to stop only that run.
func (s *Server) scheduleAction(w http.ResponseWriter, r *http.Request) error {
	b, id, err := s.bookJob(r)
	if err != nil {
		return err
	}
	switch r.PathValue("action") {
	case "pause":
		j, err := b.Pause(r.Context(), "", id)
		if err != nil {
			return err
		}
		return reply.JSON(w, http.StatusOK, j)
	case "resume":
		j, err := b.Resume(r.Context(), "", id)
		if err != nil {
			return err
		}
		return reply.JSON(w, http.StatusOK, j)
	case "run":
		u, err := b.RunNow(r.Context(), "", id)
		if err != nil {
			return err
		}
		return reply.JSON(w, http.StatusAccepted, u)
	case "stop":
		var run int64
		if v := r.URL.Query().Get("run"); v != "" {
			if run, err = strconv.ParseInt(v, 10, 64); err != nil || run < 1 {
				return badRequest("run %q: want a run's id", v)
			}
		}
		runs, err := b.Stop(r.Context(), "", id, run)
		if err != nil {
			return err
		}
		return reply.JSON(w, http.StatusOK, map[string]any{"runs": runs})
	}
	return notFound("no action %q: want pause, resume, run or stop", r.PathValue("action"))
}

// scheduleRuns answers the history of one job ({id}) or of every job
// (?agent= narrows it), newest first: ?limit= (1 to 1000, 100 by
// default) and ?before= (a run's id) page it.
func (s *Server) scheduleRuns(w http.ResponseWriter, r *http.Request) error {
	b, err := s.book()
	if err != nil {
		return err
	}
	var id int64
	if r.PathValue("id") != "" {
		if id, err = scheduleID(r); err != nil {
			return err
		}
	}
	q := r.URL.Query()
	limit, before := 100, int64(0)
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			return badRequest("limit %q: want a number from 1 to 1000", v)
		}
		limit = n
	}
	if v := q.Get("before"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 1 {
			return badRequest("before %q: want a run's id", v)
		}
		before = n
	}
	runs, err := b.History(r.Context(), q.Get("agent"), id, limit+1, before)
	if err != nil {
		return err
	}
	more := len(runs) > limit
	if more {
		runs = runs[:limit]
	}
	return reply.JSON(w, http.StatusOK, map[string]any{"runs": runs, "more": more})
}
