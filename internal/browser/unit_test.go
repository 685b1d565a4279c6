package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
)

func TestActionCheck(t *testing.T) {
	for _, c := range []struct {
		a    Action
		want string // part of the message; "" for a valid action
	}{
		{Action{Name: "navigate", URL: "https://example.com"}, ""},
		{Action{Name: "fly"}, `unknown action "fly"`},
		{Action{Name: "navigate"}, "navigate needs url"},
		{Action{Name: "type", Index: 3}, "type needs text"},
		{Action{Name: "click", Index: 1, Selector: "#a"}, "not both"},
		{Action{Name: "click", Index: -1}, "positive"},
		{Action{Name: "scroll", Direction: "sideways"}, `direction "sideways"`},
		{Action{Name: "scroll", Direction: "up", Amount: 300}, ""},
		{Action{Name: "scroll_and_collect", MaxScrolls: 21}, "max_scrolls"},
		{Action{Name: "wait_for"}, "one of text"},
		{Action{Name: "wait_for", Text: "a", Settled: true}, "one of text"},
		{Action{Name: "wait_for", Selector: "#x"}, ""},
		{Action{Name: "set_viewport", Width: 50, Height: 600}, "set_viewport needs"},
		{Action{Name: "set_viewport", Reset: true}, ""},
		{Action{Name: "switch_tab"}, "switch_tab needs tab"},
		{Action{Name: "upload", Index: 2}, "upload needs path"},
		{Action{Name: "set_cookies"}, "set_cookies needs cookies"},
		{Action{Name: "execute_js"}, "execute_js needs script"},
		{Action{Name: "click", Index: 1, Dialog: "maybe"}, "dialog must be"},
		{Action{Name: "snapshot", Page: 2}, ""},
	} {
		got := c.a.check()
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q, want %q", c.a, got, c.want)
		}
	}
	// Every action has a help line and only known parameters.
	fields := map[string]bool{}
	for _, f := range strings.Split("action index selector url text key value submit append direction amount item_selector max_scrolls max_items gone settled page offset full_page tab path cookies keywords all script width height mobile reset dialog prompt_text timeout", " ") {
		fields[f] = true
	}
	for _, a := range Actions() {
		if a.Summary == "" {
			t.Errorf("%s has no summary", a.Name)
		}
		for _, p := range append(a.Params, a.Required...) {
			if !fields[p] {
				t.Errorf("%s names an unknown parameter %q", a.Name, p)
			}
		}
	}
}

func TestActionJSON(t *testing.T) {
	var a Action
	if err := json.Unmarshal([]byte(`{"action":"click","index":4,"timeout":2.5}`), &a); err != nil {
		t.Fatal(err)
	}
	if a.Name != "click" || a.Index != 4 || a.Timeout != 2500*time.Millisecond {
		t.Errorf("decoded %+v", a)
	}
	b, _ := json.Marshal(a)
	var back Action
	json.Unmarshal(b, &back)
	if back.Timeout != a.Timeout || back.Index != 4 {
		t.Errorf("round trip: %s → %+v", b, back)
	}
}

func TestCookieJSON(t *testing.T) {
	var cs []Cookie
	err := json.Unmarshal([]byte(`[
		{"name":"a","value":"1","http_only":true,"same_site":"Lax","expires":100},
		{"name":"b","value":"2","httpOnly":true,"sameSite":"Strict","expirationDate":200.5}]`), &cs)
	if err != nil {
		t.Fatal(err)
	}
	want := []Cookie{
		{Name: "a", Value: "1", HTTPOnly: true, SameSite: "Lax", Expires: 100},
		{Name: "b", Value: "2", HTTPOnly: true, SameSite: "Strict", Expires: 200.5},
	}
	if !slices.Equal(cs, want) {
		t.Errorf("got %+v", cs)
	}
}

