package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
)

// Env is what a session's browser needs of the session.
type Env struct {
	// Computer is the session's running computer.
	Computer Computer
	// Workspace is the host folder the computer has at /workspace;
	// downloads land in its downloads/ folder.
	Workspace string
	// Files is the host folder the computer has at /den/browser;
	// screenshots and PDFs are saved there.
	Files string
	// Resolve opens den:// URLs; nil refuses them.
	Resolve Resolver
	// Open opens a file of the computer by its path inside it, for
	// upload (Action.Path is then that path), as the computer could
	// open it itself; nil: Action.Path is a host path the caller
	// checked.
	Open func(guestPath string) (*os.File, error)
}

// Resolver opens what a den:// URL names, for a page to load.
type Resolver func(ctx context.Context, denURL string) (body io.ReadCloser, contentType string, err error)

// Session is a session's browser: its tabs in the agent's Chromium,
// and the actions it runs there, one at a time. Takeover methods
// (Screencast, TakeControl, Input, ReleaseControl) may be called while
// an action runs.
type Session struct {
	b  *Browser
	id string

	act sync.Mutex // held by the running action

	mu        sync.Mutex // guards the fields below
	env       Env
	place     *place // the computer as last seen; nil when env changed
	tabs      []*tab
	cur       *tab
	nextTab   int
	notes     []string
	downloads []Download
	pending   int // downloads begun and not finished
	closed    bool

	watching int           // screencasts running: the tabs are in use
	control  bool          // the user controls the browser
	operated bool          // the user operated it since the agent's last action
	released chan struct{} // closed when the user gives control back
}

func (s *Session) setEnv(env Env) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.env.Computer != env.Computer && s.place != nil {
		s.place.close()
		s.place = nil
	}
	s.env = env
}

func (s *Session) computer() Computer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.env.Computer
}

func (s *Session) environment() Env {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.env
}

// where returns the session's computer, found again when it stopped.
func (s *Session) where() (*place, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.place != nil && s.place.alive() {
		return s.place, nil
	}
	if s.place != nil {
		s.place.close()
		s.place = nil
	}
	if s.env.Computer == nil {
		return nil, fmt.Errorf("%w: the session has no computer", ErrNoComputer)
	}
	p, err := findPlace(s.env.Computer)
	if err != nil {
		return nil, err
	}
	s.place = p
	return p, nil
}

func (s *Session) note(format string, args ...any) {
	s.mu.Lock()
	s.notes = appendCapped(s.notes, fmt.Sprintf(format, args...))
	s.mu.Unlock()
}

// maxNotes bounds the notes a result carries: a page that shows dialogs
// or opens tabs in a loop must not grow them without end.
const maxNotes = 20

// appendCapped appends a note, or counts it in a last "N more notes"
// past maxNotes.
func appendCapped(notes []string, n string) []string {
	return capNotes(append(notes, n))
}

// capNotes keeps maxNotes notes and counts the rest (counts of earlier
// caps included) in one last note.
func capNotes(notes []string) []string {
	if len(notes) <= maxNotes {
		return notes
	}
	more := 0
	for _, n := range notes[maxNotes:] {
		var k int
		if _, err := fmt.Sscanf(n, "%d more note", &k); err == nil && strings.HasSuffix(strings.TrimSuffix(n, "s"), " more note") {
			more += k
		} else {
			more++
		}
	}
	word := "notes"
	if more == 1 {
		word = "note"
	}
	return append(notes[:maxNotes:maxNotes], fmt.Sprintf("%d more %s", more, word))
}

// Close closes the session's tabs and forgets it.
func (s *Session) Close() error {
	s.act.Lock()
	defer s.act.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	tabs := s.tabs
	s.tabs, s.cur = nil, nil
	if s.place != nil {
		s.place.close()
		s.place = nil
	}
	if s.control {
		s.control = false
		close(s.released)
	}
	s.mu.Unlock()
	for _, t := range tabs {
		t.close()
	}
	s.b.forget(s)
	return nil
}

