package browser

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/accessibility"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"
)

// element is what an index of a snapshot stands for: the DOM node, and
// the role and name it had, which must still match before an action
// touches it.
type element struct {
	backend    cdp.BackendNodeID
	role, name string
	frame      cdp.FrameID
}

// snapshot is a page described for a model, as taken at one moment.
type snapshot struct {
	url, title  string
	navigations int // the tab's navigation counter when it was taken
	taken       time.Time
	elements    []element // index N is elements[N-1]
	pages       []string
}

// public returns page n (1-based) as a Snapshot.
func (s *snapshot) public(n int) *Snapshot {
	n = max(1, min(n, len(s.pages)))
	return &Snapshot{URL: s.url, Title: s.title, Page: n, Pages: len(s.pages), Elements: len(s.elements), Text: s.pages[n-1]}
}

// interactive are the roles a model acts on: each gets an index.
var interactive = map[string]bool{
	"button": true, "link": true, "textbox": true, "searchbox": true, "checkbox": true, "radio": true,
	"combobox": true, "listbox": true, "option": true, "menuitem": true, "menuitemcheckbox": true,
	"menuitemradio": true, "tab": true, "switch": true, "slider": true, "spinbutton": true, "treeitem": true,
	"disclosure": true, "ColorWell": true, "Date": true, "DateTime": true, "InputTime": true, "textField": true,
}

// chromeRoles renames Chromium's own roles to words a model knows.
var chromeRoles = map[string]string{"DisclosureTriangle": "disclosure", "ToggleButton": "button", "PopUpButton": "combobox"}

// roleOf is a node's role as snapshots show it.
func roleOf(n *accessibility.Node) string {
	r := axString(n.Role)
	if c, ok := chromeRoles[r]; ok {
		return c
	}
	if r == "generic" && isEditable(n) {
		return "textbox"
	}
	return r
}

// containers are interactive roles whose children are what the model
// acts on.
var containers = map[string]bool{"listbox": true, "radiogroup": true, "menu": true, "menubar": true, "tablist": true, "tree": true, "grid": true, "toolbar": true}

// landmarks open a section of the page; their line names them.
var landmarks = map[string]bool{
	"navigation": true, "main": true, "banner": true, "contentinfo": true, "complementary": true,
	"form": true, "dialog": true, "alertdialog": true, "search": true, "region": true, "alert": true,
}

// blocks end a line of text before and after them.
var blocks = map[string]bool{
	"paragraph": true, "listitem": true, "list": true, "row": true, "table": true, "blockquote": true,
	"article": true, "section": true, "figure": true, "DescriptionList": true, "term": true, "definition": true,
	"group": true, "LabelText": true, "note": true, "status": true, "log": true, "code": true, "separator": true,
}

// takeSnapshot describes the tab's page: its accessibility tree (frames
// of the same process included) walked in reading order.
func (t *tab) takeSnapshot(ctx context.Context, size int) (*snapshot, error) {
	nav, _ := t.ev.counters()
	tree, err := cdp.Call(ctx, t.t, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{})
	if err != nil {
		return nil, fmt.Errorf("read the page: %w", err)
	}
	r := &renderer{t: t, ctx: ctx, owners: map[cdp.BackendNodeID]cdp.FrameID{}}
	if ft, err := cdp.Call(ctx, t.t, page.GetFrameTree, cdp.Empty{}); err == nil {
		r.frameOwners(ft.FrameTree)
	}
	nodes, root := index(tree.Nodes)
	s := &snapshot{navigations: nav, taken: time.Now()}
	if root != nil {
		s.title = axString(root.Name)
		s.url = axProp(root, "url")
	}
	if s.url == "" {
		t.ev.mu.Lock()
		s.url = t.ev.url
		t.ev.mu.Unlock()
	}
	if u, err := url.Parse(s.url); err == nil && u.Host != "" {
		r.origin = u.Scheme + "://" + u.Host
	}
	if root != nil {
		r.walkChildren(nodes, root, cdp.FrameID(t.target))
	}
	r.flush()
	if len(r.lines) == 0 {
		r.lines = append(r.lines, "(the page shows nothing)")
	}
	s.elements = r.elements
	s.pages = paginate(r.lines, size)
	return s, nil
}

func index(list []*accessibility.Node) (map[accessibility.NodeID]*accessibility.Node, *accessibility.Node) {
	m := make(map[accessibility.NodeID]*accessibility.Node, len(list))
	var root *accessibility.Node
	for _, n := range list {
		m[n.NodeID] = n
		if root == nil && n.ParentID == "" {
			root = n
		}
	}
	return m, root
}