func TestCookieEnv(t *testing.T) {
	got := string(CookieEnv([]Cookie{{Name: "session-id", Value: "it's"}, {Name: "x", Value: "$(rm -rf /)"}}))
	want := "export COOKIE_SESSION_ID='it'\\''s'\n" +
		"export COOKIE_X='$(rm -rf /)'\n" +
		"export COOKIE_HEADER='session-id=it'\\''s; x=$(rm -rf /)'\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestCards(t *testing.T) {
	for _, c := range []struct {
		in, want string
	}{
		{"card 4111 1111 1111 1111 ok", "card •••• 1111 (card number hidden) ok"},
		{"4242-4242-4242-4242", "•••• 4242 (card number hidden)"},
		{"5555555555554444", "•••• 4444 (card number hidden)"},
		{"order 1234 5678 9012 3456", "order 1234 5678 9012 3456"}, // fails Luhn
		{"call +1 415 555 0100", "call +1 415 555 0100"},
		{"no digits", "no digits"},
	} {
		if got := maskCards(c.in); got != c.want {
			t.Errorf("maskCards(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if !looksLikeCard(" 4111111111111111 ") || looksLikeCard("4111111111111112") || looksLikeCard("x 4111111111111111") {
		t.Error("looksLikeCard")
	}
}

func TestSensitiveAttrs(t *testing.T) {
	for _, c := range []struct {
		attrs []string
		want  bool
	}{
		{[]string{"type", "password"}, true},
		{[]string{"type", "text", "autocomplete", "cc-number"}, true},
		{[]string{"autocomplete", "section-x one-time-code"}, true},
		{[]string{"name", "card_number"}, true},
		{[]string{"id", "OTP"}, true},
		{[]string{"name", "email", "autocomplete", "email"}, false},
		{[]string{"name", "q"}, false},
	} {
		if got := sensitiveAttrs(c.attrs); got != c.want {
			t.Errorf("%v: %v", c.attrs, got)
		}
	}
}

func TestSafeName(t *testing.T) {
	for in, want := range map[string]string{
		"report.csv":             "report.csv",
		"../../etc/passwd":       "passwd",
		`..\..\boot.ini`:         "boot.ini",
		".bashrc":                "bashrc",
		"a\x00b\nc.txt":          "abc.txt",
		"":                       "download",
		"..":                     "download",
		strings.Repeat("é", 100): strings.Repeat("é", 60),
	} {
		if got := safeName(in); got != want {
			t.Errorf("safeName(%q) = %q, want %q", in, got, want)
		}
	}
	var names []string
	for n := range variants("a.tar.gz") {
		names = append(names, n)
		if len(names) == 3 {
			break
		}
	}
	if strings.Join(names, "|") != "a.tar.gz|a.tar (2).gz|a.tar (3).gz" {
		t.Errorf("variants: %v", names)
	}
}

func TestPageURL(t *testing.T) {
	s := &Session{}
	for in, want := range map[string]string{
		"example.com/a?b=1":      "https://example.com/a?b=1",
		"localhost:8000":         "http://localhost:8000",
		"127.0.0.1:3000/x":       "http://127.0.0.1:3000/x",
		"[::1]:80":               "http://[::1]:80",
		"https://example.com":    "https://example.com",
		"about:blank":            "about:blank",
		"data:text/html,<p>hi":   "data:text/html,<p>hi",
		"file:///etc/passwd":     "!file URLs cannot be opened",
		"javascript:alert(1)":    "!javascript: URLs cannot be opened",
		"chrome://settings":      "!chrome: URLs",
		"den://workspace/a.html": "!den:// URLs cannot be opened",
		"http://":                "!not a URL",
	} {
		got, msg := s.pageURL(in)
		if strings.HasPrefix(want, "!") {
			if !strings.Contains(msg, want[1:]) {
				t.Errorf("pageURL(%q) = %q, %q; want a refusal with %q", in, got, msg, want[1:])
			}
			continue
		}
		if got != want || msg != "" {
			t.Errorf("pageURL(%q) = %q, %q; want %q", in, got, msg, want)
		}
	}
	s.env.Resolve = func(ctx context.Context, u string) (io.ReadCloser, string, error) { return nil, "", nil }
	if got, msg := s.pageURL("den://workspace/a.html"); got != "http://den.invalid/workspace/a.html" || msg != "" {
		t.Errorf("den:// with a resolver: %q %q", got, msg)
	}
	if fromDenURL("http://den.invalid/workspace/a.html") != "den://workspace/a.html" || fromDenURL("http://x/") != "http://x/" {
		t.Error("fromDenURL")
	}
}

func TestPaginate(t *testing.T) {
	lines := []string{strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40), strings.Repeat("d", 200)}
	pages := paginate(lines, 100)
	if len(pages) != 3 || pages[0] != lines[0]+"\n"+lines[1] || pages[1] != lines[2] || len([]rune(pages[2])) != 100 {
		t.Errorf("pages: %q", pages)
	}
	if p := paginate(nil, 100); len(p) != 1 || p[0] != "" {
		t.Errorf("no lines: %q", p)
	}
}

func TestSandboxArgs(t *testing.T) {
	args := sandboxArgs("/usr/lib/chromium/chromium-headless-shell", folders{profile: "/p", downloads: "/d", uploads: "/u"}, []string{"SPKI="})
	joined := " " + strings.Join(args, " ") + " "
	for _, want := range []string{
		" --unshare-user --uid 1000 --gid 1000 ", " --unshare-pid ", " --die-with-parent ", " --new-session ",
		" --ro-bind /usr /usr ", " --bind /p /profile ", " --bind /d /downloads ", " --ro-bind /u /uploads ",
		" --clearenv ", " --remote-debugging-pipe ", " --user-data-dir=/profile ", " --ignore-certificate-errors-spki-list=SPKI= ",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("%q missing from %s", want, joined)
		}
	}
	for _, bad := range []string{"--no-sandbox", "--remote-debugging-port", "/home", "/root", "--share-net"} {
		if strings.Contains(joined, bad) {
			t.Errorf("%q in %s", bad, joined)
		}
	}
}

