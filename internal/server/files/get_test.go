package files

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestList lists the workspace root and a subfolder: types, sizes, the
// order (folders first, then by name), and links shown as links, with
// their text, never followed.
func TestList(t *testing.T) {
	e := newEnv(t)
	writeFile(t, filepath.Join(e.ws, "b.txt"), "hello")
	writeFile(t, filepath.Join(e.ws, "A.txt"), "12")
	writeFile(t, filepath.Join(e.ws, "zdir/inner.txt"), "inner")
	writeFile(t, filepath.Join(e.ws, "adir/.hidden"), "")
	if err := os.Chmod(filepath.Join(e.ws, "zdir"), 0o750); err != nil {
		t.Fatal(err)
	}
	symlink(t, "/etc/shadow", filepath.Join(e.ws, "shadow"))
	symlink(t, e.out, filepath.Join(e.ws, "lout")) // a folder: followed, it would list as one
	symlink(t, "/root", filepath.Join(e.ws, "zdir/lroot"))
	mkfifo(t, filepath.Join(e.ws, "p"))
	mtime := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	if err := os.Chtimes(filepath.Join(e.ws, "b.txt"), mtime, mtime); err != nil {
		t.Fatal(err)
	}

	list := func(urlPath string) Listing {
		t.Helper()
		resp := e.do(t, "GET", urlPath, nil)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET %s: %d %s %s", urlPath, resp.StatusCode, resp.Header.Get("Content-Type"), resp.body)
		}
		var l Listing
		if err := json.Unmarshal([]byte(resp.body), &l); err != nil {
			t.Fatalf("GET %s: %v in %s", urlPath, err, resp.body)
		}
		for _, en := range l.Entries {
			if en.Modified.IsZero() {
				t.Errorf("GET %s: %s has no modification time", urlPath, en.Name)
			}
		}
		return l
	}
	ignoreTime := cmpopts.IgnoreFields(Entry{}, "Modified")

	root := list("s1/files/")
	want := Listing{Path: "/workspace", Entries: []Entry{
		{Name: "adir", Type: "dir", Mode: "0755"},
		{Name: "zdir", Type: "dir", Mode: "0750"},
		{Name: "A.txt", Type: "file", Size: 2, Mode: "0644"},
		{Name: "b.txt", Type: "file", Size: 5, Mode: "0644"},
		{Name: "lout", Type: "symlink", Size: int64(len(e.out)), Mode: "0777", Target: e.out},
		{Name: "p", Type: "other", Mode: "0644"},
		{Name: "shadow", Type: "symlink", Size: int64(len("/etc/shadow")), Mode: "0777", Target: "/etc/shadow"},
	}}
	// The named pipe's mode went through the umask.
	if fi, err := os.Lstat(filepath.Join(e.ws, "p")); err == nil {
		want.Entries[5].Mode = "0" + strconv.FormatUint(uint64(fi.Mode().Perm()), 8)
	}
	if diff := cmp.Diff(want, root, ignoreTime); diff != "" {
		t.Errorf("GET the root (-want +got):\n%s", diff)
	}
	for _, en := range root.Entries {
		if en.Name == "b.txt" && !en.Modified.Equal(mtime) {
			t.Errorf("b.txt modified %v, want %v", en.Modified, mtime)
		}
	}

	for _, urlPath := range []string{"s1/files/zdir", "s1/files/zdir/", "s1/files/%2e/zdir"} {
		sub := list(urlPath)
		want := Listing{Path: "/workspace/zdir", Entries: []Entry{
			{Name: "inner.txt", Type: "file", Size: 5, Mode: "0644"},
			{Name: "lroot", Type: "symlink", Size: 5, Mode: "0777", Target: "/root"},
		}}
		if diff := cmp.Diff(want, sub, ignoreTime); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", urlPath, diff)
		}
	}

	if err := os.Remove(filepath.Join(e.ws, "adir/.hidden")); err != nil {
		t.Fatal(err)
	}
	if empty := list("s1/files/adir"); empty.Entries == nil || len(empty.Entries) != 0 {
		t.Errorf("an empty folder lists as %+v, want [] entries", empty)
	}
}

