package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
)

// run does the action on the tab t (nil for the actions that need no
// page) and writes what happened to res.
func (s *Session) run(ctx context.Context, t *tab, a Action, res *Result) {
	switch a.Name {
	case "navigate":
		s.navigateAction(ctx, t, a, res)
	case "snapshot":
		s.snapshotAction(ctx, t, a, res)
	case "click":
		s.click(ctx, t, a, res)
	case "type":
		s.typeText(ctx, t, a, res)
	case "select":
		s.selectOption(ctx, t, a, res)
	case "hover":
		s.hover(ctx, t, a, res)
	case "press":
		s.press(ctx, t, a, res)
	case "scroll":
		s.scroll(ctx, t, a, res)
	case "scroll_and_collect":
		s.scrollAndCollect(ctx, t, a, res)
	case "wait_for":
		s.waitFor(ctx, t, a, res)
	case "screenshot":
		s.screenshot(ctx, t, a, res)
	case "get_readable":
		s.readable(ctx, t, a, res)
	case "back", "forward":
		s.history(ctx, t, a, res)
	case "reload":
		s.reload(ctx, t, res)
	case "tabs":
		s.listTabs(res)
	case "open_tab":
		s.openTabAction(ctx, a, res)
	case "switch_tab":
		s.switchTab(ctx, a, res)
	case "close_tab":
		s.closeTab(a, res)
	case "upload":
		s.upload(ctx, t, a, res)
	case "get_cookies":
		s.getCookies(ctx, t, a, res)
	case "set_cookies":
		s.setCookies(ctx, t, a, res)
	case "execute_js":
		s.executeJS(ctx, t, a, res)
	case "set_viewport":
		s.setViewport(ctx, t, a, res)
	case "pdf":
		s.pdf(ctx, t, res)
	default:
		res.Code, res.Message = Invalid, "unknown action "+a.Name
	}
}

// fail writes a failure to res. An expired ctx makes it a timeout.
func fail(ctx context.Context, res *Result, code Code, format string, args ...any) {
	res.Code, res.Message = code, fmt.Sprintf(format, args...)
	if ctx.Err() != nil {
		res.Code = Timeout
	}
}

// describe takes a fresh snapshot of t for res (page 1).
func (s *Session) describe(ctx context.Context, t *tab, res *Result) {
	snap, err := t.takeSnapshot(ctx, s.b.o.SnapshotSize)
	if err != nil {
		if res.Code == Done {
			fail(ctx, res, Failed, "Could not read the page: %s", describeErr(err))
		}
		return
	}
	t.snap = snap
	res.Snapshot = snap.public(1)
	res.URL, res.Title = snap.url, snap.title
}

func (s *Session) navigateAction(ctx context.Context, t *tab, a Action, res *Result) {
	u, msg := s.pageURL(a.URL)
	if msg != "" {
		res.Code, res.Message = Invalid, msg
		return
	}
	if strings.HasPrefix(u, denOrigin) {
		if err := s.serveDen(ctx, t); err != nil {
			fail(ctx, res, Failed, "Could not open %s: %s", a.URL, describeErr(err))
			return
		}
	}
	m, code := t.navigate(ctx, s, u)
	if code != Done {
		fail(ctx, res, code, "Could not open %s: %s.", a.URL, m)
		if res.Code == Timeout {
			s.describe(ctx, t, res)
		}
		return
	}
	res.Message = m
	s.describe(ctx, t, res)
}

func (s *Session) snapshotAction(ctx context.Context, t *tab, a Action, res *Result) {
	if a.Page > 1 && t.snap != nil {
		if a.Page > len(t.snap.pages) {
			res.Code, res.Message = Invalid, fmt.Sprintf("the latest snapshot has %d page(s)", len(t.snap.pages))
			return
		}
		res.Snapshot = t.snap.public(a.Page)
		res.Message = fmt.Sprintf("Page %d of the snapshot taken %v ago (its indexes still apply; a plain snapshot takes a fresh one).", a.Page, time.Since(t.snap.taken).Round(time.Second))
		return
	}
	t.settle(ctx, time.Time{}, settleQuiet, settleMax)
	s.describe(ctx, t, res)
}

