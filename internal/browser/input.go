package browser

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp/kb"
)

// hit is what den's helpers say of a click at an element's centre.
type hit struct {
	OK  bool   `json:"ok"`
	Why string `json:"why"` // hidden, offscreen, covered
	By  struct {
		CSS  string `json:"css"`
		Text string `json:"text"`
	} `json:"by"`
}

// point scrolls n into view and returns the centre of its first box in
// the main frame's viewport, after checking that a click there reaches
// n (or its label). A covered element is waited for a moment (an
// animation ending); one still covered is not clicked. ok is false with
// why when the element cannot be pointed at.
func (t *tab) point(ctx context.Context, n *node) (x, y float64, why string, ok bool) {
	cdp.Call(ctx, t.t, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: n.backend})
	var h hit
	for i := 0; ; i++ {
		if err := t.callOn(ctx, n.obj, "(d, el) => d.hit(el)", &h); err != nil {
			return 0, 0, "it could not be reached: " + describeErr(err), false
		}
		if h.OK || h.Why != "covered" || i >= 10 {
			break
		}
		sleep(ctx, 100*time.Millisecond)
	}
	switch {
	case h.Why == "covered":
		by := h.By.CSS
		if h.By.Text != "" {
			by += " " + quote(h.By.Text)
		}
		return 0, 0, "another element covers it: " + by + " (close or scroll past it first)", false
	case !h.OK:
		return 0, 0, "it is not visible (" + h.Why + ")", false
	}
	q, err := cdp.Call(ctx, t.t, dom.GetContentQuads, dom.GetContentQuadsParams{BackendNodeID: n.backend})
	if err != nil || len(q.Quads) == 0 || len(q.Quads[0]) < 8 {
		return 0, 0, "it has no box on screen", false
	}
	quad := q.Quads[0]
	for i := 0; i < 8; i += 2 {
		x += quad[i] / 4
		y += quad[i+1] / 4
	}
	return x, y, "", true
}

func (t *tab) mouse(ctx context.Context, typ input.DispatchMouseEventType, x, y float64, clicks int64) error {
	p := input.DispatchMouseEventParams{Type: typ, X: x, Y: y}
	if typ == input.DispatchMouseEventTypeMousePressed || typ == input.DispatchMouseEventTypeMouseReleased {
		p.Button, p.ClickCount = input.MouseButtonLeft, clicks
		if typ == input.DispatchMouseEventTypeMousePressed {
			p.Buttons = 1
		}
	}
	_, err := cdp.Call(ctx, t.t, input.DispatchMouseEvent, p)
	return err
}

// clickNode clicks n at its centre as a person would (move, press,
// release). A hidden element (a visually hidden checkbox, say) is
// clicked by script instead, and scripted says so.
func (t *tab) clickNode(ctx context.Context, n *node) (scripted bool, why string, err error) {
	x, y, why, ok := t.point(ctx, n)
	if !ok {
		if strings.HasPrefix(why, "it is not visible") || strings.HasPrefix(why, "it has no box") {
			if err := t.callOn(ctx, n.obj, "(d, el) => { el.click(); }", nil); err != nil {
				return false, why, nil
			}
			return true, "", nil
		}
		return false, why, nil
	}
	for _, typ := range []input.DispatchMouseEventType{input.DispatchMouseEventTypeMouseMoved, input.DispatchMouseEventTypeMousePressed, input.DispatchMouseEventTypeMouseReleased} {
		if err := t.mouse(ctx, typ, x, y, 1); err != nil {
			return false, "", err
		}
	}
	return false, "", nil
}

func (s *Session) click(ctx context.Context, t *tab, a Action, res *Result) {
	n := s.resolve(ctx, t, a, res, false)
	if n == nil {
		return
	}
	m := s.markOf(ctx, t)
	scripted, why, err := t.clickNode(ctx, n)
	if err != nil {
		fail(ctx, res, Failed, "Could not click %s: %s", n.desc, describeErr(err))
		return
	}
	if why != "" {
		res.Code, res.Message = Failed, fmt.Sprintf("Did not click %s: %s.", n.desc, why)
		return
	}
	did := "Clicked " + n.desc
	if scripted {
		did += " (by script: it has no visible box)"
	}
	s.after(ctx, t, m, res, did)
}

