package clitest

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/sandbox/sandboxtest"
	"den.dev/den/internal/schedule"
	"den.dev/den/internal/webpush/webpushtest"
)

// scheduleRun runs den schedule with args (and --json) and decodes what
// it prints into out.
func scheduleJSON(t *testing.T, d *Den, out any, args ...string) {
	t.Helper()
	r := d.MustRun(append(append([]string{"schedule"}, args...), "--json")...)
	if err := json.Unmarshal([]byte(r.Stdout), out); err != nil {
		t.Fatalf("den schedule %s: %v\n%s", strings.Join(args, " "), err, r)
	}
}

// addJob adds a job with den schedule add and returns it.
func addJob(t *testing.T, d *Den, args ...string) schedule.JobView {
	t.Helper()
	var j schedule.JobView
	scheduleJSON(t, d, &j, append([]string{"add"}, args...)...)
	return j
}

// history is den schedule history ID, oldest first.
func history(t *testing.T, d *Den, id int64) []schedule.RunView {
	t.Helper()
	var runs []schedule.RunView
	scheduleJSON(t, d, &runs, "history", jsonID(id), "--limit", "1000")
	for i, j := 0, len(runs)-1; i < j; i, j = i+1, j-1 {
		runs[i], runs[j] = runs[j], runs[i]
	}
	return runs
}

func jsonID(id int64) string {
	b, _ := json.Marshal(id)
	return string(b)
}