func (s *Session) history(ctx context.Context, t *tab, a Action, res *Result) {
	h, err := cdp.Call(ctx, t.t, page.GetNavigationHistory, cdp.Empty{})
	if err != nil {
		fail(ctx, res, Failed, "Could not read the tab's history: %s", describeErr(err))
		return
	}
	i := int(h.CurrentIndex) - 1
	if a.Name == "forward" {
		i = int(h.CurrentIndex) + 1
	}
	if i < 0 || i >= len(h.Entries) {
		res.Code, res.Message = Failed, fmt.Sprintf("There is no page to go %s to.", a.Name)
		return
	}
	_, docs := t.ev.counters()
	if _, err := cdp.Call(ctx, t.t, page.NavigateToHistoryEntry, page.NavigateToHistoryEntryParams{EntryID: h.Entries[i].ID}); err != nil {
		fail(ctx, res, NavFailed, "Could not go %s: %s", a.Name, describeErr(err))
		return
	}
	t.waitLoad(ctx, docs)
	res.Message = fmt.Sprintf("Went %s to %s.", a.Name, fromDenURL(h.Entries[i].URL))
	s.describe(ctx, t, res)
}

func (s *Session) reload(ctx context.Context, t *tab, res *Result) {
	_, docs := t.ev.counters()
	if _, err := cdp.Call(ctx, t.t, page.Reload, page.ReloadParams{}); err != nil {
		fail(ctx, res, NavFailed, "Could not reload: %s", describeErr(err))
		return
	}
	t.waitLoad(ctx, docs)
	res.Message = "Reloaded the page." + t.statusNote()
	s.describe(ctx, t, res)
}

// Tabs lists the session's tabs, without waiting for a running action:
// what the faces show.
func (s *Session) Tabs() []TabInfo {
	s.mu.Lock()
	tabs := append([]*tab(nil), s.tabs...)
	cur := s.cur
	s.mu.Unlock()
	var out []TabInfo
	for _, t := range tabs {
		u, title := t.info()
		out = append(out, TabInfo{ID: t.id, URL: fromDenURL(u), Title: title, Current: t == cur})
	}
	return out
}

// CurrentURL is the address of the session's current tab as its
// events last told ("" without a tab), asking Chromium nothing: what
// the caller of an action decides on before it runs.
func (s *Session) CurrentURL() string {
	t := s.current()
	if t == nil {
		return ""
	}
	return fromDenURL(t.url())
}

func (s *Session) listTabs(res *Result) {
	res.Tabs = s.Tabs()
	tabs := res.Tabs
	res.Message = fmt.Sprintf("%d tab(s) open (at most %d).", len(tabs), s.b.o.MaxTabs)
	if len(tabs) == 0 {
		res.Message = "No tab is open."
	}
}

func (s *Session) openTabAction(ctx context.Context, a Action, res *Result) {
	s.mu.Lock()
	n := len(s.tabs)
	s.mu.Unlock()
	if n >= s.b.o.MaxTabs {
		res.Code, res.Message = Failed, fmt.Sprintf("The session has %d tabs open, the most it may: close one first.", n)
		s.listTabs(&Result{})
		return
	}
	c, gen := s.b.current()
	if c == nil {
		res.Code, res.Message = Unavailable, "The browser is not running."
		return
	}
	t, err := s.openTab(ctx, c, gen)
	if err != nil {
		fail(ctx, res, Failed, "Could not open a tab: %s", describeErr(err))
		return
	}
	res.Message = fmt.Sprintf("Opened tab %d.", t.id)
	if a.URL != "" {
		s.navigateAction(ctx, t, a, res)
		res.Message = fmt.Sprintf("Opened tab %d. %s", t.id, res.Message)
	}
}

