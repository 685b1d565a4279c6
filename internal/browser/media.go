package browser

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"iter"
	"math"
	"os"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/page"

	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/sandbox"
)

// Caps of what a screenshot gives the model: its width, its height, and
// its PNG's size (a larger one is taken again at a smaller scale). A
// full page longer than maxPageHeight CSS pixels is cut there.
const (
	maxShotWidth  = 1600
	maxShotHeight = 8000
	maxShotBytes  = 4 << 20
	maxPageHeight = 16384
	maxPDFBytes   = 50 << 20
	readableChunk = 20000
)

func (s *Session) screenshot(ctx context.Context, t *tab, a Action, res *Result) {
	lm, err := cdp.Call(ctx, t.t, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil || lm.CSSVisualViewport == nil || lm.CSSContentSize == nil {
		fail(ctx, res, Failed, "Could not measure the page: %s", describeErr(orNoMetrics(err)))
		return
	}
	vv := lm.CSSVisualViewport
	clip := &page.Viewport{X: vv.PageX, Y: vv.PageY, Width: vv.ClientWidth, Height: vv.ClientHeight, Scale: 1}
	what := fmt.Sprintf("the visible page (%.0f×%.0f)", vv.ClientWidth, vv.ClientHeight)
	var note string
	switch {
	case a.Index > 0 || a.Selector != "":
		n := s.resolve(ctx, t, a, res, false)
		if n == nil {
			return
		}
		cdp.Call(ctx, t.t, dom.ScrollIntoViewIfNeeded, dom.ScrollIntoViewIfNeededParams{BackendNodeID: n.backend})
		q, err := cdp.Call(ctx, t.t, dom.GetContentQuads, dom.GetContentQuadsParams{BackendNodeID: n.backend})
		if err != nil || len(q.Quads) == 0 {
			res.Code, res.Message = Failed, fmt.Sprintf("%s has no box on screen to capture.", n.desc)
			return
		}
		if lm2, err := cdp.Call(ctx, t.t, page.GetLayoutMetrics, cdp.Empty{}); err == nil && lm2.CSSVisualViewport != nil {
			vv = lm2.CSSVisualViewport
		}
		x0, y0, x1, y1 := bounds(q.Quads)
		clip = &page.Viewport{X: x0 + vv.PageX, Y: y0 + vv.PageY, Width: x1 - x0, Height: y1 - y0, Scale: 1}
		what = fmt.Sprintf("%s (%.0f×%.0f)", n.desc, clip.Width, clip.Height)
	case a.FullPage:
		cs := lm.CSSContentSize
		h := cs.Height
		if h > maxPageHeight {
			note = fmt.Sprintf(" The page is %.0f px long: the capture stops at %d px.", h, maxPageHeight)
			h = maxPageHeight
		}
		clip = &page.Viewport{X: 0, Y: 0, Width: cs.Width, Height: h, Scale: 1}
		what = fmt.Sprintf("the full page (%.0f×%.0f)", cs.Width, h)
	}
	if clip.Width < 1 || clip.Height < 1 {
		res.Code, res.Message = Failed, "There is nothing to capture (the area is empty)."
		return
	}
	clip.Scale = math.Min(1, math.Min(maxShotWidth/clip.Width, maxShotHeight/clip.Height))
	var png []byte
	for range 4 {
		r, err := cdp.Call(ctx, t.t, page.CaptureScreenshot, page.CaptureScreenshotParams{
			Format: page.CaptureScreenshotFormatPng, Clip: clip, CaptureBeyondViewport: ptr(a.FullPage || a.Index > 0 || a.Selector != ""),
		})
		if err != nil {
			fail(ctx, res, Failed, "Could not capture %s: %s", what, describeErr(err))
			return
		}
		png = r.Data
		if len(png) <= maxShotBytes {
			break
		}
		clip.Scale *= 0.6
	}
	if len(png) > maxShotBytes {
		res.Code, res.Message = Failed, fmt.Sprintf("The capture of %s stays over %s even scaled down: capture an element, or the visible page.", what, sizeText(maxShotBytes))
		return
	}
	if clip.Scale < 1 {
		note += fmt.Sprintf(" Scaled to %.0f%% to fit %d×%d px and %s.", clip.Scale*100, maxShotWidth, maxShotHeight, sizeText(maxShotBytes))
	}
	guest, err := s.saveFile(nameSeq("screenshot-"+stamp(), ".png"), bytes.NewReader(png), int64(len(png)))
	if err != nil {
		res.Message = fmt.Sprintf("Captured %s, but could not save it: %s.%s", what, describeErr(err), note)
	} else {
		res.File = guest
		res.Message = fmt.Sprintf("Captured %s as %s.%s", what, guest, note)
	}
	res.Image = png
}

func orNoMetrics(err error) error {
	if err == nil {
		return fmt.Errorf("the page has no layout")
	}
	return err
}

// bounds is the box around quads.
func bounds(quads []dom.Quad) (x0, y0, x1, y1 float64) {
	x0, y0, x1, y1 = math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, q := range quads {
		for i := 0; i+1 < len(q); i += 2 {
			x0, x1 = math.Min(x0, q[i]), math.Max(x1, q[i])
			y0, y1 = math.Min(y0, q[i+1]), math.Max(y1, q[i+1])
		}
	}
	return
}

func (s *Session) pdf(ctx context.Context, t *tab, res *Result) {
	r, err := cdp.Call(ctx, t.t, page.PrintToPDF, page.PrintToPDFParams{PrintBackground: ptr(true)})
	if err != nil {
		fail(ctx, res, Failed, "Could not print the page: %s", describeErr(err))
		return
	}
	if len(r.Data) > maxPDFBytes {
		res.Code, res.Message = Failed, fmt.Sprintf("The PDF is %s, over the %s den keeps.", sizeText(int64(len(r.Data))), sizeText(maxPDFBytes))
		return
	}
	guest, err := s.saveFile(nameSeq("page-"+stamp(), ".pdf"), bytes.NewReader(r.Data), int64(len(r.Data)))
	if err != nil {
		fail(ctx, res, Failed, "Printed the page, but could not save the PDF: %s", describeErr(err))
		return
	}
	res.File = guest
	res.Message = fmt.Sprintf("Printed the page to %s (%s).", guest, sizeText(int64(len(r.Data))))
}

func (s *Session) readable(ctx context.Context, t *tab, a Action, res *Result) {
	t.settle(ctx, time.Time{}, settleQuiet, settleMax)
	var md string
	if err := t.eval(ctx, ".readable()", &md); err != nil {
		fail(ctx, res, Failed, "Could not read the page: %s", describeErr(err))
		return
	}
	md = maskCards(md)
	runes := []rune(md)
	if a.Offset >= len(runes) && len(runes) > 0 {
		res.Code, res.Message = Invalid, fmt.Sprintf("The content is %d characters long: offset %d is past its end.", len(runes), a.Offset)
		return
	}
	end := min(len(runes), a.Offset+readableChunk)
	res.URL, res.Title = t.info()
	res.Readable = string(runes[a.Offset:end])
	switch {
	case len(runes) == 0:
		res.Message = "The page has no main content den could find; take a snapshot instead."
	case end < len(runes) || a.Offset > 0:
		res.Message = fmt.Sprintf("The main content as Markdown, characters %d to %d of %d; get_readable with offset=%d continues.", a.Offset, end, len(runes), end)
		if end == len(runes) {
			res.Message = fmt.Sprintf("The main content as Markdown, characters %d to %d of %d (the end).", a.Offset, end, len(runes))
		}
	default:
		res.Message = fmt.Sprintf("The main content as Markdown (%d characters):", len(runes))
	}
}

// owner is who files den makes for the session's computer belong to:
// root inside (nil when den is not root: its files are root inside's).
func (s *Session) owner() *hostfs.Owner {
	s.mu.Lock()
	defer s.mu.Unlock()
	if os.Geteuid() != 0 || s.place == nil {
		return nil
	}
	return &hostfs.Owner{UID: s.place.uid, GID: s.place.gid}
}

// saveFile writes r as a new file in the session's /den/browser under
// the first free name of names, and returns its guest path.
func (s *Session) saveFile(names iter.Seq[string], r io.Reader, max int64) (string, error) {
	dir := s.environment().Files
	if dir == "" {
		return "", fmt.Errorf("the session has no folder for the browser's files")
	}
	d, err := hostfs.OpenDirNamed(dir, sandbox.GuestBrowser)
	if err != nil {
		return "", err
	}
	defer d.Close()
	name, _, err := d.WriteNew(names, r, 0o644, s.owner(), max)
	if err != nil {
		return "", err
	}
	return path.Join(sandbox.GuestBrowser, name), nil
}

// nameSeq yields base+ext, then base-2+ext, base-3+ext, ...
func nameSeq(base, ext string) iter.Seq[string] {
	return func(yield func(string) bool) {
		if !yield(base + ext) {
			return
		}
		for i := 2; i < 1000; i++ {
			if !yield(base + "-" + strconv.Itoa(i) + ext) {
				return
			}
		}
	}
}

func stamp() string { return time.Now().Format("20060102-150405") }

// safeName turns a name a page suggested into one path element den is
// willing to write: no folders, no control characters, no leading dot,
// at most 120 bytes; "download" when nothing is left.
func safeName(s string) string {
	s = path.Base(strings.ReplaceAll(s, `\`, "/"))
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '/' || r == 0 {
			return -1
		}
		return r
	}, s)
	s = strings.TrimLeft(strings.TrimSpace(s), ".")
	for len(s) > 120 {
		_, size := lastRune(s)
		s = s[:len(s)-size]
	}
	if s == "" || s == "." || s == ".." {
		return "download"
	}
	return s
}

func lastRune(s string) (rune, int) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i]&0xC0 != 0x80 {
			r := []rune(s[i:])
			if len(r) > 0 {
				return r[0], len(s) - i
			}
		}
	}
	return 0, 1
}

// variants yields name, then "stem (2).ext", "stem (3).ext", ...
func variants(name string) iter.Seq[string] {
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	if stem == "" {
		stem, ext = name, ""
	}
	return func(yield func(string) bool) {
		if !yield(name) {
			return
		}
		for i := 2; i < 1000; i++ {
			if !yield(fmt.Sprintf("%s (%d)%s", stem, i, ext)) {
				return
			}
		}
	}
}