// renderer turns accessibility trees into a snapshot's lines.
type renderer struct {
	t      *tab
	ctx    context.Context
	origin string
	owners map[cdp.BackendNodeID]cdp.FrameID // <iframe> element → its frame

	lines    []string
	text     []string // text of the line being gathered
	cells    bool     // the line is a table row: join with |
	elements []element
	quiet    int // inside a heading: its text is already shown
	depth    int
}

func (r *renderer) frameOwners(ft *page.FrameTree) {
	for _, c := range ft.ChildFrames {
		if res, err := cdp.Call(r.ctx, r.t.t, dom.GetFrameOwner, dom.GetFrameOwnerParams{FrameID: c.Frame.ID}); err == nil {
			r.owners[res.BackendNodeID] = c.Frame.ID
		}
		r.frameOwners(c)
	}
}

func (r *renderer) walkChildren(nodes map[accessibility.NodeID]*accessibility.Node, n *accessibility.Node, frame cdp.FrameID) {
	for _, id := range n.ChildIDs {
		if c := nodes[id]; c != nil {
			r.walk(nodes, c, frame)
		}
	}
}

// maxDepth bounds the recursion on hostile trees.
const maxDepth = 200

// walk renders a node and what is below it. It is one case per kind of
// node, in the order they take precedence, so that the format reads
// here as a whole; each case is short.
func (r *renderer) walk(nodes map[accessibility.NodeID]*accessibility.Node, n *accessibility.Node, frame cdp.FrameID) {
	if r.depth > maxDepth {
		return
	}
	r.depth++
	defer func() { r.depth-- }()
	if n.Ignored {
		r.walkChildren(nodes, n, frame)
		return
	}
	role := roleOf(n)
	name := axString(n.Name)
	switch {
	case role == "StaticText":
		if r.quiet == 0 {
			r.addText(name)
		}
	case role == "InlineTextBox":
	case role == "LineBreak":
		r.flush()
	case role == "heading":
		r.flush()
		level, _ := strconv.Atoi(axProp(n, "level"))
		level = max(1, min(level, 6))
		r.line(strings.Repeat("#", level) + " " + clip(oneSpace(name), 200))
		r.quiet++
		r.walkChildren(nodes, n, frame)
		r.quiet--
	case role == "Iframe":
		r.flush()
		child, ok := r.owners[n.BackendDOMNodeID]
		if !ok {
			r.line(fmt.Sprintf("iframe %s (its content is another site's: not shown)", quote(name)))
			return
		}
		tree, err := cdp.Call(r.ctx, r.t.t, accessibility.GetFullAXTree, accessibility.GetFullAXTreeParams{FrameID: child})
		if err != nil {
			r.line(fmt.Sprintf("iframe %s (its content is another site's: not shown)", quote(name)))
			return
		}
		r.line(fmt.Sprintf("iframe %s:", quote(name)))
		sub, root := index(tree.Nodes)
		if root != nil {
			r.walkChildren(sub, root, child)
		}
		r.flush()
		r.line("(end of iframe)")
	case containers[role]:
		r.flush()
		if name != "" {
			r.line(role + " " + quote(name) + ":")
		}
		r.walkChildren(nodes, n, frame)
		r.flush()
	case interactive[role] || (axBool(n, "focusable") && name != "" && role == "generic"):
		r.flush()
		r.element(nodes, n, role, name, frame)
	case role == "image" || role == "img":
		if name != "" {
			r.addText("[image: " + clip(oneSpace(name), 100) + "]")
		}
	case landmarks[role]:
		r.flush()
		if name != "" || role == "dialog" || role == "alertdialog" || role == "alert" || role == "main" || role == "navigation" {
			r.line(strings.TrimSpace(role+" "+quoteOpt(name)) + ":")
		}
		r.walkChildren(nodes, n, frame)
		r.flush()
	case role == "cell" || role == "gridcell" || role == "columnheader" || role == "rowheader":
		if len(r.text) > 0 {
			r.text = append(r.text, "|")
		}
		r.cells = true
		r.walkChildren(nodes, n, frame)
	case role == "listitem":
		r.flush()
		r.text = append(r.text, "-")
		r.walkChildren(nodes, n, frame)
		r.flush()
	case role == "LabelText":
		// A label's text is the name of the control it labels.
		r.flush()
		r.quiet++
		r.walkChildren(nodes, n, frame)
		r.quiet--
		r.flush()
	case blocks[role]:
		r.flush()
		r.walkChildren(nodes, n, frame)
		r.flush()
	default:
		r.walkChildren(nodes, n, frame)
	}
}

