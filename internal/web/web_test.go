package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, serve func(http.ResponseWriter, *http.Request) error, path string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Set(header[i], header[i+1])
	}
	if p, ok := strings.CutPrefix(path, "/app/"); ok {
		r.SetPathValue("path", p)
	}
	w := httptest.NewRecorder()
	if err := serve(w, r); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return w
}

// TestIndex: the page's policy allows its own import map and nothing
// inline besides; every module the page and the app import is there,
// with a JavaScript type (browsers refuse modules of any other).
func TestIndex(t *testing.T) {
	h := &Handler{}
	w := get(t, h.Index, "/")
	body := w.Body.String()
	csp := w.Header().Get("Content-Security-Policy")
	m := importMap.FindStringSubmatch(body)
	if m == nil {
		t.Fatal("no import map")
	}
	sum := sha256.Sum256([]byte(m[1]))
	if !strings.Contains(csp, "script-src 'self' 'sha256-"+base64.StdEncoding.EncodeToString(sum[:])+"'") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("policy %q", csp)
	}
	if strings.Count(body, "<script") != 2 {
		t.Errorf("the page has inline scripts besides the import map:\n%s", body)
	}
	imports := regexp.MustCompile(`(?:from |import\(|src=|href=)"(/app/[^"$]+)"`)
	seen := map[string]bool{}
	var check func(path string)
	check = func(path string) {
		if seen[path] {
			return
		}
		seen[path] = true
		w := get(t, h.File, path)
		if w.Code != http.StatusOK {
			t.Errorf("%s: %d", path, w.Code)
			return
		}
		if strings.HasSuffix(path, "js") && !strings.HasPrefix(w.Header().Get("Content-Type"), "text/javascript") {
			t.Errorf("%s: content type %q", path, w.Header().Get("Content-Type"))
		}
		if strings.HasSuffix(path, ".js") || strings.HasSuffix(path, ".mjs") {
			for _, m := range imports.FindAllStringSubmatch(w.Body.String(), -1) {
				check(m[1])
			}
		}
	}
	for _, m := range imports.FindAllStringSubmatch(body, -1) {
		check(m[1])
	}
	for _, want := range []string{"/app/app.js", "/app/api.js", "/app/markdown.js", "/app/vendor/marked.esm.js", "/app/vendor/purify.es.mjs"} {
		if !seen[want] {
			t.Errorf("%s is not reached from the page", want)
		}
	}
}

// TestCaching: a file comes with an ETag, a second ask with it is 304,
// and a browser that takes gzip gets it compressed.
func TestCaching(t *testing.T) {
	h := &Handler{}
	w := get(t, h.File, "/app/app.js")
	etag := w.Header().Get("ETag")
	if etag == "" || w.Header().Get("Cache-Control") != "no-cache" {
		t.Fatalf("headers %v", w.Header())
	}
	if w := get(t, h.File, "/app/app.js", "If-None-Match", etag); w.Code != http.StatusNotModified || w.Body.Len() != 0 {
		t.Errorf("revalidation: %d, %d bytes", w.Code, w.Body.Len())
	}
	gz := get(t, h.File, "/app/app.js", "Accept-Encoding", "br, gzip")
	if gz.Header().Get("Content-Encoding") != "gzip" {
		t.Fatalf("not compressed: %v", gz.Header())
	}
	zr, err := gzip.NewReader(gz.Body)
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := io.ReadAll(zr)
	if !bytes.Equal(plain, w.Body.Bytes()) {
		t.Error("the compressed file is not the file")
	}
}

// TestMissing: a file the app does not have is ErrNotFound (the
// server's 404), also for a path that tries to climb out.
func TestMissing(t *testing.T) {
	h := &Handler{}
	for _, p := range []string{"nosuch.js", "../web.go", "vendor/../../web.go", ""} {
		r := httptest.NewRequest("GET", "/app/x", nil)
		r.SetPathValue("path", p)
		if err := h.File(httptest.NewRecorder(), r); !errors.Is(err, ErrNotFound) {
			t.Errorf("%q: %v, want ErrNotFound", p, err)
		}
	}
}

// TestWorkerShell: every file the service worker caches as the app
// shell is served (a missing one would fail its install), push.js among
// them, and the worker handles pushes and their clicks.
func TestWorkerShell(t *testing.T) {
	h := &Handler{}
	sw := get(t, h.Worker, "/sw.js").Body.String()
	m := regexp.MustCompile(`(?s)const SHELL = \[(.*?)\];`).FindStringSubmatch(sw)
	if m == nil {
		t.Fatal("sw.js has no SHELL list")
	}
	files := regexp.MustCompile(`"([^"]+)"`).FindAllStringSubmatch(m[1], -1)
	seen := map[string]bool{}
	for _, f := range files {
		path := f[1]
		seen[path] = true
		serve := h.File
		if path == "/" {
			serve = h.Index
		}
		if w := get(t, serve, path); w.Code != http.StatusOK {
			t.Errorf("%s: %d", path, w.Code)
		}
	}
	if !seen["/app/push.js"] || !seen["/"] {
		t.Errorf("the shell lacks push.js or the page: %v", seen)
	}
	for _, want := range []string{`addEventListener("push"`, `addEventListener("notificationclick"`, "showNotification("} {
		if !strings.Contains(sw, want) {
			t.Errorf("sw.js lacks %s", want)
		}
	}
}

// TestPolicySources: what the page may load images, media and frames
// from is den's own origin (and, for images and media, what the page
// itself made): previews of the agent's files come from den's routes
// and nothing else.
func TestPolicySources(t *testing.T) {
	csp := get(t, (&Handler{}).Index, "/").Header().Get("Content-Security-Policy")
	directives := map[string]string{}
	for d := range strings.SplitSeq(csp, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		directives[name] = value
	}
	for name, want := range map[string]string{
		"img-src":    "'self' data: blob:",
		"media-src":  "'self' blob:",
		"frame-src":  "'self'",
		"object-src": "'none'",
	} {
		if got, ok := directives[name]; !ok || got != want {
			t.Errorf("%s is %q, want %q (policy %q)", name, got, want, csp)
		}
	}
}
