package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/schedule"
	"den.dev/den/internal/store"
)

// TestScheduleRoutes: a job is added, read, listed, changed, paused,
// resumed, run now and removed over the API; its runs are listed; bad
// settings are a 400 that says why, an unknown job a 404.
func TestScheduleRoutes(t *testing.T) {
	var book *schedule.Book
	a := newAPI(t, "", func(o *Options) {
		book = &schedule.Book{Store: o.Store}
		o.Schedules = book
	})
	decodeJob := func(body string) schedule.JobView {
		t.Helper()
		var j schedule.JobView
		if err := json.Unmarshal([]byte(body), &j); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		return j
	}
	code, body := a.do("POST", "/api/v1/schedules", `{"name": "digest", "cron": "0 7 * * *", "tz": "Europe/Berlin",
		"prompt": "read my feeds", "verify": "test -s digest.md", "max_turns": 20, "speak": true, "misfire": "skip"}`)
	if code != http.StatusCreated {
		t.Fatalf("add: %d %s", code, body)
	}
	j := decodeJob(body)
	if j.ID == 0 || j.Agent != "default" || j.When != "cron 0 7 * * * (Europe/Berlin)" || j.Jitter != "30s" || !j.Speak ||
		j.MaxTurns != 20 || j.Misfire != "skip" || j.State != "active" || j.NextRun == nil || j.CreatedBy != "user" {
		t.Errorf("added %+v", j)
	}
	path := "/api/v1/schedules/" + strings.TrimSpace(jsonNumber(j.ID))
	code, body = a.do("PATCH", path, `{"every": "2h", "prompt": "read them again", "speak": false}`)
	if code != http.StatusOK {
		t.Fatalf("edit: %d %s", code, body)
	}
	if e := decodeJob(body); e.Kind != "every" || e.Spec != "2h" || e.Prompt != "read them again" || e.Speak || e.Jitter != "0s" || e.Name != "digest" {
		t.Errorf("edited %+v", e)
	}
	if code, body = a.do("POST", path+"/pause", ""); code != http.StatusOK || decodeJob(body).State != "paused" {
		t.Errorf("pause: %d %s", code, body)
	}
	if code, body = a.do("POST", path+"/resume", ""); code != http.StatusOK || decodeJob(body).State != "active" {
		t.Errorf("resume: %d %s", code, body)
	}
	code, body = a.do("POST", path+"/run", "")
	if code != http.StatusAccepted || !strings.Contains(body, `"status":"queued"`) || !strings.Contains(body, `"cause":"manual"`) {
		t.Errorf("run now: %d %s", code, body)
	}
	for _, runs := range []string{path + "/runs", "/api/v1/schedules/runs?agent=default"} {
		code, body = a.do("GET", runs, "")
		var got struct {
			Runs []schedule.RunView `json:"runs"`
			More bool               `json:"more"`
		}
		if code != http.StatusOK || json.Unmarshal([]byte(body), &got) != nil || len(got.Runs) != 1 || got.Runs[0].Status != "queued" {
			t.Errorf("%s: %d %s", runs, code, body)
		}
	}
	code, body = a.do("GET", "/api/v1/schedules", "")
	if code != http.StatusOK || !strings.Contains(body, `"title":"digest"`) || !strings.Contains(body, `"state":"running"`) {
		t.Errorf("list: %d %s", code, body)
	}
	for _, tc := range []struct {
		method, path, body string
		code               int
		want               string
	}{
		{"POST", "/api/v1/schedules", `{"prompt": "x"}`, 400, "say when"},
		{"POST", "/api/v1/schedules", `{"every": "10s", "prompt": "x"}`, 400, "shortest interval"},
		{"POST", "/api/v1/schedules", `{"cron": "0 7 * * *", "tz": "Nowhere/Else", "prompt": "x"}`, 400, "IANA"},
		{"POST", "/api/v1/schedules", `{"every": "1h", "prompt": "x", "colour": "red"}`, 400, "colour"},
		{"PATCH", path, `{"agent": "other"}`, 400, "agent cannot change"},
		{"GET", "/api/v1/schedules/999", "", 404, "no schedule 999"},
		{"GET", "/api/v1/schedules/x", "", 404, "no schedule"},
		{"POST", path + "/explode", "", 404, "want pause, resume, run or stop"},
		{"GET", path + "/runs?limit=0", "", 400, "limit"},
	} {
		if code, body := a.do(tc.method, tc.path, tc.body); code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s %s: %d %s, want %d %q", tc.method, tc.path, tc.body, code, body, tc.code, tc.want)
		}
	}
	if code, body = a.do("DELETE", path, ""); code != http.StatusNoContent {
		t.Errorf("delete: %d %s", code, body)
	}
	if code, _ = a.do("GET", path, ""); code != http.StatusNotFound {
		t.Errorf("get after delete: %d", code)
	}
	// Each change stored its event for the faces and the scheduler.
	evs, _ := a.st.Events(t.Context(), "", 0, 0)
	var changes []string
	for _, e := range evs {
		if e.Type == "schedule" {
			var c schedule.Changed
			json.Unmarshal(e.Data, &c)
			changes = append(changes, c.Change)
		}
	}
	if got := strings.Join(changes, " "); got != "added changed paused resumed run removed" {
		t.Errorf("changes told: %s", got)
	}
	// Without a book the routes are not served.
	plain := newAPI(t, "", nil)
	if code, _ := plain.do("GET", "/api/v1/schedules", ""); code != http.StatusNotFound {
		t.Errorf("no book: %d", code)
	}
}