func TestCapNotes(t *testing.T) {
	var notes []string
	for i := range 25 {
		notes = appendCapped(notes, fmt.Sprint(i))
	}
	if len(notes) != maxNotes+1 || notes[maxNotes-1] != "19" || notes[maxNotes] != "5 more notes" {
		t.Fatalf("%q", notes)
	}
	// Capped lists merged stay one count.
	merged := capNotes(append(notes, notes...))
	if len(merged) != maxNotes+1 || merged[maxNotes] != "30 more notes" {
		t.Errorf("%q", merged[maxNotes:])
	}
	if got := capNotes([]string{"a"}); len(got) != 1 {
		t.Errorf("%q", got)
	}
}

// TestRequestedNavigation: a navigation the page asked for keeps the
// tab busy until its request goes out (or it commits), however long the
// browser takes to begin it, but no longer than navStartMax; one in
// another frame or for a new tab does not count.
func TestRequestedNavigation(t *testing.T) {
	busy := func(e *tabEvents, now time.Time) bool {
		n, _, loading := e.busy(now)
		return n > 0 || loading
	}
	newEvents := func() *tabEvents {
		return &tabEvents{inflight: map[network.RequestID]time.Time{}, mainID: "main"}
	}
	asked := func(frame string, d page.ClientNavigationDisposition) *page.EventFrameRequestedNavigation {
		return &page.EventFrameRequestedNavigation{FrameID: cdp.FrameID(frame), Reason: page.ClientNavigationReasonFormSubmissionPost, URL: "http://x/", Disposition: d}
	}
	e := newEvents()
	e.handle(asked("main", page.ClientNavigationDispositionCurrentTab))
	if now := time.Now(); !busy(e, now.Add(time.Second)) {
		t.Error("a requested navigation that has not begun: not busy")
	}
	if now := time.Now(); busy(e, now.Add(navStartMax+time.Second)) {
		t.Error("a requested navigation that never began: still busy past navStartMax")
	}
	e.handle(&network.EventRequestWillBeSent{RequestID: "1", FrameID: "main", Type: network.ResourceTypeDocument, Request: &network.Request{URL: "http://x/"}})
	e.handle(&network.EventLoadingFinished{RequestID: "1"})
	if busy(e, time.Now().Add(time.Second)) {
		t.Error("busy after the navigation's request ended")
	}
	e = newEvents()
	e.handle(asked("main", page.ClientNavigationDispositionCurrentTab))
	e.handle(&page.EventNavigatedWithinDocument{FrameID: "main", URL: "http://x/#a"})
	if busy(e, time.Now().Add(time.Second)) {
		t.Error("busy after an in-document navigation")
	}
	for _, ev := range []*page.EventFrameRequestedNavigation{asked("child", page.ClientNavigationDispositionCurrentTab), asked("main", page.ClientNavigationDispositionNewTab)} {
		e = newEvents()
		e.handle(ev)
		if busy(e, time.Now().Add(time.Second)) {
			t.Errorf("busy after %+v", ev)
		}
	}
}