// Do runs an action and says what happened. Whatever the model can act
// on (bad parameters, nothing matched, a stale index, a page that would
// not load, a browser that cannot run, a timeout) is a Result; the
// error is for a cancelled ctx and a closed Session only. Do never runs
// longer than the action's timeout (plus, while the user controls the
// browser, Options.TakeoverWait).
func (s *Session) Do(ctx context.Context, a Action) (*Result, error) {
	res := &Result{Action: a.Name}
	if msg := a.check(); msg != "" {
		res.Code, res.Message = Invalid, msg
		return res, nil
	}
	waited, err := s.awaitControl(ctx)
	if err != nil {
		return nil, err
	}
	timeout := a.Timeout
	if timeout == 0 {
		timeout = s.b.o.Timeout
	}
	actx, cancel := context.WithTimeout(ctx, min(timeout, MaxTimeout))
	defer cancel()

	s.act.Lock()
	defer s.act.Unlock()
	if s.isClosed() {
		return nil, ErrClosed
	}
	s.b.use(1)
	defer s.b.use(-1)
	t := s.prepare(actx, a, res)
	if res.Code == Done {
		switch {
		case waited != "":
			s.takeoverResult(actx, t, res, waited)
		case s.takeOperated():
			s.takeoverResult(actx, t, res, "The user operated the browser since your last action; your action was not done.")
		default:
			s.runTab(actx, t, a, res)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if actx.Err() != nil && res.Code == Done {
		res.Code = Timeout
		res.Message = strings.TrimSpace(fmt.Sprintf("%s timed out after %v. %s", a.Name, min(timeout, MaxTimeout), res.Message))
	}
	if res.Code == Timeout && t != nil {
		t.suspect = true
	}
	s.finish(t, res)
	return res, nil
}

// runTab runs a, ending it at once when t's renderer crashes (or is
// killed for using more memory than Chromium's group may), and says so
// in res.
func (s *Session) runTab(ctx context.Context, t *tab, a Action, res *Result) {
	if t == nil {
		s.run(ctx, t, a, res)
		return
	}
	ooms := t.c.oomKills()
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-t.ev.dead():
			cancel()
		case <-ctx.Done():
		}
	}()
	s.run(ctx, t, a, res)
	cancel()
	<-done
	if !t.ev.isCrashed() {
		return
	}
	res.Code, res.Message = Failed, "The tab crashed while "+a.Name+" ran; den opens a new tab at your next action."
	if s.b.o.Memory > 0 && t.c.oomKills() > ooms {
		t.oom = true
		res.Message = fmt.Sprintf("The tab ran out of memory while %s ran: Chromium may use %s in all, and the kernel killed the page. "+
			"Den closes the tab at your next action and does not reopen the page.", a.Name, formatMiB(s.b.o.Memory))
	}
}

// formatMiB writes a size in MiB.
func formatMiB(n int64) string { return strconv.FormatInt(n>>20, 10) + " MiB" }

func (s *Session) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// pageless are the actions that need no current tab.
var pageless = []string{"tabs", "open_tab", "switch_tab", "close_tab"}

// prepare makes sure Chromium runs in the session's computer and, for
// actions that need a page, that the session has a working current tab.
// A failure is written to res.
func (s *Session) prepare(ctx context.Context, a Action, res *Result) *tab {
	p, err := s.where()
	if err != nil {
		res.Code, res.Message = Unavailable, "The browser cannot run: "+describeErr(err)
		return nil
	}
	c, gen, err := s.b.ensure(ctx, s, p)
	if err != nil {
		res.Code, res.Message = Unavailable, "The browser cannot run: "+describeErr(err)
		if ctx.Err() != nil {
			res.Code, res.Message = Timeout, "The browser did not start in time."
		}
		return nil
	}
	reopen := s.dropDeadTabs(gen)
	s.mu.Lock()
	t := s.cur
	s.mu.Unlock()
	if t != nil && (t.ev.isCrashed() || (t.suspect && !t.responds(ctx))) {
		why := "the tab crashed"
		if !t.ev.isCrashed() {
			why = "the tab stopped responding"
		}
		reopen = t.url()
		if t.oom {
			// Its page would likely eat the memory again.
			why, reopen = "the tab ran out of memory", ""
		}
		s.removeTab(t)
		t.close()
		t = nil
		s.note("%s; den closed it", why)
	}
	if t == nil && (reopen != "" || !slices.Contains(pageless, a.Name)) {
		if t, err = s.openTab(ctx, c, gen); err != nil {
			res.Code, res.Message = Failed, "Could not open a tab: "+describeErr(err)
			return nil
		}
		if reopen != "" && reopenable(reopen) {
			if msg, code := t.navigate(ctx, s, reopen); code == Done {
				s.note("den reopened the page %s in a new tab %d (what was typed there is lost)", reopen, t.id)
			} else {
				s.note("den could not reopen %s: %s", reopen, msg)
			}
		}
	}
	if t != nil {
		t.lastUse = time.Now()
		t.ev.mu.Lock()
		t.ev.accept, t.ev.prompt = a.Dialog == "accept", a.PromptText
		t.ev.mu.Unlock()
	}
	return t
}