func (s *Session) hover(ctx context.Context, t *tab, a Action, res *Result) {
	n := s.resolve(ctx, t, a, res, false)
	if n == nil {
		return
	}
	m := s.markOf(ctx, t)
	x, y, why, ok := t.point(ctx, n)
	if !ok {
		res.Code, res.Message = Failed, fmt.Sprintf("Could not hover over %s: %s.", n.desc, why)
		return
	}
	if err := t.mouse(ctx, input.DispatchMouseEventTypeMouseMoved, x, y, 0); err != nil {
		fail(ctx, res, Failed, "Could not hover over %s: %s", n.desc, describeErr(err))
		return
	}
	s.after(ctx, t, m, res, "The mouse is over "+n.desc)
}

// prepared is what den's helpers say of a field about to be typed in.
type prepared struct {
	Editable  bool `json:"editable"`
	Sensitive bool `json:"sensitive"`
}

func (s *Session) typeText(ctx context.Context, t *tab, a Action, res *Result) {
	n := s.resolve(ctx, t, a, res, true)
	if n == nil {
		return
	}
	m := s.markOf(ctx, t)
	var p prepared
	if err := t.callOn(ctx, n.obj, "(d, el, keep) => d.prepareType(el, keep)", &p, a.Append); err != nil {
		fail(ctx, res, Failed, "Could not type into %s: %s", n.desc, describeErr(err))
		return
	}
	if !p.Editable {
		// A widget that takes the focus on click.
		if _, why, err := t.clickNode(ctx, n); err == nil && why == "" {
			t.callOn(ctx, n.obj, "(d, el, keep) => d.prepareType(el, keep)", &p, a.Append)
		}
	}
	if !p.Editable {
		res.Code, res.Message = Failed, fmt.Sprintf("%s does not take text: click a text field, or take a snapshot.", n.desc)
		return
	}
	if err := t.typeKeys(ctx, a.Text, a.Append); err != nil {
		fail(ctx, res, Failed, "Could not type into %s: %s", n.desc, describeErr(err))
		return
	}
	did := fmt.Sprintf("Typed %d characters into %s", utf8.RuneCountInString(a.Text), n.desc)
	if !a.Append {
		did = fmt.Sprintf("Replaced the text of %s with %d characters", n.desc, utf8.RuneCountInString(a.Text))
	}
	if a.Submit {
		if err := t.pressKeys(ctx, "Enter"); err != nil {
			fail(ctx, res, Failed, "%s, but could not press Enter: %s", did, describeErr(err))
			return
		}
		did += " and pressed Enter"
	}
	s.after(ctx, t, m, res, did)
}

// typeKeys types text into the focused element: key by key (so that key
// handlers run) up to 200 characters, in one insertion beyond. An empty
// text that replaces deletes the selected text.
func (t *tab) typeKeys(ctx context.Context, text string, keep bool) error {
	if text == "" {
		if keep {
			return nil
		}
		return t.pressKeys(ctx, "Delete")
	}
	if utf8.RuneCountInString(text) > 200 {
		_, err := cdp.Call(ctx, t.t, input.InsertText, input.InsertTextParams{Text: text})
		return err
	}
	for _, r := range text {
		if _, known := kb.Keys[r]; !known {
			if _, err := cdp.Call(ctx, t.t, input.InsertText, input.InsertTextParams{Text: string(r)}); err != nil {
				return err
			}
			continue
		}
		for _, k := range kb.Encode(r) {
			if _, err := cdp.Call(ctx, t.t, input.DispatchKeyEvent, *k); err != nil {
				return err
			}
		}
	}
	return nil
}

// pressKeys presses a key or a combination: "Enter", "Control+A",
// "Shift+Tab", "a".
func (t *tab) pressKeys(ctx context.Context, combo string) error {
	parts := strings.Split(combo, "+")
	if strings.HasSuffix(combo, "++") || combo == "+" {
		parts = append(strings.Split(strings.TrimSuffix(combo, "++"), "+"), "+")
	}
	var mods int64
	for _, m := range parts[:len(parts)-1] {
		switch strings.ToLower(m) {
		case "control", "ctrl":
			mods |= int64(kb.ModifierCtrl)
		case "shift":
			mods |= int64(kb.ModifierShift)
		case "alt", "option":
			mods |= int64(kb.ModifierAlt)
		case "meta", "cmd", "command", "super":
			mods |= int64(kb.ModifierMeta)
		case "":
		default:
			return fmt.Errorf("unknown modifier %q (use Control, Shift, Alt or Meta)", m)
		}
	}
	events, err := keyEvents(parts[len(parts)-1])
	if err != nil {
		return err
	}
	// Headless Chromium maps no shortcut to an editing command by
	// itself: name the command.
	var commands []string
	if mods == int64(kb.ModifierCtrl) || mods == int64(kb.ModifierMeta) {
		commands = editCommands[strings.ToLower(parts[len(parts)-1])]
	}
	for _, k := range events {
		k.Modifiers |= mods
		if k.Type == kb.KeyDown || k.Type == kb.KeyRawDown {
			k.Commands = commands
		}
		if k.Type == kb.KeyChar && mods&^int64(kb.ModifierShift) != 0 {
			continue
		}
		if _, err := cdp.Call(ctx, t.t, input.DispatchKeyEvent, *k); err != nil {
			return err
		}
	}
	return nil
}