func jsonNumber(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestScheduleStop: POST /api/v1/schedules/{id}/stop stops the job's
// run in progress (?run= only that run) and answers the stopped runs,
// failed, "stopped by the user", with no retry; a job with no run in
// progress is a 409 that says so, a run id that is not one a 400.
func TestScheduleStop(t *testing.T) {
	a := newAPI(t, "", func(o *Options) { o.Schedules = &schedule.Book{Store: o.Store} })
	var j schedule.JobView
	a.call("POST", "/api/v1/schedules", `{"name": "loop", "every": "1h", "prompt": "loop", "retries": 2}`, http.StatusCreated, &j)
	path := fmt.Sprintf("/api/v1/schedules/%d", j.ID)
	if msg := a.fails("POST", path+"/stop", "", http.StatusConflict, "not_running"); !strings.Contains(msg, "no run in progress") {
		t.Errorf("stop with nothing running: %q", msg)
	}
	// A run queued, then claimed as den serve's scheduler claims it.
	var queued schedule.RunView
	a.call("POST", path+"/run", "", http.StatusAccepted, &queued)
	a.fails("POST", path+"/stop", "", http.StatusConflict, "not_running")
	err := a.st.UpdateSchedules(t.Context(), func(tx *store.ScheduleTx) error {
		u, err := tx.Run(queued.ID)
		if err != nil {
			return err
		}
		u.Status, u.Started, u.Owner = schedule.Running, time.Now(), "den serve pid 1"
		return tx.PutRun(u)
	})
	if err != nil {
		t.Fatal(err)
	}
	a.fails("POST", fmt.Sprintf("%s/stop?run=%d", path, queued.ID+1), "", http.StatusConflict, "not_running")
	a.fails("POST", path+"/stop?run=x", "", http.StatusBadRequest, "bad_request")
	var got struct {
		Runs []schedule.RunView `json:"runs"`
	}
	a.call("POST", fmt.Sprintf("%s/stop?run=%d", path, queued.ID), "", http.StatusOK, &got)
	if len(got.Runs) != 1 || got.Runs[0].ID != queued.ID || got.Runs[0].Status != schedule.Failed ||
		got.Runs[0].Reason != "stopped by the user" || got.Runs[0].Ended == nil || got.Runs[0].RetryAt != nil ||
		got.Runs[0].Delivery != schedule.DeliveryPending {
		t.Errorf("stopped: %+v", got.Runs)
	}
	a.fails("POST", path+"/stop", "", http.StatusConflict, "not_running")
}