// waitHistory reads the job's history until done says it is what the
// test waits for, or fails after a minute.
func waitHistory(t *testing.T, d *Den, id int64, what string, done func([]schedule.RunView) bool) []schedule.RunView {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		h := history(t, d, id)
		if done(h) {
			return h
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(h, "", "  ")
			t.Fatalf("%s: never happened; history:\n%s", what, b)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func final(h []schedule.RunView) bool {
	if len(h) == 0 {
		return false
	}
	last := h[len(h)-1]
	return last.Status != schedule.Queued && last.Status != schedule.Running && last.RetryAt == nil &&
		last.Delivery != schedule.DeliveryPending
}

// TestScheduleEndToEnd: jobs added with den schedule while den serve
// runs start at their time: one whose agent ends its turn and whose
// verification passes is ok, its answer delivered to the faces (an
// event on /api/v1/events) with the session, cost and delivery in its
// history; one whose verification fails is failed, with the exit code,
// and the failure is delivered; den-schedule in the computer schedules
// a job of the agent's own that runs too.
func TestScheduleEndToEnd(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "")
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Text: "Your digest: three items.", InputTokens: 1000, OutputTokens: 100},
		llmtest.Turn{Text: "Wrote nothing.", InputTokens: 1000, OutputTokens: 100},
		llmtest.Turn{Calls: []llmtest.Call{sh("toolu_s", "den-schedule add --in 2s --name self 'say hi to yourself'")}},
		llmtest.Turn{Text: "Scheduled."},
		llmtest.Turn{Text: "hi, self"})
	p := startServe(t, d, fake)
	evs, stop := p.stream(t, "/api/v1/events", "")
	defer stop()

	ok := addJob(t, d, "--in", "1s", "--name", "digest", "--verify", "echo checked", "read my feeds")
	got := until(t, evs, "schedule_delivery", "")
	delivery := got[len(got)-1]
	if delivery.Data["kind"] != "result" || delivery.Data["body"] != "Your digest: three items." || delivery.Data["title"] != "digest" ||
		delivery.Data["status"] != "pending" || delivery.Data["session"] == "" {
		t.Errorf("the answer's event: %s", delivery.Raw)
	}
	h := waitHistory(t, d, ok.ID, "the run of the digest", final)
	u := h[0]
	if len(h) != 1 || u.Status != schedule.OK || u.Reason != "verified" || u.Session != delivery.Data["session"] || u.CostUSD <= 0 ||
		u.Started == nil || u.Ended == nil || u.Delivery != schedule.DeliveryDelivered || u.Answer != "Your digest: three items." {
		t.Errorf("the digest's history: %+v", h)
	}
	sess := p.api(t, "GET", "/api/v1/sessions/"+u.Session, nil, http.StatusOK)
	if sess["title"] != "digest" || sess["status"] != "idle" {
		t.Errorf("the run's session: %v %v", sess["title"], sess["status"])
	}

	failing := addJob(t, d, "--in", "1s", "--verify", "echo no report >&2; exit 3", "write the report")
	h = waitHistory(t, d, failing.ID, "the failing verification", final)
	if len(h) != 1 || h[0].Status != schedule.Failed || !strings.Contains(h[0].Reason, "the verification exited 3: no report") {
		t.Errorf("a failing verification: %+v", h)
	}
	for {
		got = until(t, evs, "schedule_delivery", "")
		if e := got[len(got)-1]; e.Data["kind"] == "failure" {
			if !strings.Contains(e.Data["body"].(string), "exited 3") {
				t.Errorf("the failure's event: %s", e.Raw)
			}
			break
		}
	}

	// The agent schedules itself from its computer.
	id := p.api(t, "POST", "/api/v1/sessions", map[string]any{"agent": "default"}, http.StatusCreated)["id"].(string)
	p.api(t, "POST", "/api/v1/sessions/"+id+"/messages", map[string]any{"text": "schedule yourself"}, http.StatusAccepted)
	var self schedule.JobView
	deadline := time.Now().Add(60 * time.Second)
	for self.ID == 0 {
		var list []schedule.JobView
		scheduleJSON(t, d, &list, "list", "--all")
		for _, j := range list {
			if j.Name == "self" {
				self = j
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("den-schedule made no job: %v\n%s", list, p.stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if self.Agent != "default" || !strings.HasPrefix(self.CreatedBy, "agent (session "+id) {
		t.Errorf("the agent's job: %+v", self)
	}
	h = waitHistory(t, d, self.ID, "the agent's own job", final)
	if len(h) != 1 || h[0].Status != schedule.OK || h[0].Answer != "hi, self" {
		t.Errorf("the agent's job ran: %+v", h)
	}
	if n := len(fake.Requests()); n != 5 {
		t.Errorf("%d model requests, want 5: nothing ran twice", n)
	}
}

// TestScheduleDeliveryRetried: a job's answer goes to the subscribed
// browsers with Web Push; a push service that refuses it is tried again
// (the browser that took it is not), and the delivery is delivered once
// every browser has it; one that keeps refusing makes the delivery
// failed after the last retry, which the faces are told.
func TestScheduleDeliveryRetried(t *testing.T) {
	svc := webpushtest.NewService(t)
	certs := filepath.Join(t.TempDir(), "push-ca.pem")
	if err := os.WriteFile(certs, svc.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDen(t)
	serveConfig(t, d, "[schedule]\ndelivery_retry = [\"1s\", \"1s\"]\n")
	fake := llmtest.NewAnthropic(t, llmtest.Turn{Text: "It is time."})
	p := startServe(t, d, fake, "SSL_CERT_FILE="+certs)
	info := p.api(t, "GET", "/api/v1/push", nil, http.StatusOK)
	key, _ := base64.RawURLEncoding.DecodeString(info["public_key"].(string))
	subscribe := func() *webpushtest.Browser {
		b := svc.Subscribe(key)
		p256dh, auth := b.Keys()
		p.api(t, "POST", "/api/v1/push/subscriptions", map[string]any{"endpoint": b.Endpoint,
			"keys": map[string]string{"p256dh": p256dh, "auth": auth}}, http.StatusCreated)
		return b
	}
	phone, laptop := subscribe(), subscribe()
	refuse := webpushtest.Answer{Status: 403, Body: `{"reason":"BadJwtToken"}`}
	laptop.Answer(refuse)

	j := addJob(t, d, "--in", "1s", "--name", "wake up", "wake me")
	h := waitHistory(t, d, j.ID, "the delivery after a retry", final)
	if h[0].Status != schedule.OK || h[0].Delivery != schedule.DeliveryDelivered || h[0].DeliveryDetail != "Web Push to 2 browser(s)" {
		t.Errorf("delivered on the second attempt: %+v", h[0])
	}
	// Nothing else comes: the run's session's own "done" is not pushed
	// beside the job's message.
	time.Sleep(time.Second)
	for name, b := range map[string]*webpushtest.Browser{"phone": phone, "laptop": laptop} {
		var took int
		for len(b.Received()) > 0 {
			r := <-b.Received()
			if r.Status == http.StatusCreated {
				took++
				var n map[string]string
				json.Unmarshal(r.Payload, &n)
				if n["title"] != "wake up" || n["body"] != "It is time." || n["kind"] != "schedule" {
					t.Errorf("%s got %v", name, n)
				}
			}
		}
		if took != 1 {
			t.Errorf("%s took the message %d times, want once", name, took)
		}
	}

	evs, stop := p.stream(t, "/api/v1/events", "")
	defer stop()
	laptop.Answer(refuse, refuse, refuse)
	j = addJob(t, d, "--in", "1s", "--name", "never heard", "wake me again")
	h = waitHistory(t, d, j.ID, "the delivery failing for good", final)
	if h[0].Status != schedule.OK || h[0].Delivery != schedule.DeliveryFailed || !strings.Contains(h[0].DeliveryError, "403") {
		t.Errorf("failed for good: %+v", h[0])
	}
	for {
		got := until(t, evs, "schedule_delivery", "")
		if e := got[len(got)-1]; e.Data["status"] == "failed" {
			if e.Data["title"] != "never heard" || !strings.Contains(e.Data["error"].(string), "403") {
				t.Errorf("the failure's report: %s", e.Raw)
			}
			break
		}
	}
	list := d.MustRun("schedule", "list").Stdout
	if !strings.Contains(list, "(not delivered)") {
		t.Errorf("den schedule list does not say the delivery failed:\n%s", list)
	}
}

// TestScheduleSpeaks: a job with --speak has its answer spoken into an
// audio file of its session, which the faces are told of (a speech
// event), and its delivery says so.
func TestScheduleSpeaks(t *testing.T) {
	sandboxtest.Need(t, "espeak-ng", "espeak-ng")
	d := newDen(t)
	serveConfig(t, d, "")
	p := startServe(t, d, llmtest.NewAnthropic(t, llmtest.Turn{Text: "Good morning."}))
	j := addJob(t, d, "--in", "1s", "--speak", "say good morning")
	h := waitHistory(t, d, j.ID, "the spoken delivery", final)
	if h[0].Delivery != schedule.DeliveryDelivered || !strings.Contains(h[0].DeliveryDetail, "spoken") {
		t.Fatalf("delivery %+v", h[0])
	}
	evs, stop := p.stream(t, "/api/v1/sessions/"+h[0].Session+"/events", "")
	defer stop()
	got := until(t, evs, "speech", "")
	path, _ := got[len(got)-1].Data["path"].(string)
	if !strings.HasPrefix(path, "/den/attachments/speech-") || got[len(got)-1].Data["text"] != "Good morning." {
		t.Errorf("speech event %s", got[len(got)-1].Raw)
	}
	name := strings.TrimPrefix(path, "/den/attachments/")
	if fi, err := os.Stat(filepath.Join(d.AgentDir("default"), "sessions", h[0].Session, "attachments", name)); err != nil || fi.Size() == 0 {
		t.Errorf("the audio file: %v %v", fi, err)
	}
}

// TestScheduleStopped: den serve stopped (SIGTERM) during a run lets
// the run's command finish, records the run interrupted, and the next
// den runs it again, once.
func TestScheduleStopped(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "")
	sleep := uniqueSleep(t, 2)
	p := startServe(t, d, llmtest.NewAnthropic(t, llmtest.Turn{Calls: []llmtest.Call{sh("toolu_s", "sleep "+sleep)}}))
	j := addJob(t, d, "--in", "1s", "stop me")
	WaitProcs(1, "sleep", sleep)
	p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("den serve: %v\n%s", err, p.stderr)
	}
	if h := history(t, d, j.ID); len(h) != 1 || h[0].Status != schedule.Interrupted || h[0].RetryAt == nil {
		t.Fatalf("after the stop: %+v", h)
	}
	fake := llmtest.NewAnthropic(t, llmtest.Turn{Text: "done"})
	startServe(t, d, fake)
	h := waitHistory(t, d, j.ID, "the retry", final)
	if len(h) != 2 || h[1].Status != schedule.OK || h[1].Attempt != 2 || len(fake.Requests()) != 1 {
		t.Errorf("history %+v", h)
	}
}

// TestScheduleKill9: den serve killed with SIGKILL just before, during
// and just after a job's time, then started again: each time is
// accounted for once, nothing runs twice, and nothing is lost.
//   - before: the time passes while den is down (past the grace
//     window): the next den runs it once, late, and says so;
//   - during: the run is recorded interrupted and run again (attempt
//     2), once;
//   - after: the run that ended stays the only one, delivered.
func TestScheduleKill9(t *testing.T) {
	kill := func(p *daemonProc) {
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
	}
	t.Run("before", func(t *testing.T) {
		d := newDen(t)
		serveConfig(t, d, "")
		p := startServe(t, d, llmtest.NewAnthropic(t))
		at := time.Now().Add(3 * time.Second).Truncate(time.Second)
		j := addJob(t, d, "--at", at.Format(time.RFC3339), "--grace", "1s", "while you were away")
		kill(p)
		time.Sleep(time.Until(at.Add(3 * time.Second)))
		fake := llmtest.NewAnthropic(t, llmtest.Turn{Text: "caught up"})
		startServe(t, d, fake)
		h := waitHistory(t, d, j.ID, "the catch-up", final)
		if len(h) != 1 || h[0].Status != schedule.OK || h[0].Cause != schedule.CauseCatchUp || h[0].Late == "" ||
			!strings.Contains(h[0].Reason, "den was not running") || !h[0].Slot.Equal(at) {
			t.Errorf("history %+v", h)
		}
		if n := len(fake.Requests()); n != 1 || !strings.Contains(string(fake.Requests()[0].Body), "late") {
			t.Errorf("%d requests; the agent should be told the run is late", n)
		}
	})
	t.Run("during", func(t *testing.T) {
		d := newDen(t)
		serveConfig(t, d, "")
		sleep := uniqueSleep(t, 60)
		killOnCleanup(t, "sleep", sleep)
		p := startServe(t, d, llmtest.NewAnthropic(t, llmtest.Turn{Calls: []llmtest.Call{sh("toolu_long", "sleep "+sleep)}}))
		evs, stop := p.stream(t, "/api/v1/events", "")
		j := addJob(t, d, "--in", "1s", "interrupt me")
		until(t, evs, "schedule_run", "running")
		WaitProcs(1, "sleep", sleep)
		stop()
		kill(p)
		WaitNoProcs("sleep", sleep)
		fake := llmtest.NewAnthropic(t, llmtest.Turn{Text: "done this time"})
		startServe(t, d, fake)
		h := waitHistory(t, d, j.ID, "the retry", final)
		if len(h) != 2 || h[0].Status != schedule.Interrupted || h[0].Reason != "den stopped during the run" ||
			h[1].Status != schedule.OK || h[1].Attempt != 2 || h[1].Cause != schedule.CauseRetry || !h[1].Slot.Equal(h[0].Slot) {
			t.Errorf("history %+v", h)
		}
		if n := len(fake.Requests()); n != 1 {
			t.Errorf("%d requests after the restart, want 1", n)
		}
	})
	t.Run("after", func(t *testing.T) {
		d := newDen(t)
		serveConfig(t, d, "")
		first := llmtest.NewAnthropic(t, llmtest.Turn{Text: "ran once"})
		p := startServe(t, d, first)
		j := addJob(t, d, "--in", "1s", "once only")
		waitHistory(t, d, j.ID, "the run", func(h []schedule.RunView) bool { return len(h) == 1 && h[0].Status == schedule.OK })
		kill(p)
		again := llmtest.NewAnthropic(t, llmtest.Turn{Text: "ran twice"})
		startServe(t, d, again)
		h := waitHistory(t, d, j.ID, "the delivery", final)
		time.Sleep(2 * time.Second) // a second run would have started by now
		h = history(t, d, j.ID)
		if len(h) != 1 || h[0].Answer != "ran once" || h[0].Delivery != schedule.DeliveryDelivered || len(again.Requests()) != 0 {
			t.Errorf("history %+v; %d requests after the restart", h, len(again.Requests()))
		}
	})
}

// BenchmarkScheduleDueStart: with den serve and a fake provider, how
// late a job due two seconds after it was added starts (its run's start
// less its due time, as its history records them; ms-late), and how
// long until the model is asked (ms-to-model: the computer starts in
// between).
func BenchmarkScheduleDueStart(b *testing.B) {
	sandboxtest.Need(b, "bwrap", "bubblewrap")
	sandboxtest.Need(b, "busybox", "busybox-static")
	d := New(b, denBin)
	serveConfig(b, d, "")
	fake := llmtest.NewAnthropic(b, llmtest.Turn{Text: "on time"})
	p := startServe(b, d, fake)
	var late, toModel time.Duration
	n := 0
	for b.Loop() {
		due := time.Now().Add(2 * time.Second)
		var j schedule.JobView
		b.StopTimer()
		r := d.MustRun("schedule", "add", "--at", due.Format(time.RFC3339Nano), "--tz", "UTC", "--json", "bench")
		if err := json.Unmarshal([]byte(r.Stdout), &j); err != nil {
			b.Fatal(err)
		}
		before := len(fake.Requests())
		for len(fake.Requests()) == before {
			time.Sleep(time.Millisecond)
		}
		asked := time.Now()
		var h []schedule.RunView
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			r := d.MustRun("schedule", "history", jsonID(j.ID), "--json")
			json.Unmarshal([]byte(r.Stdout), &h)
			if len(h) == 1 && h[0].Started != nil {
				break
			}
			if time.Now().After(deadline) {
				b.Fatalf("no start: %s", p.stderr)
			}
		}
		late += h[0].Started.Sub(h[0].Due)
		toModel += asked.Sub(h[0].Due)
		n++
		b.StartTimer()
	}
	b.ReportMetric(float64(late.Microseconds())/float64(n)/1000, "ms-late")
	b.ReportMetric(float64(toModel.Microseconds())/float64(n)/1000, "ms-to-model")
}

// TestScheduleStopRun: den schedule stop, a process apart from den
// serve, stops a job's run whose agent runs a command that would run
// for ten minutes: den serve cancels the turn (the command ends, the
// session runs no turn), the run is failed, "stopped by the user", with
// what the turn cost, and is not retried; its delivery says it was
// stopped. With no run in progress, den schedule stop fails and says
// so.
func TestScheduleStopRun(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "")
	sleep := uniqueSleep(t, 600)
	killOnCleanup(t, "sleep", sleep)
	fake := llmtest.NewAnthropic(t, llmtest.Turn{Calls: []llmtest.Call{sh("toolu_loop", "sleep "+sleep)}, InputTokens: 1000, OutputTokens: 100},
		llmtest.Turn{Text: "never asked"})
	p := startServe(t, d, fake)
	evs, stop := p.stream(t, "/api/v1/events", "")
	defer stop()
	j := addJob(t, d, "--in", "1s", "--name", "loop", "--retries", "2", "loop forever")
	if r := d.Run("schedule", "stop", "loop"); r.Code == 0 || !strings.Contains(r.Stderr, "has no run in progress") {
		t.Errorf("den schedule stop before the run: %s", r)
	}
	if pids := WaitProcs(1, "sleep", sleep); len(pids) != 1 {
		t.Fatalf("the run's command never started: %v\n%s", pids, p.stderr)
	}

	r := d.MustRun("schedule", "stop", "loop")
	if !strings.Contains(r.Stdout, "stopped run") || !strings.Contains(r.Stdout, "den serve cancels its turn") {
		t.Errorf("den schedule stop: %s", r)
	}
	if left := WaitNoProcs("sleep", sleep); len(left) > 0 {
		t.Errorf("the stopped run's command still runs: %v", left)
	}
	h := waitHistory(t, d, j.ID, "the stopped run's cost", func(h []schedule.RunView) bool {
		return final(h) && h[0].CostUSD > 0
	})
	u := h[0]
	if len(h) != 1 || u.Status != schedule.Failed || u.Reason != "stopped by the user" || u.RetryAt != nil || u.Session == "" ||
		u.Delivery != schedule.DeliveryDelivered {
		t.Errorf("the stopped run: %+v", h)
	}
	sess := p.api(t, "GET", "/api/v1/sessions/"+u.Session, nil, http.StatusOK)
	if sess["running"] != false || sess["status"] != "interrupted" {
		t.Errorf("the stopped run's session: running %v, status %v", sess["running"], sess["status"])
	}
	for {
		got := until(t, evs, "schedule_delivery", "")
		if e := got[len(got)-1]; e.Data["kind"] == "failure" {
			if e.Data["title"] != "loop stopped" || !strings.Contains(e.Data["body"].(string), "stopped by the user") {
				t.Errorf("the stop's delivery: %s", e.Raw)
			}
			break
		}
	}
	if r := d.Run("schedule", "stop", jsonID(j.ID)); r.Code == 0 || !strings.Contains(r.Stderr, "has no run in progress") {
		t.Errorf("den schedule stop after the stop: %s", r)
	}
	if n := len(fake.Requests()); n != 1 {
		t.Errorf("%d model requests, want 1: the turn went on, or the run was retried", n)
	}
}