// editCommands are the editing commands of Control (or Meta) shortcuts.
var editCommands = map[string][]string{
	"a": {"selectAll"}, "c": {"copy"}, "x": {"cut"}, "v": {"paste"}, "z": {"undo"}, "y": {"redo"},
}

// keyEvents finds a key by its name ("Enter", "ArrowDown", "Escape") or
// its character.
func keyEvents(name string) ([]*input.DispatchKeyEventParams, error) {
	if r, size := utf8.DecodeRuneInString(name); size == len(name) && name != "" {
		return kb.Encode(r), nil
	}
	alias := map[string]string{"esc": "Escape", "return": "Enter", "del": "Delete", "space": " ", "up": "ArrowUp", "down": "ArrowDown", "left": "ArrowLeft", "right": "ArrowRight", "pgup": "PageUp", "pgdn": "PageDown"}
	if a, ok := alias[strings.ToLower(name)]; ok {
		name = a
	}
	if name == " " {
		return kb.Encode(' '), nil
	}
	for r, k := range kb.Keys {
		if strings.EqualFold(k.Key, name) || strings.EqualFold(k.Code, name) {
			return kb.Encode(r), nil
		}
	}
	return nil, fmt.Errorf("unknown key %q (use names such as Enter, Tab, Escape, Backspace, ArrowDown, PageDown, or one character)", name)
}

func (s *Session) press(ctx context.Context, t *tab, a Action, res *Result) {
	target := "the page"
	if a.Index > 0 || a.Selector != "" {
		n := s.resolve(ctx, t, a, res, false)
		if n == nil {
			return
		}
		if _, err := cdp.Call(ctx, t.t, dom.Focus, dom.FocusParams{BackendNodeID: n.backend}); err != nil {
			fail(ctx, res, Failed, "Could not focus %s: %s", n.desc, describeErr(err))
			return
		}
		target = n.desc
	}
	m := s.markOf(ctx, t)
	if err := t.pressKeys(ctx, a.Key); err != nil {
		fail(ctx, res, Invalid, "Could not press %s: %s", a.Key, describeErr(err))
		return
	}
	s.after(ctx, t, m, res, fmt.Sprintf("Pressed %s on %s", a.Key, target))
}

// selected is what den's helpers say of choosing options.
type selected struct {
	OK        bool     `json:"ok"`
	NotSelect bool     `json:"notSelect"`
	Chosen    []string `json:"chosen"`
	Missing   []string `json:"missing"`
	Multiple  bool     `json:"multiple"`
	Options   []string `json:"options"`
}

func (s *Session) selectOption(ctx context.Context, t *tab, a Action, res *Result) {
	n := s.resolve(ctx, t, a, res, false)
	if n == nil {
		return
	}
	m := s.markOf(ctx, t)
	var r selected
	if err := t.callOn(ctx, n.obj, "(d, el, v) => d.select(el, v)", &r, a.Value); err != nil {
		fail(ctx, res, Failed, "Could not select in %s: %s", n.desc, describeErr(err))
		return
	}
	switch {
	case r.NotSelect:
		res.Code, res.Message = Failed, fmt.Sprintf("%s is not a <select>: click it to open its options, then click the option.", n.desc)
		return
	case !r.OK && len(r.Missing) > 0:
		res.Code, res.Message = NotFound, fmt.Sprintf("%s has no option %s. Its options: %s.", n.desc, quotes(r.Missing), quotes(r.Options))
		return
	case !r.OK:
		res.Code, res.Message = Invalid, fmt.Sprintf("%s takes one option only.", n.desc)
		return
	}
	s.after(ctx, t, m, res, fmt.Sprintf("Selected %s in %s", quotes(r.Chosen), n.desc))
}

func quotes(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = quote(clip(s, 60))
	}
	return strings.Join(q, ", ")
}