// element writes an indexed element: [N] role "name" state.
func (r *renderer) element(nodes map[accessibility.NodeID]*accessibility.Node, n *accessibility.Node, role, name string, frame cdp.FrameID) {
	idx := len(r.elements) + 1
	r.elements = append(r.elements, element{backend: n.BackendDOMNodeID, role: role, name: name, frame: frame})
	var b strings.Builder
	fmt.Fprintf(&b, "[%d] %s %s", idx, role, quote(clip(oneSpace(name), 100)))
	for _, st := range states(n, role) {
		b.WriteString(" " + st)
	}
	if v := axString(n.Value); v != "" && hasValue(role) {
		if r.sensitive(n, v) {
			fmt.Fprintf(&b, " value=(hidden: %d characters)", len([]rune(v)))
		} else {
			b.WriteString(" value=" + quote(clip(oneSpace(v), 100)))
		}
	}
	if role == "link" {
		if u := axProp(n, "url"); u != "" {
			b.WriteString(" → " + clip(r.short(u), 120))
		}
	}
	if role == "combobox" {
		if opts := options(nodes, n); len(opts) > 0 {
			b.WriteString(" options: " + strings.Join(opts, ", "))
		}
	}
	r.line(b.String())
}

// options lists a <select>'s option labels (at most 12).
func options(nodes map[accessibility.NodeID]*accessibility.Node, n *accessibility.Node) []string {
	var out []string
	var visit func(n *accessibility.Node, depth int)
	visit = func(n *accessibility.Node, depth int) {
		if depth > 3 {
			return
		}
		for _, id := range n.ChildIDs {
			c := nodes[id]
			if c == nil {
				continue
			}
			if r := axString(c.Role); r == "option" || r == "MenuListOption" {
				if len(out) == 12 {
					out = append(out, "…")
					return
				}
				if len(out) < 12 {
					out = append(out, quote(clip(oneSpace(axString(c.Name)), 40)))
				}
				continue
			}
			visit(c, depth+1)
		}
	}
	visit(n, 0)
	return out
}

// states are the element's state words that matter to a model.
func states(n *accessibility.Node, role string) []string {
	var out []string
	for _, p := range n.Properties {
		v := strings.Trim(string(p.Value.Value), `"`)
		switch p.Name {
		case "checked":
			switch v {
			case "true":
				out = append(out, "checked")
			case "mixed":
				out = append(out, "mixed")
			default:
				out = append(out, "unchecked")
			}
		case "pressed":
			if v == "true" {
				out = append(out, "pressed")
			}
		case "selected":
			if v == "true" {
				out = append(out, "selected")
			}
		case "expanded":
			if v == "true" {
				out = append(out, "expanded")
			} else {
				out = append(out, "collapsed")
			}
		case "disabled":
			if v == "true" {
				out = append(out, "disabled")
			}
		case "required":
			if v == "true" {
				out = append(out, "required")
			}
		case "invalid":
			if v != "false" && v != "" {
				out = append(out, "invalid")
			}
		case "readonly":
			if v == "true" {
				out = append(out, "readonly")
			}
		}
	}
	return out
}

func hasValue(role string) bool {
	switch role {
	case "textbox", "searchbox", "combobox", "spinbutton", "slider", "textField", "Date", "DateTime", "InputTime", "ColorWell":
		return true
	}
	return false
}

// isEditable reports a contenteditable element (a rich text field).
func isEditable(n *accessibility.Node) bool {
	return axProp(n, "editable") == "richtext" && axBool(n, "focusable")
}

// sensitive reports whether a field's value must not be shown: a
// password, a card number, a one-time code (by the field's type,
// autocomplete, name or id), or a value that is a card number.
func (r *renderer) sensitive(n *accessibility.Node, value string) bool {
	if looksLikeCard(value) || strings.Trim(value, "•") == "" {
		return true
	}
	res, err := cdp.Call(r.ctx, r.t.t, dom.DescribeNode, dom.DescribeNodeParams{BackendNodeID: n.BackendDOMNodeID, Depth: ptr(int64(0))})
	if err != nil || res.Node == nil {
		return true // when in doubt, hide
	}
	return sensitiveAttrs(res.Node.Attributes)
}

