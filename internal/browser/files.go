package browser

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/storage"
)

// maxUpload bounds a file given to a page.
const maxUpload = 1 << 30

// upload gives a file of the computer to a page's file input: den copies
// it (the caller checked the host path) into the browser's uploads
// folder, which Chromium sees read-only, and sets the input's files. A
// target that is not a file input is clicked, and the file chooser it
// opens is answered instead.
func (s *Session) upload(ctx context.Context, t *tab, a Action, res *Result) {
	n := s.resolve(ctx, t, a, res, false)
	if n == nil {
		return
	}
	guest, size, err := s.stageUpload(a.Path)
	if err != nil {
		res.Code, res.Message = Failed, "Could not read the file to upload: "+describeErr(err)
		return
	}
	m := s.markOf(ctx, t)
	var isFile bool
	t.callOn(ctx, n.obj, "(d, el) => d.isFileInput(el)", &isFile)
	backend := n.backend
	if !isFile {
		t.ev.mu.Lock()
		t.ev.chooser = nil
		t.ev.mu.Unlock()
		if _, err := cdp.Call(ctx, t.t, page.SetInterceptFileChooserDialog, page.SetInterceptFileChooserDialogParams{Enabled: true}); err != nil {
			fail(ctx, res, Failed, "Could not upload: %s", describeErr(err))
			return
		}
		defer cdp.Call(context.WithoutCancel(ctx), t.t, page.SetInterceptFileChooserDialog, page.SetInterceptFileChooserDialogParams{Enabled: false})
		if _, why, err := t.clickNode(ctx, n); err != nil || why != "" {
			res.Code, res.Message = Failed, fmt.Sprintf("%s is not a file input, and clicking it failed: %s%s.", n.desc, why, errText(err))
			return
		}
		deadline := time.Now().Add(3 * time.Second)
		var chooser *page.EventFileChooserOpened
		for chooser == nil && time.Now().Before(deadline) && ctx.Err() == nil {
			sleep(ctx, 20*time.Millisecond)
			t.ev.mu.Lock()
			chooser = t.ev.chooser
			t.ev.mu.Unlock()
		}
		if chooser == nil || chooser.BackendNodeID == 0 {
			res.Code, res.Message = Failed, fmt.Sprintf("%s is not a file input, and clicking it opened no file chooser: give the file input's index or selector.", n.desc)
			return
		}
		backend = chooser.BackendNodeID
	}
	if _, err := cdp.Call(ctx, t.t, dom.SetFileInputFiles, dom.SetFileInputFilesParams{Files: []string{guest}, BackendNodeID: backend}); err != nil {
		fail(ctx, res, Failed, "Could not give the file to %s: %s", n.desc, describeErr(err))
		return
	}
	s.after(ctx, t, m, res, fmt.Sprintf("Gave %s (%s) to %s", path.Base(a.Path), sizeText(size), n.desc))
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return describeErr(err)
}

// stageUpload copies the file p (opened by Env.Open, else the host path
// p, a regular file, a link not followed) into a fresh folder of the browser's uploads, owned by
// the uid Chromium runs as, and returns the path Chromium sees.
func (s *Session) stageUpload(p string) (guest string, size int64, err error) {
	var f *os.File
	if open := s.environment().Open; open != nil {
		f, err = open(p)
	} else {
		f, err = os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	}
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if !fi.Mode().IsRegular() {
		return "", 0, fmt.Errorf("%s is not a regular file", filepath.Base(p))
	}
	if fi.Size() > maxUpload {
		return "", 0, fmt.Errorf("%s is larger than %s", filepath.Base(p), sizeText(maxUpload))
	}
	dir := rand.Text()[:12]
	host := filepath.Join(s.b.o.folders().uploads, dir)
	if err := os.Mkdir(host, 0o700); err != nil {
		return "", 0, err
	}
	name := safeName(filepath.Base(p))
	out, err := os.OpenFile(filepath.Join(host, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", 0, err
	}
	n, err := io.Copy(out, io.LimitReader(f, maxUpload))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		if o := s.owner(); o != nil {
			for _, q := range []string{host, filepath.Join(host, name)} {
				if err = os.Lchown(q, o.UID, o.GID); err != nil {
					break
				}
			}
		}
	}
	if err != nil {
		os.RemoveAll(host)
		return "", 0, err
	}
	return path.Join(guestUploads, dir, name), n, nil
}

