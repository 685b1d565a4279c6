package browserview

import (
	"context"
	"sync"
	"time"
	"unicode/utf8"

	"den.dev/den/internal/browser"
)

// caster is a browser's screencast, shared by the sockets that watch
// it: Chromium streams a tab to one screencast at a time. It starts
// with the first socket and stops when the last leaves, which waits
// for it to end. Its fields, and the sockets' set, are guarded by the
// Handler's mu.
type caster struct {
	h       *Handler
	s       *browser.Session
	viewers map[*viewer]bool
	last    *frame        // the newest frame, for a socket that joins
	page    page          // the current tab's, as last read
	after   chan struct{} // the previous screencast's done, which must end first
	cancel  context.CancelFunc
	done    chan struct{} // closed when run returns
	over    bool          // the screencast ended, or is stopping
}

// frame is a picture of the current tab and the page it shows.
type frame struct {
	f    browser.Frame
	page page
}

// page is a tab's title and address.
type page struct {
	tab        int
	url, title string
}

// watch adds v to its browser's screencast, starting one if none runs.
func (h *Handler) watch(v *viewer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.casts[v.s]
	if c == nil || c.over {
		ctx, cancel := context.WithCancel(context.Background())
		next := &caster{h: h, s: v.s, viewers: map[*viewer]bool{}, cancel: cancel, done: make(chan struct{})}
		if c != nil {
			next.after = c.done
		}
		c = next
		if h.casts == nil {
			h.casts = map[*browser.Session]*caster{}
		}
		h.casts[v.s] = c
		go c.run(ctx)
	}
	c.viewers[v] = true
	v.cast = c
	if c.last != nil {
		v.offer(c.last)
	}
}

// unwatch takes v out of its screencast; the last socket stops it and
// waits for it to end.
func (h *Handler) unwatch(v *viewer) {
	h.mu.Lock()
	c := v.cast
	delete(c.viewers, v)
	last := len(c.viewers) == 0
	if last && !c.over {
		c.over = true
		c.cancel()
	}
	h.mu.Unlock()
	if last {
		<-c.done
		h.mu.Lock()
		if h.casts[c.s] == c {
			delete(h.casts, c.s)
		}
		h.mu.Unlock()
	}
}

// run streams the browser's frames to the sockets until the screencast
// ends or the last socket leaves; then it tells the sockets why.
func (c *caster) run(ctx context.Context) {
	defer close(c.done)
	if c.after != nil {
		<-c.after
	}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { c.watchPage(wctx) })
	for f, err := range c.s.Screencast(ctx, browser.ScreencastOptions{}) {
		if err != nil {
			if ctx.Err() == nil {
				c.h.log().Debug("browser view: the screencast ended", "err", err)
			}
			break
		}
		c.h.mu.Lock()
		c.show(&frame{f: f, page: c.page})
		c.h.mu.Unlock()
	}
	stop()
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	reason := "The browser closed."
	if len(c.s.Tabs()) == 0 {
		reason = "The browser has no tab open."
	}
	c.h.mu.Lock()
	c.over = true
	if c.h.casts[c.s] == c {
		delete(c.h.casts, c.s)
	}
	for v := range c.viewers {
		v.ended <- reason
	}
	c.h.mu.Unlock()
}

// show makes f the newest frame of every socket. c.h.mu is held.
func (c *caster) show(f *frame) {
	c.last = f
	for v := range c.viewers {
		v.offer(f)
	}
}

// watchPage reads the current tab's title and address every pageEvery;
// when they changed, the newest frame goes again with them (a page may
// change its title without painting).
func (c *caster) watchPage(ctx context.Context) {
	tk := time.NewTicker(pageEvery)
	defer tk.Stop()
	for {
		var p page
		for _, t := range c.s.Tabs() {
			if t.Current {
				p = page{tab: t.ID, url: clip(t.URL, maxURL), title: clip(t.Title, maxTitle)}
			}
		}
		c.h.mu.Lock()
		if p != c.page {
			c.page = p
			if c.last != nil {
				c.show(&frame{f: c.last.f, page: p})
			}
		}
		c.h.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
	}
}

// maxURL and maxTitle bound a page's address and title as sent: a data:
// URL can be the whole page.
const (
	maxURL   = 2048
	maxTitle = 512
)

// clip cuts s to at most n bytes, at a character's start, marking the
// cut with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n - len("…")
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
