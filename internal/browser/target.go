package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/runtime"
)

// node is the element an action acts on, resolved in den's world.
type node struct {
	backend cdp.BackendNodeID
	obj     runtime.RemoteObjectID
	desc    string // [3] button "Save", or selector "#save" (button "Save")
}

// resolve finds the action's target: the element of an index of the
// latest snapshot, checked to be unchanged, or the first match of a
// selector. When it cannot, it writes why to res (with the closest
// candidates, or a fresh snapshot) and returns nil. An action without
// index and selector gets the focused element when focused is set.
func (s *Session) resolve(ctx context.Context, t *tab, a Action, res *Result, focused bool) *node {
	switch {
	case a.Index > 0:
		return s.resolveIndex(ctx, t, a.Index, res)
	case a.Selector != "":
		return s.resolveSelector(ctx, t, a.Selector, res)
	case focused:
		return s.resolveFocused(ctx, t, res)
	}
	res.Code, res.Message = Invalid, a.Name+" needs index (from the latest snapshot) or selector"
	return nil
}

func (s *Session) resolveIndex(ctx context.Context, t *tab, i int, res *Result) *node {
	if t.snap == nil {
		res.Code, res.Message = Stale, fmt.Sprintf("There is no snapshot of this page yet, so [%d] means nothing; here is one.", i)
		s.describe(ctx, t, res)
		return nil
	}
	if i > len(t.snap.elements) {
		res.Code, res.Message = NotFound, fmt.Sprintf("The latest snapshot has no [%d]: its indexes go up to %d.", i, len(t.snap.elements))
		return nil
	}
	el := t.snap.elements[i-1]
	was := fmt.Sprintf("[%d] %s %s", i, el.role, quote(clip(oneSpace(el.name), 100)))
	if navs, _ := t.ev.counters(); navs != t.snap.navigations {
		res.Code, res.Message = Stale, fmt.Sprintf("Stale element: the page navigated since the snapshot in which %s was; nothing was done. Here is a fresh snapshot.", was)
		s.describe(ctx, t, res)
		return nil
	}
	ok, now, err := t.checkElement(ctx, el)
	if err != nil {
		fail(ctx, res, Failed, "Could not check %s: %s", was, describeErr(err))
		return nil
	}
	if !ok {
		res.Code, res.Message = Stale, fmt.Sprintf("Stale element: %s changed since the snapshot (%s); nothing was done. Here is a fresh snapshot.", was, now)
		s.describe(ctx, t, res)
		return nil
	}
	obj, err := t.resolveNode(ctx, el.backend, el.frame)
	if err != nil {
		res.Code, res.Message = Stale, fmt.Sprintf("Stale element: %s is gone from the page; nothing was done. Here is a fresh snapshot.", was)
		s.describe(ctx, t, res)
		return nil
	}
	return &node{backend: el.backend, obj: obj, desc: was}
}

// resolveNode gives a DOM node an object in den's world (of the main
// frame, which reaches same-origin frames; else of the node's frame).
func (t *tab) resolveNode(ctx context.Context, backend cdp.BackendNodeID, frame cdp.FrameID) (runtime.RemoteObjectID, error) {
	var last error
	for _, f := range []cdp.FrameID{"", frame} {
		cid, err := t.worldOf(ctx, f)
		if err != nil {
			last = err
			continue
		}
		r, err := cdp.Call(ctx, t.t, dom.ResolveNode, dom.ResolveNodeParams{BackendNodeID: backend, ExecutionContextID: cid})
		if err == nil && r.Object != nil && r.Object.ObjectID != "" {
			return r.Object.ObjectID, nil
		}
		last = err
		if frame == "" || frame == cdp.FrameID(t.target) {
			break
		}
	}
	if last == nil {
		last = errors.New("no object")
	}
	return "", last
}

func (s *Session) resolveSelector(ctx context.Context, t *tab, sel string, res *Result) *node {
	obj, err := t.evalObject(ctx, ".find("+jsString(sel)+")")
	if err != nil {
		var se *scriptErr
		if errors.As(err, &se) {
			res.Code, res.Message = Invalid, fmt.Sprintf("%q is not a CSS selector den can use: %s", sel, se.text)
			return nil
		}
		fail(ctx, res, Failed, "Could not look for %q: %s", sel, describeErr(err))
		return nil
	}
	if obj == "" {
		res.Code = NotFound
		res.Message = fmt.Sprintf("No element matches the selector %q (in the page, its open shadow roots and same-origin frames).", sel)
		if c := s.candidates(ctx, t, sel); c != "" {
			res.Message += " Closest: " + c + "."
		} else {
			res.Message += " Take a snapshot to see the page's elements."
		}
		return nil
	}
	d, err := cdp.Call(ctx, t.t, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: obj})
	if err != nil || d.Node == nil {
		fail(ctx, res, Failed, "Could not use the element %q matches: %s", sel, describeErr(err))
		return nil
	}
	n := &node{backend: d.Node.BackendNodeID, obj: obj}
	n.desc = fmt.Sprintf("%q (%s)", sel, t.nameOf(ctx, n.backend))
	return n
}