func (s *Session) getCookies(ctx context.Context, t *tab, a Action, res *Result) {
	var p network.GetCookiesParams
	if !a.All {
		u := t.url()
		if !strings.HasPrefix(u, "http") {
			res.Code, res.Message = Failed, "The page is not a web page: open one, or use all."
			return
		}
		p.URLs = []string{u}
	}
	var cookies []*network.Cookie
	if a.All {
		r, err := cdp.Call(ctx, t.c.b, storage.GetCookies, storage.GetCookiesParams{})
		if err != nil {
			fail(ctx, res, Failed, "Could not read the cookies: %s", describeErr(err))
			return
		}
		cookies = r.Cookies
	} else {
		r, err := cdp.Call(ctx, t.t, network.GetCookies, p)
		if err != nil {
			fail(ctx, res, Failed, "Could not read the cookies: %s", describeErr(err))
			return
		}
		cookies = r.Cookies
	}
	for _, c := range cookies {
		if !matchesAny(c.Name, a.Keywords) {
			continue
		}
		exp := c.Expires
		if c.Session || exp < 0 {
			exp = 0
		}
		res.Cookies = append(res.Cookies, Cookie{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path, Secure: c.Secure, HTTPOnly: c.HTTPOnly, SameSite: string(c.SameSite), Expires: exp})
	}
	where := "the page's"
	if a.All {
		where = "the browser's"
	}
	res.Message = fmt.Sprintf("%d of %s cookies match; their values are not shown here.", len(res.Cookies), where)
}

func matchesAny(name string, keywords []string) bool {
	if len(keywords) == 0 {
		return true
	}
	for _, k := range keywords {
		if strings.Contains(strings.ToLower(name), strings.ToLower(k)) {
			return true
		}
	}
	return false
}

func (s *Session) setCookies(ctx context.Context, t *tab, a Action, res *Result) {
	page, _ := url.Parse(t.url())
	var params []*network.CookieParam
	for _, c := range a.Cookies {
		if c.Name == "" {
			res.Code, res.Message = Invalid, "every cookie needs a name"
			return
		}
		p := &network.CookieParam{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path, Secure: c.Secure, HTTPOnly: c.HTTPOnly}
		if p.Domain == "" {
			if page == nil || page.Hostname() == "" {
				res.Code, res.Message = Invalid, fmt.Sprintf("cookie %s needs a domain (the page has none)", c.Name)
				return
			}
			p.Domain = page.Hostname()
		}
		if p.Path == "" {
			p.Path = "/"
		}
		switch strings.ToLower(c.SameSite) {
		case "strict":
			p.SameSite = network.CookieSameSiteStrict
		case "lax":
			p.SameSite = network.CookieSameSiteLax
		case "none", "no_restriction":
			p.SameSite = network.CookieSameSiteNone
		}
		if c.Expires > 0 {
			p.Expires = cdp.TimeSinceEpoch(c.Expires)
		}
		params = append(params, p)
	}
	if _, err := cdp.Call(ctx, t.t, network.SetCookies, network.SetCookiesParams{Cookies: params}); err != nil {
		fail(ctx, res, Failed, "Could not set the cookies: %s", describeErr(err))
		return
	}
	var names []string
	for _, p := range params {
		names = append(names, p.Name+" ("+p.Domain+p.Path+")")
	}
	res.Message = fmt.Sprintf("Set %d cookie(s): %s.", len(params), strings.Join(names, ", "))
}
