package browser

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

//go:embed js/den.js
var denJS string

// world is the name of den's isolated world in every frame.
const world = "den"

// tab is one of a session's tabs: a page target and what den knows of
// it. Fields other than ev are used by the session's actions only (one
// at a time).
type tab struct {
	id     int
	target target.ID
	ctx    context.Context // the tab's chromedp context; canceling it closes the tab
	cancel context.CancelFunc
	t      *chromedp.Target
	gen    int // the Chromium it belongs to (Browser.gen at its creation)

	lastUse time.Time
	snap    *snapshot // the latest snapshot, whose indexes actions use
	ev      *tabEvents

	c       *chromium
	suspect bool // an action timed out: check the page answers before the next
	oom     bool // it crashed when Chromium's group ran out of memory

	dialogsDone chan struct{} // closed when answerDialogs returns
	denDone     chan struct{} // closed when serveDen's goroutine returns; nil until started
}

// tabEvents is what the tab's events tell, updated on chromedp's read
// loop (so under a lock and quickly).
type tabEvents struct {
	mu sync.Mutex

	inflight map[network.RequestID]time.Time
	lastNet  time.Time
	loading  bool // the main frame is loading
	// requested is when the page asked to navigate its main frame (a
	// form submitted, a link followed, location set) and the navigation
	// has not begun yet: zero otherwise. The browser starts it a moment
	// later, longer on a busy machine.
	requested time.Time

	crashed     bool
	crash       chan struct{} // closed when crashed; made at first use
	navigations int           // main-frame navigations, in-document ones included
	documents   int           // main-frame documents loaded
	loaded      bool
	url         string
	status      int64 // HTTP status of the main document
	statusText  string

	mainID  string // the main frame's id: the target's
	worlds  map[cdp.FrameID]runtime.ExecutionContextID
	dialogs []string // dialogs den answered, to report
	accept  bool     // answer confirm and prompt dialogs with OK (the current action's choice)
	prompt  string   // text for a prompt dialog den accepts
	chooser *page.EventFileChooserOpened
}

// newTab opens a tab in c (at about:blank) and attaches to it.
func newTab(ctx context.Context, c *chromium, id, gen int) (*tab, error) {
	res, err := cdp.Call(ctx, c.b, target.CreateTarget, target.CreateTargetParams{URL: "about:blank", NewWindow: ptr(true)})
	if err != nil {
		return nil, fmt.Errorf("open a tab: %w", err)
	}
	return attachTab(ctx, c, res.TargetID, id, gen)
}

// attachTab attaches to an existing page target (a tab den opened, or a
// popup the page opened).
func attachTab(ctx context.Context, c *chromium, tid target.ID, id, gen int) (*tab, error) {
	ev := &tabEvents{inflight: map[network.RequestID]time.Time{}, worlds: map[cdp.FrameID]runtime.ExecutionContextID{}, mainID: string(tid)}
	tctx, cancel := chromedp.NewContext(c.alloc, chromedp.WithTargetID(tid), chromedp.WithListener(ev.handle))
	t := &tab{id: id, target: tid, ctx: tctx, cancel: cancel, gen: gen, lastUse: time.Now(), ev: ev, c: c, dialogsDone: make(chan struct{})}
	// The tab's context lives on after ctx (the action's) ends; the
	// attach itself is bounded by ctx.
	attached := make(chan error, 1)
	go func() {
		_, err := chromedp.Run(tctx, func(_ context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			t.t = tg
			return chromedp.Void{}, nil
		})
		attached <- err
	}()
	select {
	case err := <-attached:
		if err != nil {
			cancel()
			return nil, fmt.Errorf("attach to the tab: %w", err)
		}
	case <-ctx.Done():
		go func() { <-attached; cancel() }()
		return nil, ctx.Err()
	}
	go t.answerDialogs()
	if err := t.setup(ctx); err != nil {
		t.close()
		return nil, err
	}
	if u, _ := t.info(); u != "" {
		ev.mu.Lock()
		if ev.url == "" {
			ev.url = u
		}
		ev.mu.Unlock()
	}
	return t, nil
}

// answerDialogs answers the page's alert, confirm, prompt and
// beforeunload dialogs, which would otherwise stop its scripts (and
// den's) until answered: alerts and leaving the page are accepted,
// confirm and prompt dismissed unless the current action says accept.
// It returns when the tab closes.
func (t *tab) answerDialogs() {
	defer close(t.dialogsDone)
	for ev, err := range cdp.Events(t.ctx, t.t, page.JavascriptDialogOpening) {
		if err != nil {
			return
		}
		t.ev.mu.Lock()
		accept := t.ev.accept || ev.Type == page.DialogTypeAlert || ev.Type == page.DialogTypeBeforeunload
		prompt := t.ev.prompt
		t.ev.mu.Unlock()
		verb := "dismissed"
		if accept {
			verb = "accepted"
		}
		// The note goes in before the answer: once answered, the page's
		// script runs on and the action's result may be gathered before
		// the answer's reply reaches this loop.
		what := map[page.DialogType]string{page.DialogTypeAlert: "an alert", page.DialogTypeConfirm: "a confirm dialog", page.DialogTypePrompt: "a prompt", page.DialogTypeBeforeunload: "a leave-this-page dialog"}[ev.Type]
		t.ev.mu.Lock()
		t.ev.dialogs = appendCapped(t.ev.dialogs, fmt.Sprintf("the page showed %s %q; den %s it", what, clip(ev.Message, 300), verb))
		t.ev.mu.Unlock()
		ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
		_, err := cdp.Call(ctx, t.t, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept, PromptText: prompt})
		cancel()
		if err != nil {
			t.ev.mu.Lock()
			t.ev.dialogs = appendCapped(t.ev.dialogs, fmt.Sprintf("den could not answer %s %q: %v", what, clip(ev.Message, 300), err))
			t.ev.mu.Unlock()
		}
	}
}

