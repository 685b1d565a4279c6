package browser

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
)

func (s *Session) scroll(ctx context.Context, t *tab, a Action, res *Result) {
	var n *node
	if a.Index > 0 || a.Selector != "" {
		if n = s.resolve(ctx, t, a, res, false); n == nil {
			return
		}
		if a.Direction == "" {
			m := s.markOf(ctx, t)
			if _, err := cdp.Call(ctx, t.t, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: n.backend}); err != nil {
				fail(ctx, res, Failed, "Could not scroll to %s: %s", n.desc, describeErr(err))
				return
			}
			s.after(ctx, t, m, res, "Scrolled "+n.desc+" into view")
			return
		}
	}
	before, err := t.state(ctx)
	if err != nil {
		fail(ctx, res, Failed, "Could not read the page: %s", describeErr(err))
		return
	}
	dir := a.Direction
	if dir == "" {
		dir = "down"
	}
	x, y := float64(before.VW)/2, float64(before.VH)/2
	if n != nil {
		px, py, why, ok := t.point(ctx, n)
		if !ok {
			res.Code, res.Message = Failed, fmt.Sprintf("Could not scroll %s: %s.", n.desc, why)
			return
		}
		x, y = px, py
	}
	amount := float64(a.Amount)
	if amount == 0 {
		amount = float64(before.VH) * 0.8
		if dir == "left" || dir == "right" {
			amount = float64(before.VW) * 0.8
		}
	}
	var dx, dy float64
	switch dir {
	case "up":
		dy = -amount
	case "down":
		dy = amount
	case "left":
		dx = -amount
	case "right":
		dx = amount
	}
	m := s.markOf(ctx, t)
	if err := t.wheel(ctx, x, y, dx, dy); err != nil {
		fail(ctx, res, Failed, "Could not scroll: %s", describeErr(err))
		return
	}
	t.settle(ctx, time.Now(), 100*time.Millisecond, settleMax)
	after, _ := t.state(ctx)
	where := fmt.Sprintf("the page is now at %d of %d px (the viewport shows %d)", after.Y, after.H, after.VH)
	if dx != 0 {
		where = fmt.Sprintf("the page is now at %d of %d px across", after.X, after.W)
	}
	if n == nil && after.X == before.X && after.Y == before.Y {
		res.Message = fmt.Sprintf("Scrolled %s by %.0f px, but the page did not move (it is at its end, or the part under the pointer does not scroll); %s.", dir, amount, where)
		return
	}
	target := ""
	if n != nil {
		target = " over " + n.desc
	}
	s.after(ctx, t, m, res, fmt.Sprintf("Scrolled %s%s by %.0f px; %s", dir, target, amount, where))
}

// wheel turns the mouse wheel at x, y. (The protocol wants both deltas,
// which the generated parameters leave out when zero.)
func (t *tab) wheel(ctx context.Context, x, y, dx, dy float64) error {
	return t.t.Call(ctx, input.DispatchMouseEvent.Method, map[string]any{
		"type": input.DispatchMouseEventTypeMouseWheel, "x": x, "y": y, "deltaX": dx, "deltaY": dy,
	}, nil)
}

// items is what den's helpers gather of a feed.
type items struct {
	Sel   string   `json:"sel"`
	Items []string `json:"items"`
}