// dropDeadTabs forgets the tabs of a Chromium that stopped, noting why,
// and returns the URL of the current one if it went, to reopen.
func (s *Session) dropDeadTabs(gen int) (reopen string) {
	s.mu.Lock()
	var dead []*tab
	live := s.tabs[:0]
	for _, t := range s.tabs {
		if t.gen != gen {
			dead = append(dead, t)
		} else {
			live = append(live, t)
		}
	}
	s.tabs = live
	if s.cur != nil && s.cur.gen != gen {
		reopen = s.cur.url()
		s.cur = nil
	}
	if s.cur == nil && len(live) > 0 {
		s.cur = live[len(live)-1]
	}
	s.mu.Unlock()
	if len(dead) > 0 {
		s.note("%s; the session's %d tab(s) were closed", s.b.endReason(dead[0].gen), len(dead))
	}
	for _, t := range dead {
		t.cancel()
	}
	return reopen
}

// reopenable says whether a page may be loaded again after a crash:
// only web pages (a data: URL or about:blank have nothing to lose).
func reopenable(u string) bool {
	return strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://")
}

// openTab opens a tab and makes it current.
func (s *Session) openTab(ctx context.Context, c *chromium, gen int) (*tab, error) {
	s.mu.Lock()
	id := s.nextTab
	s.nextTab++
	s.mu.Unlock()
	t, err := newTab(ctx, c, id, gen)
	if err != nil {
		return nil, err
	}
	s.addTab(t)
	return t, nil
}

func (s *Session) addTab(t *tab) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tabs = append(s.tabs, t)
	s.cur = t
}

func (s *Session) removeTab(t *tab) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tabs = slices.DeleteFunc(s.tabs, func(x *tab) bool { return x == t })
	if s.cur == t {
		s.cur = nil
		if len(s.tabs) > 0 {
			s.cur = s.tabs[len(s.tabs)-1]
		}
	}
}

func (s *Session) tabByTarget(id string) *tab {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tabs {
		if string(t.target) == id {
			return t
		}
	}
	return nil
}

func (s *Session) current() *tab {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cur
}

// closeIdleTabs closes the tabs no action used for idle, unless an
// action runs now.
func (s *Session) closeIdleTabs(idle time.Duration) {
	if !s.act.TryLock() {
		return
	}
	defer s.act.Unlock()
	s.mu.Lock()
	var old []*tab
	for _, t := range s.tabs {
		if s.watching == 0 && time.Since(t.lastUse) > idle {
			old = append(old, t)
		}
	}
	s.mu.Unlock()
	for _, t := range old {
		s.removeTab(t)
		t.close()
		s.note("tab %d (%s) was closed after %v without use", t.id, t.url(), idle)
	}
}

// finish fills what every result carries: the current tab and page,
// and the notes, dialogs and downloads since the last result.
func (s *Session) finish(t *tab, res *Result) {
	cur := s.current()
	if t != nil {
		t.lastUse = time.Now()
	}
	if cur != nil {
		cur.lastUse = time.Now()
		res.Tab = cur.id
		if res.URL == "" || res.Title == "" {
			res.URL, res.Title = cur.info()
		}
		if t != cur && t != nil {
			res.Notes = append(res.Notes, t.ev.takeDialogs()...)
		}
		res.Notes = append(res.Notes, cur.ev.takeDialogs()...)
	}
	if res.Snapshot != nil {
		res.Snapshot.URL = fromDenURL(res.Snapshot.URL)
	}
	res.URL = fromDenURL(res.URL)
	s.mu.Lock()
	res.Notes = capNotes(append(s.notes, res.Notes...))
	s.notes = nil
	res.Downloads = append(res.Downloads, s.downloads...)
	s.downloads = nil
	if s.pending > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("%d download(s) still in progress; a later result will report them", s.pending))
	}
	s.mu.Unlock()
}

// describeErr words an error for the model, without den's package
// prefixes.
func describeErr(err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "it took too long"
	case errors.Is(err, ErrClosed):
		return "the browser is closed"
	}
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "browser: ")
	return msg
}

// url is the tab's current URL as its events tell.
func (t *tab) url() string {
	t.ev.mu.Lock()
	defer t.ev.mu.Unlock()
	return t.ev.url
}

// info asks Chromium for the tab's URL and title (it answers even when
// the page's renderer is busy).
func (t *tab) info() (url, title string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	res, err := cdp.Call(ctx, t.c.b, target.GetTargetInfo, target.GetTargetInfoParams{TargetID: t.target})
	if err != nil || res.TargetInfo == nil {
		return t.url(), ""
	}
	return res.TargetInfo.URL, res.TargetInfo.Title
}

// responds reports whether the page's renderer answers within a second
// (after den stopped any navigation still pending).
func (t *tab) responds(ctx context.Context) bool {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	cdp.Call(ctx, t.t, page.StopLoading, cdp.Empty{})
	_, err := cdp.Call(ctx, t.t, runtime.Evaluate, runtime.EvaluateParams{Expression: "1", ReturnByValue: ptr(true)})
	if err == nil {
		t.suspect = false
	}
	return err == nil
}