// setup installs den's helpers in every new document, and lets den
// answer the page's file choosers.
func (t *tab) setup(ctx context.Context) error {
	if _, err := cdp.Call(ctx, t.t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
		Source: denJS, WorldName: world, RunImmediately: ptr(true),
	}); err != nil {
		return fmt.Errorf("set up the tab: %w", err)
	}
	return nil
}

// close closes the tab (chromedp detaches and closes the target) and
// waits for its goroutine.
func (t *tab) close() {
	t.cancel()
	if t.t != nil {
		<-t.dialogsDone
	}
	if t.denDone != nil {
		<-t.denDone
	}
}

func (e *tabEvents) handle(v any) {
	now := time.Now()
	e.mu.Lock()
	defer e.mu.Unlock()
	switch ev := v.(type) {
	case *page.EventFrameRequestedNavigation:
		if string(ev.FrameID) == e.mainID && ev.Disposition == page.ClientNavigationDispositionCurrentTab {
			e.requested, e.lastNet = now, now
		}
	case *page.EventFrameStartedNavigating:
		if string(ev.FrameID) == e.mainID && (ev.NavigationType == page.FrameStartedNavigatingNavigationTypeSameDocument ||
			ev.NavigationType == page.FrameStartedNavigatingNavigationTypeHistorySameDocument) {
			e.requested = time.Time{}
		}
	case *network.EventRequestWillBeSent:
		if ev.Type != network.ResourceTypeEventSource && ev.Type != network.ResourceTypeWebSocket {
			e.inflight[ev.RequestID] = now
		}
		if ev.Type == network.ResourceTypeDocument && string(ev.FrameID) == e.mainID {
			e.requested = time.Time{} // the request is in flight now
		}
		e.lastNet = now
	case *network.EventLoadingFinished:
		delete(e.inflight, ev.RequestID)
		e.lastNet = now
	case *network.EventLoadingFailed:
		delete(e.inflight, ev.RequestID)
		e.lastNet = now
	case *network.EventResponseReceived:
		if ev.Type == network.ResourceTypeDocument && ev.Response != nil && string(ev.FrameID) == e.mainFrame() {
			e.status, e.statusText = ev.Response.Status, ev.Response.StatusText
		}
	case *page.EventFrameNavigated:
		if ev.Frame.ParentID == "" {
			e.navigations++
			e.documents++
			e.loaded, e.requested = false, time.Time{}
			e.url = ev.Frame.URL + ev.Frame.URLFragment
		}
		clear(e.worlds)
	case *page.EventNavigatedWithinDocument:
		if string(ev.FrameID) == e.mainFrame() {
			e.navigations++
			e.url = ev.URL
			e.requested = time.Time{}
		}
	case *page.EventLoadEventFired:
		e.loaded = true
	case *page.EventFrameStartedLoading:
		if string(ev.FrameID) == e.mainID {
			e.loading, e.lastNet = true, now
		}
	case *page.EventFrameStoppedLoading:
		if string(ev.FrameID) == e.mainID {
			e.loading, e.lastNet = false, now
		}
	case *inspector.EventTargetCrashed:
		if !e.crashed {
			e.crashed = true
			close(e.crashCh())
		}
	case *runtime.EventExecutionContextsCleared, *runtime.EventExecutionContextDestroyed:
		clear(e.worlds)
	case *page.EventFileChooserOpened:
		e.chooser = ev
	}
}

// mainFrame is the id of the tab's main frame, which is its target's.
func (e *tabEvents) mainFrame() string { return e.mainID }

// busy reports requests in flight, not counting those older than
// longPoll (long polls and streams that never end), the last network
// event, and whether the main frame is loading, or about to: a
// navigation the page requested counts for navStartMax while it has
// not begun (the page may yet cancel it, and no event says so).
func (e *tabEvents) busy(now time.Time) (inflight int, lastNet time.Time, loading bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, at := range e.inflight {
		if now.Sub(at) < longPoll {
			inflight++
		}
	}
	pending := !e.requested.IsZero() && now.Sub(e.requested) < navStartMax
	return inflight, e.lastNet, pending || e.loading && now.Sub(e.lastNet) < longPoll
}

