package browser

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
)

// Settling: a page counts as settled when no request is in flight (but
// long polls) and its DOM has not changed for settleQuiet, waited for at
// most settleMax after an action (loadMax for a page that loads).
const (
	settleQuiet = 80 * time.Millisecond
	settleMax   = 3 * time.Second
	// A page that just loaded gets a longer quiet window: apps often
	// fetch their content from a timer after the load.
	loadQuiet = 300 * time.Millisecond
	loadMax   = 20 * time.Second
	pollEvery = 15 * time.Millisecond
)

// pageURL checks and completes a URL the model gave: http, https, data,
// about:blank and den:// only (the browser sees no files: file URLs
// would show its own profile, not the computer's files). A bare host
// gets https://, or http:// for localhost and addresses.
func (s *Session) pageURL(raw string) (string, string) {
	raw = strings.TrimSpace(raw)
	if raw == "about:blank" {
		return raw, ""
	}
	lower := strings.ToLower(raw)
	if strings.HasPrefix(lower, "den://") {
		if s.environment().Resolve == nil {
			return "", "den:// URLs cannot be opened in this session's browser"
		}
		return toDenURL(raw), ""
	}
	if strings.HasPrefix(lower, "data:") {
		return raw, ""
	}
	if u, err := url.Parse(raw); err == nil && u.Scheme != "" && u.Opaque != "" && !startsWithDigit(u.Opaque) {
		// javascript:, mailto:, view-source: (localhost:8000 is a host).
		return "", fmt.Sprintf("%s: URLs cannot be opened; use http, https, data or den://", u.Scheme)
	}
	if !strings.Contains(raw, "://") {
		host := raw
		if i := strings.IndexAny(host, "/?#"); i >= 0 {
			host = host[:i]
		}
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		scheme := "https://"
		if host == "localhost" || strings.HasSuffix(host, ".localhost") || net.ParseIP(strings.Trim(host, "[]")) != nil {
			scheme = "http://"
		}
		raw = scheme + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Sprintf("%q is not a URL den can open", raw)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https":
	case "file":
		return "", "file URLs cannot be opened: the browser does not see the computer's files; serve them (python3 -m http.server) and open http://localhost:PORT, or use a den:// URL"
	default:
		return "", fmt.Sprintf("%s: URLs cannot be opened; use http, https, data or den://", u.Scheme)
	}
	if u.Host == "" {
		return "", fmt.Sprintf("%q is not a URL den can open", raw)
	}
	return u.String(), ""
}

func startsWithDigit(s string) bool { return s != "" && s[0] >= '0' && s[0] <= '9' }

// navigate opens u in the tab and waits for it to load and settle. It
// returns what happened, and why it failed: NavFailed when the page
// could not be opened, Timeout when the server did not answer in time
// (den then stops the navigation, so that the tab stays usable).
func (t *tab) navigate(ctx context.Context, s *Session, u string) (string, Code) {
	_, docs := t.ev.counters()
	s.mu.Lock()
	begun := s.pending + len(s.downloads)
	s.mu.Unlock()
	// Page.navigate answers once the server did: keep time to stop it
	// and describe the page when it does not.
	nctx, cancel := context.WithDeadline(ctx, deadlineOf(ctx).Add(-reserve(ctx)))
	defer cancel()
	start := time.Now()
	res, err := cdp.Call(nctx, t.t, page.Navigate, page.NavigateParams{URL: u})
	if err != nil {
		if nctx.Err() != nil && ctx.Err() == nil {
			sctx, scancel := context.WithTimeout(ctx, time.Second)
			cdp.Call(sctx, t.t, page.StopLoading, cdp.Empty{})
			scancel()
			return fmt.Sprintf("the server did not answer within %v; den stopped loading the page", time.Since(start).Round(100*time.Millisecond)), Timeout
		}
		return describeErr(err), NavFailed
	}
	if res.ErrorText != "" {
		s.mu.Lock()
		download := s.pending+len(s.downloads) > begun
		s.mu.Unlock()
		if res.ErrorText == "net::ERR_ABORTED" && (download || s.awaitDownload(ctx, begun)) {
			s.waitDownloads(ctx)
			return fmt.Sprintf("%s is a file: the browser downloaded it.", fromDenURL(u)), Done
		}
		return res.ErrorText, NavFailed
	}
	if res.LoaderID != "" {
		t.waitLoad(ctx, docs)
	} else {
		t.settle(ctx, time.Now(), settleQuiet, settleMax)
	}
	msg := "Opened " + fromDenURL(t.url()) + "." + t.statusNote()
	if ctx.Err() != nil {
		msg = "The page is still loading; here is what it shows so far."
	}
	return msg, Done
}

