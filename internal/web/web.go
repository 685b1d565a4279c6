// Package web is den's web face: a chat with the agent and its
// computer, made of plain ES modules and small vendored libraries
// embedded in the binary, so that go build alone makes the whole app.
//
// The daemon mounts Handler behind its auth guard: the page, its code
// and its styles need the token (the cookie the login URL sets) as
// every route does. The app talks to the API of package server and
// nothing else: no script, style or font comes from anywhere but den
// (the Content-Security-Policy says so to the browser).
//
// # Files
//
// static/index.html is served at /, static/sw.js (the service worker,
// which caches the app shell and never the API) at /sw.js, and
// everything under static/ at /app/. static/vendor holds the libraries,
// copied from their packages by scripts/vendor-web.sh at the versions
// it pins (static/vendor/VERSIONS).
//
// Every file is answered with an ETag and Cache-Control: no-cache, so a
// browser asks again each time and gets 304 until den is updated, and
// compressed with gzip when the browser takes it (compressed once, when
// first asked for).
package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"regexp"
	"strings"
	"sync"
)

//go:embed static
var static embed.FS

// Handler serves the app.
type Handler struct {
	once  sync.Once
	err   error
	files map[string]*asset // by path below static/
	csp   string
}

// asset is a file ready to serve.
type asset struct {
	body, gz []byte
	etag     string
	ctype    string
}

// importMap finds the page's import map, whose hash the policy allows.
var importMap = regexp.MustCompile(`(?s)<script type="importmap">(.*?)</script>`)

func (h *Handler) load() error {
	h.once.Do(func() {
		h.files = map[string]*asset{}
		h.err = fs.WalkDir(static, "static", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := static.ReadFile(p)
			if err != nil {
				return err
			}
			rel := strings.TrimPrefix(p, "static/")
			sum := sha256.Sum256(b)
			a := &asset{body: b, etag: `"` + hex.EncodeToString(sum[:12]) + `"`, ctype: contentType(rel)}
			if compressible(a.ctype) && len(b) > 512 {
				var buf bytes.Buffer
				zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
				zw.Write(b)
				zw.Close()
				if buf.Len() < len(b) {
					a.gz = buf.Bytes()
				}
			}
			h.files[rel] = a
			return nil
		})
		if h.err != nil {
			return
		}
		index, ok := h.files["index.html"]
		if !ok {
			h.err = fmt.Errorf("web: the app has no index.html")
			return
		}
		m := importMap.FindSubmatch(index.body)
		if m == nil {
			h.err = fmt.Errorf("web: index.html has no import map")
			return
		}
		sum := sha256.Sum256(m[1])
		h.csp = strings.Join([]string{
			"default-src 'self'",
			"script-src 'self' 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'",
			// Preact sets style attributes; no style comes from elsewhere.
			"style-src 'self' 'unsafe-inline'",
			"img-src 'self' data: blob:",
			"media-src 'self' blob:",
			// Previews of the agent's files (den:// URLs) are frames of
			// den's own routes, sandboxed; nothing else is framed.
			"frame-src 'self'",
			"connect-src 'self'",
			"worker-src 'self'",
			"manifest-src 'self'",
			"object-src 'none'",
			"base-uri 'none'",
			"form-action 'self'",
			"frame-ancestors 'none'",
		}, "; ")
	})
	return h.err
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".js", ".mjs":
		return "text/javascript; charset=utf-8"
	case ".webmanifest":
		return "application/manifest+json"
	case ".svg":
		return "image/svg+xml"
	}
	if t := mime.TypeByExtension(path.Ext(name)); t != "" {
		return t
	}
	return "application/octet-stream"
}

func compressible(ctype string) bool {
	return strings.HasPrefix(ctype, "text/") || strings.Contains(ctype, "json") || strings.Contains(ctype, "svg") || strings.Contains(ctype, "javascript")
}

// Index answers GET /: the app's page.
func (h *Handler) Index(w http.ResponseWriter, r *http.Request) error {
	return h.serve(w, r, "index.html")
}

// Worker answers GET /sw.js: the service worker, at the root so that
// its scope is the whole app.
func (h *Handler) Worker(w http.ResponseWriter, r *http.Request) error {
	return h.serve(w, r, "sw.js")
}

// Manifest answers GET /manifest.webmanifest.
func (h *Handler) Manifest(w http.ResponseWriter, r *http.Request) error {
	return h.serve(w, r, "manifest.webmanifest")
}

// File answers GET /app/{path...}.
func (h *Handler) File(w http.ResponseWriter, r *http.Request) error {
	return h.serve(w, r, r.PathValue("path"))
}

// ErrNotFound is the error for a file the app does not have.
var ErrNotFound = errors.New("web: no such file")

func (h *Handler) serve(w http.ResponseWriter, r *http.Request, name string) error {
	if err := h.load(); err != nil {
		return err
	}
	a, ok := h.files[name]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotFound, name)
	}
	hd := w.Header()
	hd.Set("Content-Type", a.ctype)
	hd.Set("ETag", a.etag)
	hd.Set("Cache-Control", "no-cache")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("Content-Security-Policy", h.csp)
	hd.Add("Vary", "Accept-Encoding")
	if r.Header.Get("If-None-Match") == a.etag {
		w.WriteHeader(http.StatusNotModified)
		return nil
	}
	body := a.body
	if a.gz != nil && acceptsGzip(r) {
		body = a.gz
		hd.Set("Content-Encoding", "gzip")
	}
	hd.Set("Content-Length", fmt.Sprint(len(body)))
	if r.Method == http.MethodHead {
		return nil
	}
	w.Write(body)
	return nil
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.TrimSpace(enc) == "gzip" && strings.TrimSpace(q) != "q=0" {
			return true
		}
	}
	return false
}
