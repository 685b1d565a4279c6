package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/target"

	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/sandbox"
)

// setup readies a started Chromium: downloads go to its staging folder,
// named by their ids, with events; new targets (popups) are announced.
func (c *chromium) setup(ctx context.Context) error {
	if _, err := cdp.Call(ctx, c.b, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: guestDownloads, EventsEnabled: ptr(true),
	}); err != nil {
		return fmt.Errorf("browser: downloads: %w", err)
	}
	if _, err := cdp.Call(ctx, c.b, target.SetDiscoverTargets, target.SetDiscoverTargetsParams{Discover: true}); err != nil {
		return fmt.Errorf("browser: targets: %w", err)
	}
	// The blank tab Chromium opens at start costs a renderer; tabs are
	// opened per session.
	if ts, err := cdp.Call(ctx, c.b, target.GetTargets, target.GetTargetsParams{}); err == nil {
		for _, ti := range ts.TargetInfos {
			if ti.Type == "page" {
				cdp.Call(ctx, c.b, target.CloseTarget, target.CloseTargetParams{TargetID: ti.TargetID})
			}
		}
	}
	return nil
}

// isLost reports whether the connection to Chromium dropped.
func (c *chromium) isLost() bool {
	select {
	case <-c.b.LostConnection:
		return true
	default:
		return false
	}
}

// download is one of Chromium's downloads, for the session whose page
// began it.
type download struct {
	s    *Session
	name string
	url  string
}

// handleEvents follows Chromium's browser-wide events: downloads, which
// it hands to the session whose page began them, and tabs the pages
// open, which join their opener's session. It returns when Chromium's
// connection ends.
func (b *Browser) handleEvents(c *chromium, gen int) {
	defer b.wg.Done()
	begin, stop1 := c.b.Subscribe(browser.DownloadWillBegin.Method)
	defer stop1()
	progress, stop2 := c.b.Subscribe(browser.DownloadProgress.Method)
	defer stop2()
	created, stop3 := c.b.Subscribe(target.TargetCreated.Method)
	defer stop3()
	downloads := map[string]*download{}
	defer func() {
		for _, d := range downloads {
			d.s.downloadEnded()
			d.s.note("the download of %s was interrupted: the browser stopped", d.url)
		}
	}()
	for {
		select {
		case <-b.quit:
			return
		case raw, ok := <-begin:
			if !ok {
				return
			}
			var ev browser.EventDownloadWillBegin
			if jsonv2.Unmarshal(raw, &ev) != nil {
				continue
			}
			s := b.sessionOfFrame(c, ev.FrameID)
			if s == nil {
				b.cancelDownload(c, ev.GUID)
				continue
			}
			if !s.downloadBegan() {
				b.cancelDownload(c, ev.GUID)
				s.note("den cancelled the download of %s: the session has %d downloads unreported", fromDenURL(ev.URL), maxDownloads)
				continue
			}
			downloads[ev.GUID] = &download{s: s, name: safeName(ev.SuggestedFilename), url: fromDenURL(ev.URL)}
		case raw, ok := <-progress:
			if !ok {
				return
			}
			var ev browser.EventDownloadProgress
			if jsonv2.Unmarshal(raw, &ev) == nil {
				b.progress(c, downloads, &ev)
			}
		case raw, ok := <-created:
			if !ok {
				return
			}
			var ev target.EventTargetCreated
			if jsonv2.Unmarshal(raw, &ev) != nil || ev.TargetInfo == nil {
				continue
			}
			info := ev.TargetInfo
			if info.Type != "page" || info.OpenerID == "" {
				continue
			}
			if s, _ := b.sessionOf(string(info.OpenerID)); s != nil {
				b.wg.Add(1)
				go func() {
					defer b.wg.Done()
					s.adoptPopup(c, gen, info)
				}()
			}
		}
	}
}

// progress follows a download to its end: handed to its session when
// complete, dropped when cancelled or too large.
func (b *Browser) progress(c *chromium, downloads map[string]*download, ev *browser.EventDownloadProgress) {
	d := downloads[ev.GUID]
	if d == nil {
		return
	}
	switch {
	case ev.State == browser.DownloadProgressStateCompleted:
		delete(downloads, ev.GUID)
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			d.s.takeDownload(b.o.folders().downloads, ev.GUID, d, b.o.MaxDownload)
		}()
	case ev.State == browser.DownloadProgressStateCanceled:
		delete(downloads, ev.GUID)
		d.s.downloadEnded()
		d.s.note("the download of %s was cancelled", d.url)
	case int64(ev.TotalBytes) > b.o.MaxDownload || int64(ev.ReceivedBytes) > b.o.MaxDownload:
		delete(downloads, ev.GUID)
		b.cancelDownload(c, ev.GUID)
		os.Remove(filepath.Join(b.o.folders().downloads, filepath.Base(ev.GUID)))
		d.s.downloadEnded()
		d.s.note("den cancelled the download of %s: it is larger than %s", d.url, sizeText(b.o.MaxDownload))
	}
}