// reserve is the time an action keeps, of what ctx leaves, to recover
// from a step that does not answer and say what happened.
func reserve(ctx context.Context) time.Duration {
	return min(2*time.Second, time.Until(deadlineOf(ctx))/4)
}

// waitLoad waits until a document after the docs-th has loaded (its
// load event) and the page settled, within loadMax.
func (t *tab) waitLoad(ctx context.Context, docs int) {
	deadline := time.Now().Add(loadMax)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		t.ev.mu.Lock()
		done := t.ev.documents > docs && t.ev.loaded
		t.ev.mu.Unlock()
		if done {
			break
		}
		sleep(ctx, pollEvery)
	}
	t.settle(ctx, time.Time{}, loadQuiet, settleMax)
}

// statusNote words an HTTP error status of the main document.
func (t *tab) statusNote() string {
	t.ev.mu.Lock()
	defer t.ev.mu.Unlock()
	if t.ev.status >= 400 {
		return fmt.Sprintf(" The server answered HTTP %d %s.", t.ev.status, t.ev.statusText)
	}
	return ""
}

// pageState is what den's helpers report of a page.
type pageState struct {
	Muts  int     `json:"muts"`
	Quiet float64 `json:"quiet"` // ms since the DOM last changed
	Ready string  `json:"ready"`
	X     int     `json:"x"` // scroll position
	Y     int     `json:"y"`
	W     int     `json:"w"` // scroll size
	H     int     `json:"h"`
	VW    int     `json:"vw"` // viewport
	VH    int     `json:"vh"`
}

// state reads the page's state, within a second.
func (t *tab) state(ctx context.Context) (pageState, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var st pageState
	err := t.eval(ctx, ".state()", &st)
	return st, err
}

// settle waits until the page is quiet: no request in flight (long
// polls aside), the main frame not loading, and no change of its DOM
// for quiet, counted from since at the earliest (the moment an action
// touched the page, whose effects may not have begun). It waits at
// most max, and reports whether the page settled.
func (t *tab) settle(ctx context.Context, since time.Time, quiet, max time.Duration) bool {
	deadline := time.Now().Add(max)
	for {
		now := time.Now()
		n, lastNet, loading := t.ev.busy(now)
		if n == 0 && !loading && now.Sub(lastNet) >= quiet && now.Sub(since) >= quiet {
			st, err := t.state(ctx)
			if err == nil && st.Ready != "loading" && time.Duration(st.Quiet*float64(time.Millisecond)) >= quiet {
				return true
			}
		}
		if now.After(deadline) || ctx.Err() != nil {
			return false
		}
		sleep(ctx, pollEvery)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// mark is a page's state before an action, to tell what the action did.
type mark struct {
	at                     time.Time
	navigations, documents int
	url                    string
	tabs                   int
	downloads              int
}

func (s *Session) markOf(ctx context.Context, t *tab) mark {
	m := mark{url: t.url(), at: time.Now()}
	m.navigations, m.documents = t.ev.counters()
	s.mu.Lock()
	m.tabs = len(s.tabs)
	m.downloads = s.pending + len(s.downloads)
	s.mu.Unlock()
	return m
}

// after waits for what an action set off (a navigation, a new tab, a
// change of the page, a download) and says what happened, with a fresh
// snapshot when the page as the model sees it changed. did says what
// the action did.
func (s *Session) after(ctx context.Context, t *tab, m mark, res *Result, did string) {
	t.settle(ctx, m.at, settleQuiet, settleMax)
	navs, docs := t.ev.counters()
	if docs > m.documents {
		t.waitLoad(ctx, m.documents)
	}
	s.mu.Lock()
	popup := s.cur != t && s.cur != nil && len(s.tabs) > m.tabs
	cur := s.cur
	downloads := s.pending + len(s.downloads)
	s.mu.Unlock()
	prev := t.snap
	var what string
	switch {
	case popup:
		cur.settle(ctx, time.Time{}, loadQuiet, settleMax)
		what = fmt.Sprintf("the page opened a new tab %d, now current", cur.id)
		t, prev = cur, nil
	case docs > m.documents:
		what = "the page navigated to " + fromDenURL(t.url())
		if note := t.statusNote(); note != "" {
			what += "." + strings.TrimSuffix(note, ".")
		}
		prev = nil
	case navs > m.navigations:
		what = "the page changed its address to " + fromDenURL(t.url())
	}
	if downloads > m.downloads {
		s.waitDownloads(ctx)
		what = strings.TrimPrefix(what+"; a download started", "; ")
	}
	s.describe(ctx, t, res)
	if res.Snapshot != nil && prev != nil && slices.Equal(prev.pages, t.snap.pages) {
		res.Snapshot = nil
		if what == "" {
			what = "nothing on the page changed"
		}
	} else if what == "" {
		what = "the page changed"
	}
	res.Message = did + "; " + what + "."
}