// sensitiveAttrs judges a field by its attributes (name, value, name,
// value, ... as DOM.describeNode gives them).
func sensitiveAttrs(attrs []string) bool {
	for i := 0; i+1 < len(attrs); i += 2 {
		k, v := strings.ToLower(attrs[i]), strings.ToLower(attrs[i+1])
		switch k {
		case "type":
			if v == "password" {
				return true
			}
		case "autocomplete":
			for _, f := range strings.Fields(v) {
				if strings.HasPrefix(f, "cc-") || f == "one-time-code" || f == "current-password" || f == "new-password" {
					return true
				}
			}
		case "name", "id":
			if sensitiveName(v) {
				return true
			}
		}
	}
	return false
}

func sensitiveName(v string) bool {
	v = strings.NewReplacer("-", "", "_", "", " ", "").Replace(v)
	for _, w := range []string{"password", "passwd", "cardnumber", "ccnumber", "cardno", "creditcard", "cvv", "cvc", "csc", "otp", "onetimecode", "securitycode", "passcode", "pincode"} {
		if strings.Contains(v, w) {
			return true
		}
	}
	return false
}

// short writes a URL of the page's own site as its path.
func (r *renderer) short(u string) string {
	if r.origin != "" && strings.HasPrefix(u, r.origin+"/") {
		return u[len(r.origin):]
	}
	return u
}

func (r *renderer) addText(s string) {
	s = oneSpace(s)
	if s == "" {
		return
	}
	r.text = append(r.text, s)
	if n := len(strings.Join(r.text, " ")); n > 400 {
		r.flush()
	}
}

func (r *renderer) flush() {
	if len(r.text) == 0 {
		return
	}
	s := strings.Join(r.text, " ")
	r.text, r.cells = r.text[:0], false
	if strings.TrimSpace(strings.Trim(s, "-| ")) == "" {
		return
	}
	r.line(s)
}

func (r *renderer) line(s string) {
	s = maskCards(s)
	// Repeated lines (a menu shown twice, a row of dividers) once each
	// in a row.
	if n := len(r.lines); n > 0 && r.lines[n-1] == s {
		return
	}
	r.lines = append(r.lines, s)
}

// paginate cuts lines into pages of about size characters.
func paginate(lines []string, size int) []string {
	var pages []string
	var b strings.Builder
	for _, l := range lines {
		if b.Len() > 0 && b.Len()+len(l)+1 > size {
			pages = append(pages, strings.TrimRight(b.String(), "\n"))
			b.Reset()
		}
		if len(l) > size {
			l = clip(l, size)
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	if b.Len() > 0 || len(pages) == 0 {
		pages = append(pages, strings.TrimRight(b.String(), "\n"))
	}
	return pages
}

// checkElement reports whether a snapshot's element is still what it
// was: the same DOM node, with the same role and name. now describes
// what is there instead.
func (t *tab) checkElement(ctx context.Context, el element) (ok bool, now string, err error) {
	res, err := cdp.Call(ctx, t.t, accessibility.GetPartialAXTree, accessibility.GetPartialAXTreeParams{BackendNodeID: el.backend, FetchRelatives: ptr(false)})
	if err != nil {
		var ce *cdproto.Error
		if errors.As(err, &ce) {
			return false, "it is no longer in the page", nil
		}
		return false, "", err
	}
	for _, n := range res.Nodes {
		if n.BackendDOMNodeID != el.backend {
			continue
		}
		role, name := roleOf(n), axString(n.Name)
		if n.Ignored {
			return false, "it is hidden now", nil
		}
		if role != el.role || name != el.name {
			return false, fmt.Sprintf("it is now %s %s", role, quote(clip(oneSpace(name), 100))), nil
		}
		return true, "", nil
	}
	return false, "it is no longer in the page", nil
}

func axString(v *accessibility.Value) string {
	if v == nil || len(v.Value) == 0 {
		return ""
	}
	var s string
	if err := json.Unmarshal(v.Value, &s); err != nil {
		return strings.Trim(string(v.Value), `"`)
	}
	return s
}

func axProp(n *accessibility.Node, name string) string {
	for _, p := range n.Properties {
		if string(p.Name) == name && p.Value != nil {
			return axString(p.Value)
		}
	}
	return ""
}

func axBool(n *accessibility.Node, name string) bool { return axProp(n, name) == "true" }