func (b *Browser) cancelDownload(c *chromium, guid string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cdp.Call(ctx, c.b, browser.CancelDownload, browser.CancelDownloadParams{GUID: guid})
}

// sessionOfFrame finds the session whose tab holds a frame.
func (b *Browser) sessionOfFrame(c *chromium, frame cdp.FrameID) *Session {
	if s, _ := b.sessionOf(string(frame)); s != nil {
		return s
	}
	b.mu.Lock()
	sessions := make([]*Session, 0, len(b.sessions))
	for _, s := range b.sessions {
		sessions = append(sessions, s)
	}
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, s := range sessions {
		s.mu.Lock()
		tabs := append([]*tab(nil), s.tabs...)
		s.mu.Unlock()
		for _, t := range tabs {
			ft, err := cdp.Call(ctx, t.t, page.GetFrameTree, cdp.Empty{})
			if err == nil && hasFrame(ft.FrameTree, frame) {
				return s
			}
		}
	}
	return nil
}

func hasFrame(ft *page.FrameTree, id cdp.FrameID) bool {
	if ft == nil || ft.Frame == nil {
		return false
	}
	if ft.Frame.ID == id {
		return true
	}
	for _, c := range ft.ChildFrames {
		if hasFrame(c, id) {
			return true
		}
	}
	return false
}

// maxDownloads bounds the downloads a session has in progress or not
// reported yet: a page that downloads in a loop does not fill the disk
// between two actions.
const maxDownloads = 20

// downloadBegan counts a download in, unless the session has
// maxDownloads already.
func (s *Session) downloadBegan() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending+len(s.downloads) >= maxDownloads {
		return false
	}
	s.pending++
	return true
}

func (s *Session) downloadEnded() {
	s.mu.Lock()
	s.pending = max(0, s.pending-1)
	s.mu.Unlock()
}

// takeDownload moves a finished download from Chromium's staging folder
// into the session's /workspace/downloads, under the name the page
// suggested (made safe, and numbered when taken). Chromium wrote the
// staged file and the computer owns the workspace: both are read and
// written through hostfs, which follows no link either planted.
func (s *Session) takeDownload(staging, guid string, d *download, max int64) {
	defer s.downloadEnded()
	err := func() error {
		src, err := hostfs.OpenDir(staging)
		if err != nil {
			return err
		}
		defer src.Close()
		f, err := src.Open(path.Base(guid))
		if err != nil {
			return err
		}
		defer f.Close()
		defer src.Remove(path.Base(guid))
		ws := s.environment().Workspace
		if ws == "" {
			return errors.New("the session has no workspace")
		}
		dst, err := hostfs.OpenDirNamed(ws, sandbox.GuestWorkspace)
		if err != nil {
			return err
		}
		defer dst.Close()
		dir, _, err := dst.Mkdir("downloads", 0o755, s.owner())
		if err != nil {
			return err
		}
		defer dir.Close()
		name, n, err := dir.WriteNew(variants(d.name), f, 0o644, s.owner(), max)
		if err != nil {
			return err
		}
		s.mu.Lock()
		s.downloads = append(s.downloads, Download{Name: name, Path: path.Join(sandbox.GuestWorkspace, "downloads", name), URL: d.url, Bytes: n})
		s.mu.Unlock()
		return nil
	}()
	if err != nil {
		s.note("the download of %s finished, but den could not put it in /workspace/downloads: %s", d.url, describeErr(err))
	}
}

// awaitDownload waits up to a second for a download to begin after
// count were known.
func (s *Session) awaitDownload(ctx context.Context, count int) bool {
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		s.mu.Lock()
		n := s.pending + len(s.downloads)
		s.mu.Unlock()
		if n > count {
			return true
		}
		sleep(ctx, 20*time.Millisecond)
	}
	return false
}

// waitDownloads waits for the session's downloads in progress to end,
// while ctx lasts.
func (s *Session) waitDownloads(ctx context.Context) {
	for ctx.Err() == nil {
		s.mu.Lock()
		n := s.pending
		s.mu.Unlock()
		if n == 0 {
			return
		}
		sleep(ctx, 20*time.Millisecond)
	}
}

// adoptPopup makes a tab a page opened (window.open, a target=_blank
// link) one of the opener's session's tabs, and current; over the
// session's limit, it is closed.
func (s *Session) adoptPopup(c *chromium, gen int, info *target.Info) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.mu.Lock()
	full := len(s.tabs) >= s.b.o.MaxTabs
	closed := s.closed
	id := s.nextTab
	if !full && !closed {
		s.nextTab++
	}
	s.mu.Unlock()
	if full || closed {
		cdp.Call(ctx, c.b, target.CloseTarget, target.CloseTargetParams{TargetID: info.TargetID})
		if full {
			s.note("the page opened a new tab (%s), which den closed: the session has %d tabs open, its most", info.URL, s.b.o.MaxTabs)
		}
		return
	}
	t, err := attachTab(ctx, c, info.TargetID, id, gen)
	if err != nil {
		s.note("the page opened a new tab (%s), which den could not use: %s", info.URL, describeErr(err))
		return
	}
	s.addTab(t)
}