func (s *Session) resolveFocused(ctx context.Context, t *tab, res *Result) *node {
	obj, err := t.evalObject(ctx, `.focused()`)
	if err != nil || obj == "" {
		res.Code, res.Message = NotFound, "No element has the focus: give index or selector."
		return nil
	}
	d, err := cdp.Call(ctx, t.t, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: obj})
	if err != nil || d.Node == nil {
		res.Code, res.Message = NotFound, "No element has the focus: give index or selector."
		return nil
	}
	n := &node{backend: d.Node.BackendNodeID, obj: obj}
	n.desc = "the focused " + t.nameOf(ctx, n.backend)
	return n
}

// nameOf describes a node as role "name", with its index when the
// latest snapshot has it.
func (t *tab) nameOf(ctx context.Context, backend cdp.BackendNodeID) string {
	desc := "element"
	if r, err := cdp.Call(ctx, t.t, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{BackendNodeID: backend, FetchRelatives: ptr(false)}); err == nil {
		for _, n := range r.Nodes {
			if n.BackendDOMNodeID == backend {
				desc = strings.TrimSpace(roleOf(n) + " " + quoteOpt(axString(n.Name)))
			}
		}
	}
	if t.snap != nil {
		for i, el := range t.snap.elements {
			if el.backend == backend {
				return fmt.Sprintf("[%d] %s", i+1, desc)
			}
		}
	}
	return desc
}

// candidates lists the elements most like what a selector that matched
// nothing meant.
func (s *Session) candidates(ctx context.Context, t *tab, sel string) string {
	arr, err := t.evalObject(ctx, ".candidates("+jsString(sel)+", 5)")
	if err != nil || arr == "" {
		return ""
	}
	var descs []struct {
		CSS  string `json:"css"`
		Text string `json:"text"`
	}
	if err := t.callOn(ctx, arr, "(d, a) => a.map(d.describe)", &descs); err != nil {
		return ""
	}
	var out []string
	for i, d := range descs {
		item := d.CSS
		if el, err := t.callOnObject(ctx, arr, fmt.Sprintf("(d, a) => a[%d]", i)); err == nil {
			if dn, err := cdp.Call(ctx, t.t, dom.DescribeNode, dom.DescribeNodeParams{ObjectID: el}); err == nil && dn.Node != nil {
				item += " (" + t.nameOf(ctx, dn.Node.BackendNodeID) + ")"
			}
		} else if d.Text != "" {
			item += " " + quote(d.Text)
		}
		out = append(out, item)
	}
	return strings.Join(out, ", ")
}

// evalObject evaluates an expression after den's helpers in the main
// frame's den world and returns the object it yields ("" for null).
func (t *tab) evalObject(ctx context.Context, expr string) (runtime.RemoteObjectID, error) {
	for attempt := 0; ; attempt++ {
		cid, err := t.worldOf(ctx, "")
		if err != nil {
			return "", err
		}
		r, err := cdp.Call(ctx, t.t, runtime.Evaluate, runtime.EvaluateParams{Expression: withHelpers(expr), ContextID: cid})
		if err != nil && attempt == 0 && isNoContext(err) {
			t.forgetWorlds()
			continue
		}
		if err != nil {
			return "", err
		}
		if r.ExceptionDetails != nil {
			return "", scriptError(r.ExceptionDetails)
		}
		if r.Result == nil || r.Result.Subtype == "null" || r.Result.ObjectID == "" {
			return "", nil
		}
		return r.Result.ObjectID, nil
	}
}

// callOnObject is callOn returning an object ("" for null).
func (t *tab) callOnObject(ctx context.Context, obj runtime.RemoteObjectID, fn string) (runtime.RemoteObjectID, error) {
	decl := "function() { const d = " + withHelpers("") + "; return (" + fn + ")(d, this); }"
	r, err := cdp.Call(ctx, t.t, runtime.CallFunctionOn, runtime.CallFunctionOnParams{FunctionDeclaration: decl, ObjectID: obj})
	if err != nil {
		return "", err
	}
	if r.ExceptionDetails != nil {
		return "", scriptError(r.ExceptionDetails)
	}
	if r.Result == nil || r.Result.ObjectID == "" {
		return "", nil
	}
	return r.Result.ObjectID, nil
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
