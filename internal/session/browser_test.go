package session

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"den.dev/den/internal/browser"
	"den.dev/den/internal/config"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// TestBrowserInRuntime: browser_use drives the session's browser, which
// the faces then reach with Browser (and read beside a running turn);
// execute_js is put to the gate on the page's site: denied with nobody
// to ask, run when approved; the browser goes with the session.
func TestBrowserInRuntime(t *testing.T) {
	sandboxtest.Need(t, "chromium-headless-shell", "chromium-headless-shell")
	page := `data:text/html,<title>Cart</title><button onclick="document.title='Paid'">Pay</button>`
	js := llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_3", Name: "browser_use", Input: `{"action":"execute_js","script":"return document.title"}`}}}
	tr := newTestRuntime(t, nil,
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_1", Name: "browser_use", Input: `{"action":"navigate","url":"` + strings.ReplaceAll(page, `"`, `\"`) + `"}`}}},
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_2", Name: "browser_use", Input: `{"action":"click","index":1}`}}},
		llmtest.Turn{Text: "paid"},
		js, llmtest.Turn{Text: "not allowed"},
		js, llmtest.Turn{Text: "read it"})
	s := tr.session(t)
	ctx := context.Background()
	if _, err := tr.Browser(s.ID); !errors.Is(err, ErrNoBrowser) {
		t.Fatalf("Browser before the session ran: %v", err)
	}
	// The faces read the browser while turns run.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if b, err := tr.Browser(s.ID); err == nil {
				b.Tabs()
				b.UserHasControl()
			}
		}
	})
	sent, err := tr.Send(ctx, s.ID, Message{Text: "pay"}, TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out := <-sent.Done; out.Err != nil {
		t.Fatal(out.Err)
	}
	b, err := tr.Browser(s.ID)
	if err != nil {
		t.Fatal(err)
	}
	if tabs := b.Tabs(); len(tabs) != 1 || tabs[0].Title != "Paid" || !tabs[0].Current {
		t.Errorf("tabs after the click: %+v", tabs)
	}
	if body := string(tr.fake.Requests()[1].Body); !strings.Contains(body, `[1] button \"Pay\"`) {
		t.Errorf("the model did not get the snapshot: %.1500s", body)
	}

	// execute_js asks: nobody to ask denies it, an approval runs it.
	sent, _ = tr.Send(ctx, s.ID, Message{Text: "read the title"}, TurnOptions{Approvals: permission.DenyAsks})
	<-sent.Done
	if body := string(tr.fake.Requests()[4].Body); !strings.Contains(body, "[authorization_denied] Not done: execute_js on data was not allowed") {
		t.Errorf("execute_js unattended: %.3000s", body)
	}
	sent, _ = tr.Send(ctx, s.ID, Message{Text: "read the title"}, TurnOptions{Approvals: permission.AutoApprove})
	<-sent.Done
	if body := string(tr.fake.Requests()[6].Body); !strings.Contains(body, `\"Paid\"`) {
		t.Errorf("execute_js approved: %.3000s", body)
	}
	close(stop)
	wg.Wait()

	// The browser goes with the session (and its computer).
	if err := tr.Delete(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Browser(s.ID); !errors.Is(err, ErrNoBrowser) {
		t.Errorf("Browser after the session was deleted: %v", err)
	}
	if _, err := b.Do(ctx, browser.Action{Name: "snapshot"}); !errors.Is(err, browser.ErrClosed) {
		t.Errorf("the old browser session still acts: %v", err)
	}
}

// TestBrowserOff: an agent with browser = false has no browser_use.
func TestBrowserOff(t *testing.T) {
	off := false
	tr := newTestRuntime(t, &config.Config{Agents: map[string]config.Agent{"default": {Browser: &off}}}, llmtest.Turn{Text: "hi"})
	s := tr.session(t)
	sent, err := tr.Send(context.Background(), s.ID, Message{Text: "hi"}, TurnOptions{})
	if err != nil {
		t.Fatal(err)
	}
	<-sent.Done
	if body := string(tr.fake.Requests()[0].Body); strings.Contains(body, "browser_use") {
		t.Errorf("browser_use offered with browser = false")
	}
}

func TestSiteOf(t *testing.T) {
	for in, want := range map[string]string{
		"https://shop.example.org/cart": "shop.example.org",
		"localhost:8080":                "localhost",
		"example.org":                   "example.org",
		"den://workspace/index.html":    "den",
		"data:text/html,hi":             "data",
		"http://[::1]:8000/":            "::1",
	} {
		if got := siteOf(nil, browser.Action{Name: "navigate", URL: in}); got != want {
			t.Errorf("siteOf(%q) = %q, want %q", in, got, want)
		}
	}
	if got := siteOf(nil, browser.Action{Name: "click"}); got != "" {
		t.Errorf("a click without a page: %q", got)
	}
}