func (s *Session) switchTab(ctx context.Context, a Action, res *Result) {
	s.mu.Lock()
	var t *tab
	for _, x := range s.tabs {
		if x.id == a.Tab {
			t = x
		}
	}
	if t != nil {
		s.cur = t
	}
	s.mu.Unlock()
	if t == nil {
		res.Code, res.Message = NotFound, fmt.Sprintf("There is no tab %d.", a.Tab)
		s.listTabs(&Result{})
		return
	}
	t.lastUse = time.Now()
	res.Message = fmt.Sprintf("Tab %d is now current.", t.id)
	s.describe(ctx, t, res)
}

func (s *Session) closeTab(a Action, res *Result) {
	s.mu.Lock()
	var t *tab
	for _, x := range s.tabs {
		if (a.Tab == 0 && x == s.cur) || x.id == a.Tab {
			t = x
		}
	}
	s.mu.Unlock()
	if t == nil {
		res.Code, res.Message = NotFound, "There is no such tab."
		if a.Tab == 0 {
			res.Message = "No tab is open."
		}
		return
	}
	s.removeTab(t)
	t.close()
	res.Message = fmt.Sprintf("Closed tab %d.", t.id)
	if cur := s.current(); cur != nil {
		res.Message += fmt.Sprintf(" Tab %d is now current.", cur.id)
	}
}

func (s *Session) executeJS(ctx context.Context, t *tab, a Action, res *Result) {
	// The value comes back as JSON text, cut in the page: a page's
	// script can return anything, and den reads only so much.
	expr := "(async () => {\n" + a.Script + "\n})().then((v) => { const s = JSON.stringify(v); return s === undefined ? undefined : s.length > 100000 ? s.slice(0, 100000) + '…' : s; })"
	timeout := runtime.TimeDelta(0)
	if dl, ok := ctx.Deadline(); ok {
		timeout = runtime.TimeDelta(max(time.Until(dl)-reserve(ctx), 100*time.Millisecond).Milliseconds())
	}
	start := time.Now()
	r, err := cdp.Call(ctx, t.t, runtime.Evaluate, runtime.EvaluateParams{
		Expression: expr, ReturnByValue: ptr(true), AwaitPromise: ptr(true), UserGesture: ptr(true), Timeout: timeout,
	})
	if err != nil {
		if timeout > 0 && time.Since(start) >= time.Duration(timeout)*time.Millisecond {
			res.Code, res.Message = Timeout, fmt.Sprintf("The script did not finish within %v; den stopped it.", time.Since(start).Round(100*time.Millisecond))
			return
		}
		fail(ctx, res, ScriptError, "The script could not run: %s", describeErr(err))
		return
	}
	if r.ExceptionDetails != nil {
		res.Code, res.Message = ScriptError, "The script threw: "+scriptError(r.ExceptionDetails).Error()
		return
	}
	v := "undefined"
	if r.Result != nil && len(r.Result.Value) > 0 {
		if err := json.Unmarshal(r.Result.Value, &v); err != nil {
			v = string(r.Result.Value)
		}
	}
	res.Message = "The script returned:"
	res.Value = clip(maskCards(v), 20000)
}

func (s *Session) setViewport(ctx context.Context, t *tab, a Action, res *Result) {
	if a.Reset {
		if _, err := cdp.Call(ctx, t.t, emulation.ClearDeviceMetricsOverride, cdp.Empty{}); err != nil {
			fail(ctx, res, Failed, "Could not reset the viewport: %s", describeErr(err))
			return
		}
		res.Message = "The viewport is back to its default size."
		return
	}
	if _, err := cdp.Call(ctx, t.t, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: int64(a.Width), Height: int64(a.Height), DeviceScaleFactor: 1, Mobile: a.Mobile,
	}); err != nil {
		fail(ctx, res, Failed, "Could not set the viewport: %s", describeErr(err))
		return
	}
	res.Message = fmt.Sprintf("The viewport of tab %d is now %d×%d.", t.id, a.Width, a.Height)
}