// scrollAndCollect scrolls a feed, gathering its items' text once each,
// until it has max_items, max_scrolls scrolls were made, or scrolling
// brings nothing new twice.
func (s *Session) scrollAndCollect(ctx context.Context, t *tab, a Action, res *Result) {
	scrolls := a.MaxScrolls
	if scrolls == 0 {
		scrolls = 10
	}
	maxItems := a.MaxItems
	if maxItems <= 0 {
		maxItems = 200
	}
	seen := map[string]bool{}
	var out []string
	sel := a.ItemSelector
	gather := func() (int, error) {
		var it items
		if err := t.eval(ctx, ".items("+jsString(sel)+")", &it); err != nil {
			return 0, err
		}
		if sel == "" {
			sel = it.Sel
		}
		fresh := 0
		for _, s := range it.Items {
			s = maskCards(s)
			if !seen[s] && len(out) < maxItems {
				seen[s] = true
				out = append(out, s)
				fresh++
			}
		}
		return fresh, nil
	}
	t.settle(ctx, time.Time{}, settleQuiet, settleMax)
	if _, err := gather(); err != nil {
		var se *scriptErr
		if errors.As(err, &se) {
			res.Code, res.Message = Invalid, fmt.Sprintf("%q is not a CSS selector den can use: %s", a.ItemSelector, se.text)
			return
		}
		fail(ctx, res, Failed, "Could not read the page: %s", describeErr(err))
		return
	}
	if sel == "" {
		res.Code, res.Message = NotFound, "The page has no repeated items den could find: give item_selector (take a snapshot to see the page)."
		return
	}
	made, idle := 0, 0
	for ; made < scrolls && len(out) < maxItems && idle < 2 && ctx.Err() == nil; made++ {
		before, err := t.state(ctx)
		if err != nil {
			break
		}
		// Scroll by script: a feed loads more when its end comes into
		// view, whatever element is under a pointer.
		if err := t.eval(ctx, ".state(); window.scrollBy(0, window.innerHeight * 0.9)", nil); err != nil {
			break
		}
		t.settle(ctx, time.Now(), 200*time.Millisecond, settleMax)
		fresh, err := gather()
		if err != nil {
			break
		}
		after, _ := t.state(ctx)
		if fresh > 0 || after.H != before.H || after.Y != before.Y {
			idle = 0
		} else {
			idle++
		}
	}
	res.Items = out
	why := "scrolling brought nothing new"
	switch {
	case len(out) >= maxItems:
		why = fmt.Sprintf("it reached max_items (%d)", maxItems)
	case made >= scrolls:
		why = fmt.Sprintf("it made max_scrolls (%d) scrolls", scrolls)
	case ctx.Err() != nil:
		why = "time ran out"
	}
	res.Message = fmt.Sprintf("Collected %d unique items matching %q over %d scrolls; stopped because %s.", len(out), sel, made, why)
}

// waitFor waits for text or an element to appear (or go), or for the
// page to settle.
func (s *Session) waitFor(ctx context.Context, t *tab, a Action, res *Result) {
	start := time.Now()
	if a.Settled {
		if t.settle(ctx, time.Time{}, 500*time.Millisecond, time.Until(deadlineOf(ctx))) {
			res.Message = fmt.Sprintf("The page settled after %v.", time.Since(start).Round(10*time.Millisecond))
			s.describe(ctx, t, res)
			return
		}
		res.Code, res.Message = Timeout, fmt.Sprintf("The page did not settle in %v (requests or changes kept coming).", time.Since(start).Round(time.Second))
		return
	}
	what := quote(a.Text)
	check := func() (bool, error) {
		var text string
		if err := t.eval(ctx, ".text()", &text); err != nil {
			return false, err
		}
		return strings.Contains(strings.ToLower(oneSpace(text)), strings.ToLower(oneSpace(a.Text))), nil
	}
	if a.Index > 0 {
		n := s.resolve(ctx, t, a, res, false)
		if n == nil {
			return
		}
		what = n.desc
		check = func() (bool, error) {
			var v bool
			err := t.callOn(ctx, n.obj, "(d, el) => el.isConnected && d.visible(el)", &v)
			return v, err
		}
	} else if a.Selector != "" {
		what = "an element matching " + quote(a.Selector)
		check = func() (bool, error) {
			var v bool
			err := t.eval(ctx, ".present("+jsString(a.Selector)+")", &v)
			return v, err
		}
	}
	want := !a.Gone
	for {
		got, err := check()
		var se *scriptErr
		if err != nil && errors.As(err, &se) && a.Selector != "" {
			res.Code, res.Message = Invalid, fmt.Sprintf("%q is not a CSS selector den can use: %s", a.Selector, se.text)
			return
		}
		if err == nil && got == want {
			verb := "appeared"
			if a.Gone {
				verb = "is gone"
			}
			res.Message = fmt.Sprintf("%s %s after %v.", upperFirst(what), verb, time.Since(start).Round(10*time.Millisecond))
			t.settle(ctx, time.Time{}, settleQuiet, settleMax)
			s.describe(ctx, t, res)
			return
		}
		if ctx.Err() != nil || time.Until(deadlineOf(ctx)) < 150*time.Millisecond {
			verb := "did not appear"
			if a.Gone {
				verb = "is still there"
			}
			res.Code, res.Message = Timeout, fmt.Sprintf("Waited %v: %s %s.", time.Since(start).Round(time.Second), what, verb)
			return
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

func deadlineOf(ctx context.Context) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d
	}
	return time.Now().Add(DefaultTimeout)
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