// navStartMax is how long a navigation the page requested keeps the
// page from counting as settled before it begins.
const navStartMax = 2 * time.Second

// longPoll is the age past which a request in flight no longer keeps a
// page from counting as settled.
const longPoll = 5 * time.Second

// counters returns the navigation and document counters.
func (e *tabEvents) counters() (navigations, documents int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.navigations, e.documents
}

// crashCh is e.crash, made if needed. The caller holds e.mu.
func (e *tabEvents) crashCh() chan struct{} {
	if e.crash == nil {
		e.crash = make(chan struct{})
	}
	return e.crash
}

// dead is closed when the tab's renderer crashes (or is killed).
func (e *tabEvents) dead() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.crashCh()
}

func (e *tabEvents) isCrashed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.crashed
}

// takeDialogs returns the dialogs den answered since the last call.
func (e *tabEvents) takeDialogs() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.dialogs
	e.dialogs = nil
	return d
}

// errNoWorld says a frame's isolated world is gone (the frame navigated).
var errNoWorld = errors.New("den's world in the frame is gone")

// worldOf returns den's isolated world in a frame, creating it if
// needed (the helpers install themselves on first use).
func (t *tab) worldOf(ctx context.Context, frame cdp.FrameID) (runtime.ExecutionContextID, error) {
	if frame == "" {
		frame = cdp.FrameID(t.target)
	}
	t.ev.mu.Lock()
	id, ok := t.ev.worlds[frame]
	t.ev.mu.Unlock()
	if ok {
		return id, nil
	}
	res, err := cdp.Call(ctx, t.t, page.CreateIsolatedWorld, page.CreateIsolatedWorldParams{FrameID: frame, WorldName: world})
	if err != nil {
		return 0, err
	}
	t.ev.mu.Lock()
	t.ev.worlds[frame] = res.ExecutionContextID
	t.ev.mu.Unlock()
	return res.ExecutionContextID, nil
}

func withHelpers(expr string) string {
	return "(globalThis.__den || " + strings.TrimSpace(denJS) + ")" + expr
}

// eval evaluates expr (which follows the helpers object, as in
// ".state()") in den's world of the main frame, and decodes its JSON
// value into out.
func (t *tab) eval(ctx context.Context, expr string, out any) error {
	for attempt := 0; ; attempt++ {
		cid, err := t.worldOf(ctx, "")
		if err != nil {
			return err
		}
		res, err := cdp.Call(ctx, t.t, runtime.Evaluate, runtime.EvaluateParams{
			Expression: withHelpers(expr), ContextID: cid, ReturnByValue: ptr(true), AwaitPromise: ptr(true),
		})
		if err != nil && attempt == 0 && isNoContext(err) {
			t.forgetWorlds()
			continue
		}
		if err != nil {
			return err
		}
		if res.ExceptionDetails != nil {
			return scriptError(res.ExceptionDetails)
		}
		if out == nil || res.Result == nil {
			return nil
		}
		return json.Unmarshal(res.Result.Value, out)
	}
}

func (t *tab) forgetWorlds() {
	t.ev.mu.Lock()
	clear(t.ev.worlds)
	t.ev.mu.Unlock()
}

func isNoContext(err error) bool {
	var e *cdproto.Error
	return errors.As(err, &e) && (strings.Contains(e.Message, "context") || strings.Contains(e.Message, "Context"))
}

// ScriptError is an exception a script threw in the page.
type scriptErr struct{ text string }

func (e *scriptErr) Error() string { return e.text }

func scriptError(d *runtime.ExceptionDetails) error {
	text := d.Text
	if d.Exception != nil && d.Exception.Description != "" {
		text = d.Exception.Description
	}
	if i := strings.Index(text, "\n    at "); i > 0 {
		text = text[:i]
	}
	return &scriptErr{text}
}

// callOn calls fn (a function of the helpers d and the element, then
// args: "(d, el, a) => ...") on a node resolved in den's world, and
// decodes its JSON value into out.
func (t *tab) callOn(ctx context.Context, obj runtime.RemoteObjectID, fn string, out any, args ...any) error {
	var cargs []*runtime.CallArgument
	for _, a := range args {
		b, err := json.Marshal(a)
		if err != nil {
			return err
		}
		cargs = append(cargs, &runtime.CallArgument{Value: b})
	}
	decl := "function(...args) { const d = " + withHelpers("") + "; return (" + fn + ")(d, this, ...args); }"
	res, err := cdp.Call(ctx, t.t, runtime.CallFunctionOn, runtime.CallFunctionOnParams{
		FunctionDeclaration: decl, ObjectID: obj, Arguments: cargs, ReturnByValue: ptr(true), AwaitPromise: ptr(true),
	})
	if err != nil {
		return err
	}
	if res.ExceptionDetails != nil {
		return scriptError(res.ExceptionDetails)
	}
	if out == nil || res.Result == nil {
		return nil
	}
	return json.Unmarshal(res.Result.Value, out)
}

func ptr[T any](v T) *T { return &v }
