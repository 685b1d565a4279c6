package hostsvc

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/schedule"
	"den.dev/den/internal/store"
)

// TestSchedule: den-schedule adds, lists, shows, edits, pauses,
// resumes, runs and removes the calling agent's jobs, from flags as den
// schedule takes them; what the gate decides on is the action, the
// job's id or the model it asks for, and the exact effect; another
// agent's jobs are "no data", never shown.
func TestSchedule(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "den.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	book := &schedule.Book{Store: st}
	s := &Service{Schedules: book}
	theirs, err := book.Add(context.Background(), "b", "user", schedule.Params{When: schedule.Spec{Every: "1h"}, Prompt: ptr("theirs")})
	if err != nil {
		t.Fatal(err)
	}
	p, bad := parse(t, s, "den-schedule", []string{"add", "--in", "20m", "--model", "openai/x", "--verify", "test -s out", "check", "the", "oven"}, "")
	if bad != nil {
		t.Fatalf("add: %+v", bad)
	}
	if p.Action != "add" || p.Subject != "openai/x" || !strings.Contains(p.Detail, `--verify "test -s out"`) || !strings.Contains(p.Detail, `prompt "check the oven"`) {
		t.Errorf("add plan: %+v", p)
	}
	r := p.Run(context.Background())
	j, ok := r.Data.(schedule.JobView)
	if r.Code != "" || !ok || j.Agent != "a" || j.Prompt != "check the oven" || j.Kind != schedule.At || !strings.HasPrefix(j.CreatedBy, "agent") {
		t.Fatalf("add: %+v", r)
	}
	id := jsonNum(j.ID)
	if r := run(t, s, "den-schedule", []string{"list"}, ""); r.Code != "" || len(r.Data.([]schedule.JobView)) != 1 {
		t.Errorf("list: %+v", r)
	}
	if p, bad := parse(t, s, "den-schedule", []string{"edit", id, "--every", "2h"}, ""); bad != nil || p.Subject != id {
		t.Errorf("edit plan: %+v %+v", p, bad)
	}
	for _, args := range [][]string{{"edit", id, "--every", "2h", "--prompt", "-"}, {"pause", id}, {"resume", id}, {"run", id}, {"history", id}, {"show", id}} {
		stdin := ""
		if args[len(args)-1] == "-" {
			args, stdin = append(args[:len(args)-2], "-"), "from standard input"
		}
		if r := run(t, s, "den-schedule", args, stdin); r.Code != "" {
			t.Errorf("%v: %+v", args, r)
		}
	}
	if r := run(t, s, "den-schedule", []string{"show", id}, ""); r.Data.(schedule.JobView).Prompt != "from standard input" {
		t.Errorf("the prompt from standard input: %+v", r)
	}
	// Stop ends a run in progress, as the agent's; with none, it says so.
	if r := run(t, s, "den-schedule", []string{"stop", id}, ""); r.Code != CodeNoData || !strings.Contains(r.Message, "no run in progress") {
		t.Errorf("stop with nothing running: %+v", r)
	}
	err = st.UpdateSchedules(context.Background(), func(tx *store.ScheduleTx) error {
		queued, err := tx.Runs(j.ID, schedule.Queued)
		if err != nil || len(queued) != 1 {
			return fmt.Errorf("queued runs %v: %v", queued, err)
		}
		u := queued[0]
		u.Status, u.Started = schedule.Running, time.Now()
		return tx.PutRun(u)
	})
	if err != nil {
		t.Fatal(err)
	}
	r = run(t, s, "den-schedule", []string{"stop", id}, "")
	if stopped, ok := r.Data.([]schedule.RunView); r.Code != "" || !ok || len(stopped) != 1 || stopped[0].Status != schedule.Failed || stopped[0].Reason != "stopped by the agent" {
		t.Errorf("stop of a running run: %+v", r)
	}
	other := jsonNum(theirs.ID)
	for _, args := range [][]string{{"show", other}, {"rm", other}, {"pause", other}, {"run", other}, {"stop", other}, {"history", other}, {"edit", other, "--every", "3h"}} {
		r := run(t, s, "den-schedule", args, "")
		if r.Code != CodeNoData || strings.Contains(r.Message, "theirs") {
			t.Errorf("%v of another agent's job: %+v", args, r)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "want an action"},
		{[]string{"explode"}, "unknown action"},
		{[]string{"add", "--every", "1h"}, "no prompt"},
		{[]string{"add", "--every", "1h", "--every", "2h", "x"}, "more than once"},
		{[]string{"add", "--every", "10s", "x"}, "shortest interval"},
		{[]string{"add", "--colour", "red", "x"}, "colour"},
		{[]string{"show", "x"}, "not a schedule's id"},
		{[]string{"edit", id}, "nothing to change"},
		{[]string{"history", "--limit", "0"}, "--limit"},
	} {
		r := run(t, s, "den-schedule", tc.args, "")
		if r.Code != CodeInvalidArgs || !strings.Contains(r.Message, tc.want) {
			t.Errorf("%v: %+v, want %q", tc.args, r, tc.want)
		}
	}
	if r := run(t, s, "den-schedule", []string{"rm", id}, ""); r.Code != "" {
		t.Errorf("rm: %+v", r)
	}
	if r := run(t, &Service{}, "den-schedule", []string{"list"}, ""); r.Code != CodeNotAvailable {
		t.Errorf("without schedules: %+v", r)
	}
}

func ptr[T any](v T) *T { return &v }

func jsonNum(n int64) string { return strconv.FormatInt(n, 10) }
