package clitest

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"den.dev/den/internal/llm/llmtest"
)

// TestWebSchedules: on a phone, the Schedules view adds a job from its
// form, shows it run (its last run ok, the answer as a note on the
// page), its history (scheduled, started, status, delivery, cost) with
// a link to the run's session; pauses and resumes a job, runs it now,
// and removes it; stops a job's run in progress.
func TestWebSchedules(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "")
	sleep := uniqueSleep(t, 600)
	killOnCleanup(t, "sleep", sleep)
	posts := llmtest.Turn{Text: "Three new posts today.", InputTokens: 100, OutputTokens: 10}
	p := startServe(t, d, llmtest.NewAnthropic(t, posts, posts,
		llmtest.Turn{Calls: []llmtest.Call{sh("toolu_loop", "sleep "+sleep)}}, llmtest.Turn{Text: "never asked"}))
	b := openBrowser(t, p, phoneScreen)
	b.openSidebar(phoneScreen)
	b.run(chromedp.Click(chromedp.CSS(`.schedules-open`)))
	form := `form[aria-label="Add a job"] `
	b.run(chromedp.WaitVisible(chromedp.CSS(form + `textarea[name="prompt"]`)))
	b.shot("schedules-empty")

	// A job in two seconds, with a check.
	b.run(
		chromedp.SendKeys(chromedp.CSS(form+`textarea[name="prompt"]`), "Read my feeds"),
		chromedp.SetValue(chromedp.CSS(form+`select[name="kind"]`), "in"),
	)
	b.exec(`(() => { const s = document.querySelector('form[aria-label="Add a job"] select[name="kind"]');
		s.dispatchEvent(new Event("change", {bubbles: true})) })()`)
	b.exec(`(() => { const i = document.querySelector('form[aria-label="Add a job"] input[name="when"]');
		i.value = "2s"; i.dispatchEvent(new Event("input", {bubbles: true})) })()`)
	b.run(
		chromedp.SendKeys(chromedp.CSS(form+`input[name="name"]`), "Feeds"),
		chromedp.SendKeys(chromedp.CSS(form+`input[name="verify"]`), "true"),
		chromedp.Click(chromedp.CSS(form+`button[type="submit"]`)),
	)
	b.waitText(".schedules .banner", "Job Feeds added.")
	job := `li[aria-label="Job Feeds"] `
	b.waitText(job+"dd.last", "ok")
	// The answer reached the page as a note.
	b.waitText(".toast", "Three new posts today.")
	b.run(chromedp.Click(chromedp.Search(`//li[@aria-label="Job Feeds"]//button[text()="History"]`)))
	row := b.waitText(job+"ol.runs", "delivered")
	if !strings.Contains(row, "ok") || !strings.Contains(row, "verified") || !strings.Contains(row, "$") {
		t.Errorf("the history row: %q", row)
	}
	b.shot("schedules-history")
	if wide := eval[bool](b, `document.documentElement.scrollWidth > innerWidth + 1`); wide {
		t.Error("the page scrolls sideways on a phone")
	}

	// A cron job: paused, resumed, run now.
	b.run(chromedp.SetValue(chromedp.CSS(form+`select[name="kind"]`), "cron"))
	b.exec(`(() => { const s = document.querySelector('form[aria-label="Add a job"] select[name="kind"]');
		s.dispatchEvent(new Event("change", {bubbles: true})) })()`)
	b.run(
		chromedp.SendKeys(chromedp.CSS(form+`textarea[name="prompt"]`), "Morning digest"),
		chromedp.SendKeys(chromedp.CSS(form+`input[name="name"]`), "Digest"),
		chromedp.Click(chromedp.CSS(form+`button[type="submit"]`)),
	)
	digest := `li[aria-label="Job Digest"] `
	b.waitText(digest, "cron 0 7 * * *")
	b.run(chromedp.Click(chromedp.Search(`//li[@aria-label="Job Digest"]//button[text()="Pause"]`)))
	b.waitText(digest+".badge", "paused")
	states := func() map[string]string {
		out := map[string]string{}
		got := p.api(t, "GET", "/api/v1/schedules", nil, http.StatusOK)
		for _, j := range got["schedules"].([]any) {
			m := j.(map[string]any)
			out[m["title"].(string)] = m["state"].(string)
		}
		return out
	}
	if s := states(); s["Digest"] != "paused" {
		t.Errorf("after Pause: %v", s)
	}
	b.run(chromedp.Click(chromedp.Search(`//li[@aria-label="Job Digest"]//button[text()="Resume"]`)))
	waitFor(t, "the job resumed", func() bool { return states()["Digest"] == "active" })
	b.run(chromedp.Click(chromedp.Search(`//li[@aria-label="Job Digest"]//button[text()="Run now"]`)))
	b.waitText(digest+"dd.last", "ok")

	// The history's link opens the run's session.
	b.run(chromedp.Click(chromedp.Search(`//li[@aria-label="Job Feeds"]//a[text()="Open the session"]`)))
	b.waitText(".msg.assistant .md", "Three new posts today.")

	// Removed, after the page asks.
	b.openSidebar(phoneScreen)
	b.run(chromedp.Click(chromedp.CSS(`.schedules-open`)))
	b.exec(`window.confirm = () => true`)
	b.run(chromedp.Click(chromedp.Search(`//li[@aria-label="Job Digest"]//button[text()="Remove"]`)))
	waitFor(t, "the job removed", func() bool { _, ok := states()["Digest"]; return !ok })
	b.waitText(".schedules .banner", "Digest removed.")

	// A run in progress (its agent runs a ten-minute command) has Stop,
	// which ends it: the command ends, and the job's last run failed.
	p.api(t, "POST", "/api/v1/schedules", map[string]any{"in": "1s", "name": "Loop", "prompt": "loop forever"}, http.StatusCreated)
	if pids := WaitProcs(1, "sleep", sleep); len(pids) != 1 {
		t.Fatalf("the run's command never started: %v", pids)
	}
	b.run(chromedp.WaitVisible(chromedp.Search(`//li[@aria-label="Job Loop"]//button[text()="Stop"]`)))
	b.shot("schedules-running")
	b.run(chromedp.Click(chromedp.Search(`//li[@aria-label="Job Loop"]//button[text()="Stop"]`)))
	b.waitText(".schedules .banner", "Loop: run stopped.")
	b.waitText(`li[aria-label="Job Loop"] dd.last`, "failed")
	b.shot("schedules-stopped")
	if left := WaitNoProcs("sleep", sleep); len(left) > 0 {
		t.Errorf("the stopped run's command still runs: %v", left)
	}
	if stop := eval[bool](b, `!!document.evaluate('//li[@aria-label="Job Loop"]//button[text()="Stop"]', document, null,
		XPathResult.BOOLEAN_TYPE, null).booleanValue`); stop {
		t.Error("the stopped run still shows Stop")
	}
}
