package browser

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/fetch"
)

// denOrigin is where den:// URLs live in the browser: a host that never
// resolves (.invalid is reserved), whose requests den answers itself
// from the session's Resolver, so that a page of the computer's files
// loads with its relative links, images and scripts.
const denOrigin = "http://den.invalid/"

// maxResource bounds what one den:// request may return.
const maxResource = 64 << 20

func toDenURL(raw string) string { return denOrigin + raw[len("den://"):] }

// fromDenURL writes the browser's form of a den:// URL back as den://.
func fromDenURL(u string) string {
	if rest, ok := strings.CutPrefix(u, denOrigin); ok {
		return "den://" + rest
	}
	return u
}

// serveDen makes the tab answer requests to denOrigin from the session's
// Resolver, once per tab.
func (s *Session) serveDen(ctx context.Context, t *tab) error {
	if t.denDone != nil {
		return nil
	}
	paused := cdp.Events(t.ctx, t.t, fetch.RequestPaused)
	if _, err := cdp.Call(ctx, t.t, fetch.Enable, fetch.EnableParams{Patterns: []*fetch.RequestPattern{{URLPattern: denOrigin + "*"}}}); err != nil {
		// The subscription ends with the tab.
		go func() {
			for range paused {
				break
			}
		}()
		return err
	}
	t.denDone = make(chan struct{})
	go func() {
		defer close(t.denDone)
		for ev, err := range paused {
			if err != nil {
				return
			}
			s.answer(t, ev)
		}
	}()
	return nil
}

// answer fulfils one request to denOrigin.
func (s *Session) answer(t *tab, ev fetch.EventRequestPaused) {
	ctx, cancel := context.WithTimeout(t.ctx, 30*time.Second)
	defer cancel()
	code, ctype, body := int64(200), "", []byte(nil)
	resolve := s.environment().Resolve
	u := fromDenURL(ev.Request.URL)
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	if resolve == nil || ev.Request.Method != http.MethodGet && ev.Request.Method != http.MethodHead {
		code, body = 405, []byte("den:// URLs can only be read")
	} else if rc, ct, err := resolve(ctx, u); err != nil {
		code, body = 404, []byte(fmt.Sprintf("%s: %v", u, err))
	} else {
		body, err = io.ReadAll(io.LimitReader(rc, maxResource+1))
		rc.Close()
		switch {
		case err != nil:
			code, body = 500, []byte(err.Error())
		case len(body) > maxResource:
			code, body = 413, []byte(fmt.Sprintf("%s is larger than %s", u, sizeText(maxResource)))
		default:
			ctype = ct
		}
	}
	if ctype == "" {
		ctype = http.DetectContentType(body)
		if code != 200 {
			ctype = "text/plain; charset=utf-8"
		}
	}
	cdp.Call(ctx, t.t, fetch.FulfillRequest, fetch.FulfillRequestParams{
		RequestID: ev.RequestID, ResponseCode: code, Body: body,
		ResponseHeaders: []*fetch.HeaderEntry{{Name: "Content-Type", Value: ctype}, {Name: "Cache-Control", Value: "no-store"}},
	})
}