// TestListTruncated checks that a listing stops at MaxEntries and says
// so.
func TestListTruncated(t *testing.T) {
	e := newEnv(t)
	for i := range MaxEntries + 1 {
		f, err := os.Create(filepath.Join(e.ws, strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	resp := e.do(t, "GET", "s1/files/", nil)
	var l Listing
	if err := json.Unmarshal([]byte(resp.body), &l); err != nil {
		t.Fatal(err)
	}
	if len(l.Entries) != MaxEntries || !l.Truncated {
		t.Errorf("%d entries, truncated %v; want %d, truncated", len(l.Entries), l.Truncated, MaxEntries)
	}
}

// TestDownload downloads files: their type, length, date, nosniff, and
// the disposition, which is inline only when asked for and safe (never
// for HTML or SVG, by name or by content).
func TestDownload(t *testing.T) {
	e := newEnv(t)
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
	tests := []struct {
		name, content string
		query         string
		ctype         string
		disposition   string
	}{
		{"notes.txt", "hello, world", "", "text/plain; charset=utf-8", `attachment; filename=notes.txt`},
		{"notes.txt", "hello, world", "?inline=1", "text/plain; charset=utf-8", `inline; filename=notes.txt`},
		{"page.html", "<script>alert(1)</script>", "?inline=1", "text/html; charset=utf-8", `attachment; filename=page.html`},
		{"pic.svg", `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`, "?inline=1", "image/svg+xml", `attachment; filename=pic.svg`},
		{"pic.png", png, "?inline=1", "image/png", `inline; filename=pic.png`},
		{"pic.png", png, "?inline=0", "image/png", `attachment; filename=pic.png`},
		{"doc.pdf", "%PDF-1.4\n", "?inline=1", "application/pdf", `inline; filename=doc.pdf`},
		{"sniffed", "<html><body><script>alert(1)</script>", "?inline=1", "text/html; charset=utf-8", `attachment; filename=sniffed`},
		{"sniffedpng", png, "?inline=1", "image/png", `inline; filename=sniffedpng`},
		{"blob", "\x00\x01\x02\x03", "", "application/octet-stream", `attachment; filename=blob`},
		{"my file \"1\".txt", "x", "", "text/plain; charset=utf-8", `attachment; filename="my file \"1\".txt"`},
		{"résumé.txt", "x", "", "text/plain; charset=utf-8", `attachment; filename*=utf-8''r%C3%A9sum%C3%A9.txt`},
	}
	for _, tt := range tests {
		t.Run(tt.name+tt.query, func(t *testing.T) {
			path := filepath.Join(e.ws, "d", tt.name)
			writeFile(t, path, tt.content)
			mtime := time.Date(2023, 1, 2, 3, 4, 5, 0, time.UTC)
			if err := os.Chtimes(path, mtime, mtime); err != nil {
				t.Fatal(err)
			}
			resp := e.do(t, "GET", "s1/files/d/"+urlEscape(tt.name)+tt.query, nil)
			if resp.StatusCode != http.StatusOK || resp.body != tt.content {
				t.Fatalf("status %d, body %q; want 200, %q", resp.StatusCode, resp.body, tt.content)
			}
			h := resp.Header
			for k, want := range map[string]string{
				"Content-Type":           tt.ctype,
				"Content-Length":         strconv.Itoa(len(tt.content)),
				"Last-Modified":          mtime.Format(http.TimeFormat),
				"X-Content-Type-Options": "nosniff",
				"Content-Disposition":    tt.disposition,
			} {
				if got := h.Get(k); got != want {
					t.Errorf("%s: %q, want %q", k, got, want)
				}
			}
			if tt.ctype != "application/pdf" && !strings.Contains(h.Get("Content-Security-Policy"), "sandbox") {
				t.Errorf("Content-Security-Policy %q, want a sandbox", h.Get("Content-Security-Policy"))
			}
		})
	}
}

// TestDownloadRange checks ranges, HEAD and a conditional GET, and a
// file bigger than any buffer.
func TestDownloadRange(t *testing.T) {
	e := newEnv(t)
	big := strings.Repeat("0123456789", 1<<20) // 10 MiB
	writeFile(t, filepath.Join(e.ws, "big.bin"), big)

	resp := e.do(t, "GET", "s1/files/big.bin", nil, "Range", "bytes=5-14")
	if resp.StatusCode != http.StatusPartialContent || resp.body != "5678901234" {
		t.Errorf("a range: %d %q, want 206 5678901234", resp.StatusCode, resp.body)
	}
	resp = e.do(t, "HEAD", "s1/files/big.bin", nil)
	if resp.StatusCode != http.StatusOK || resp.body != "" || resp.Header.Get("Content-Length") != strconv.Itoa(len(big)) {
		t.Errorf("HEAD: %d, %d bytes, Content-Length %s", resp.StatusCode, len(resp.body), resp.Header.Get("Content-Length"))
	}
	resp = e.do(t, "GET", "s1/files/big.bin", nil)
	if resp.StatusCode != http.StatusOK || resp.body != big {
		t.Errorf("GET: %d, %d bytes, want all %d", resp.StatusCode, len(resp.body), len(big))
	}
	resp = e.do(t, "GET", "s1/files/big.bin", nil, "If-Modified-Since", resp.Header.Get("Last-Modified"))
	if resp.StatusCode != http.StatusNotModified {
		t.Errorf("a conditional GET: %d, want 304", resp.StatusCode)
	}
}

// TestGetRefuses asks for hostile paths: links (as the file, as a
// folder on the way, to /etc/shadow, /root and elsewhere), named pipes
// (which must not block), "..", encoded or not, and absolute paths.
// None may serve anything of what lies beyond.
func TestGetRefuses(t *testing.T) {
	e := newEnv(t)
	writeFile(t, filepath.Join(e.ws, "a.txt"), "inside")
	symlink(t, "/etc/shadow", filepath.Join(e.ws, "shadow"))
	symlink(t, filepath.Join(e.out, "secret.txt"), filepath.Join(e.ws, "lsecret"))
	symlink(t, "/root", filepath.Join(e.ws, "lroot"))
	symlink(t, e.out, filepath.Join(e.ws, "lout"))
	symlink(t, "a.txt", filepath.Join(e.ws, "lin")) // to a file inside: refused all the same
	mkfifo(t, filepath.Join(e.ws, "p"))
	writeFile(t, filepath.Join(e.ws, "sub/ok"), "")
	mkfifo(t, filepath.Join(e.ws, "sub/p"))
	shadow, _ := os.ReadFile("/etc/shadow")

	tests := []struct {
		urlPath string
		status  int
		code    string
	}{
		{"shadow", http.StatusForbidden, "refused"},
		{"lsecret", http.StatusForbidden, "refused"},
		{"lin", http.StatusForbidden, "refused"},
		{"lout", http.StatusForbidden, "refused"},
		{"lout/", http.StatusForbidden, "refused"},
		{"lout/secret.txt", http.StatusForbidden, "refused"},
		{"lroot", http.StatusForbidden, "refused"},
		{"lroot/.bashrc", http.StatusForbidden, "refused"},
		{"p", http.StatusForbidden, "refused"},
		{"sub/p", http.StatusForbidden, "refused"},
		{"%2e%2e/secret.txt", http.StatusBadRequest, "bad_request"},
		{"sub/%2e%2e/%2e%2e/secret.txt", http.StatusBadRequest, "bad_request"},
		{"..%2fsecret.txt", http.StatusBadRequest, "bad_request"},
		{"%2e%2e", http.StatusBadRequest, "bad_request"},
		{"%2e%2e/", http.StatusBadRequest, "bad_request"},
		{"%2Fetc%2Fshadow", http.StatusBadRequest, "bad_request"},
		{"a%00b", http.StatusBadRequest, "bad_request"},
		{"missing.txt", http.StatusNotFound, "not_found"},
		{"a.txt/x", http.StatusNotFound, "not_found"},
		{"sub/missing/x", http.StatusNotFound, "not_found"},
	}
	for _, tt := range tests {
		for _, q := range []string{"", "?inline=1"} {
			resp := e.do(t, "GET", "s1/files/"+tt.urlPath+q, nil)
			wantError(t, resp, tt.status, tt.code)
			for _, leak := range []string{secret, string(shadow), e.base, e.out} {
				if leak != "" && strings.Contains(resp.body, leak) {
					t.Errorf("GET %s: the answer shows %q: %s", tt.urlPath, leak, resp.body)
				}
			}
		}
	}

	// A plain ".." never reaches the handler: the ServeMux redirects
	// to the cleaned path, which is no file route.
	resp := e.do(t, "GET", "s1/files/../../../../secret.txt", nil)
	if resp.StatusCode == http.StatusOK || strings.Contains(resp.body, secret) {
		t.Errorf("GET with a plain ..: %d %s", resp.StatusCode, resp.body)
	}
}

// urlEscape escapes a file name for a URL path.
func urlEscape(name string) string {
	return strings.NewReplacer("%", "%25", " ", "%20", `"`, "%22", "?", "%3F", "#", "%23").Replace(name)
}

// TestGetAttachment: a file of /den/attachments comes back as it was
// given; a link the computer planted there is refused, a missing file
// is 404, and a path is not a name.
func TestGetAttachment(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.att, "voice.ogg"), []byte("OggS-data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(e.att, "planted.txt")); err != nil {
		t.Fatal(err)
	}
	if resp := e.do(t, "GET", "s1/attachments/voice.ogg", nil); resp.StatusCode != http.StatusOK || resp.body != "OggS-data" {
		t.Errorf("attachment: %d %q", resp.StatusCode, resp.body)
	}
	for path, want := range map[string]int{
		"s1/attachments/planted.txt":    http.StatusForbidden,
		"s1/attachments/nosuch.png":     http.StatusNotFound,
		"s1/attachments/..%2fworkspace": http.StatusBadRequest,
		"s1/attachments/a%2fvoice.ogg":  http.StatusBadRequest,
	} {
		if resp := e.do(t, "GET", path, nil); resp.StatusCode != want || strings.Contains(resp.body, "root:") {
			t.Errorf("GET %s: %d %s, want %d", path, resp.StatusCode, resp.body, want)
		}
	}
}

// TestGetOffload: a capped command's full output comes back from
// /den/offloads; a link planted there is refused.
func TestGetOffload(t *testing.T) {
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.off, "out-1.txt"), []byte("all of it\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(e.base, "secret.txt"), filepath.Join(e.off, "planted.txt")); err != nil {
		t.Fatal(err)
	}
	if resp := e.do(t, "GET", "s1/offloads/out-1.txt", nil); resp.StatusCode != http.StatusOK || resp.body != "all of it\n" {
		t.Errorf("offload: %d %q", resp.StatusCode, resp.body)
	}
	if resp := e.do(t, "GET", "s1/offloads/planted.txt", nil); resp.StatusCode != http.StatusForbidden || strings.Contains(resp.body, secret) {
		t.Errorf("a planted link: %d %s", resp.StatusCode, resp.body)
	}
}

// TestDownloadFramedHTML: HTML asked for inline is inline only when the
// browser loads it into a frame, and then sandboxed: no script of it
// runs, and it has no origin of den's.
func TestDownloadFramedHTML(t *testing.T) {
	e := newEnv(t)
	writeFile(t, filepath.Join(e.ws, "page.html"), "<script>parent.document.title='pwned'</script>")
	for dest, want := range map[string]string{"iframe": "inline", "frame": "inline", "document": "attachment", "": "attachment", "image": "attachment"} {
		var hdr []string
		if dest != "" {
			hdr = []string{"Sec-Fetch-Dest", dest}
		}
		resp := e.do(t, "GET", "s1/files/page.html?inline=1", nil, hdr...)
		if got := resp.Header.Get("Content-Disposition"); got != want+"; filename=page.html" {
			t.Errorf("Sec-Fetch-Dest %q: Content-Disposition %q, want %s", dest, got, want)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "sandbox;") || strings.Contains(csp, "allow-") {
			t.Errorf("Sec-Fetch-Dest %q: Content-Security-Policy %q, want a sandbox that allows nothing", dest, csp)
		}
	}
}
