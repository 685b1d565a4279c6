package files

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// resource asks for a den:// URL with the query pairs kv (key, value,
// ...), each encoded as a browser encodes it.
func (e *env) resource(t *testing.T, kv []string, hdr ...string) response {
	t.Helper()
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Add(kv[i], kv[i+1])
	}
	return e.doAt(t, "GET", "/api/v1/resources?"+q.Encode(), nil, hdr...)
}

// TestResource serves a file of every kind of den:// URL from the
// session's folders, the agent's kinds also by the agent's name, and
// lists folders as the files route does.
func TestResource(t *testing.T) {
	e := newEnv(t)
	files := map[string]string{
		"den://workspace/report.md":               filepath.Join(e.ws, "report.md"),
		"den://workspace/out/my%20chart.csv":      filepath.Join(e.ws, "out/my chart.csv"),
		"den://attachments/voice.ogg":             filepath.Join(e.att, "voice.ogg"),
		"den://offloads/out-1.txt":                filepath.Join(e.off, "out-1.txt"),
		"den://browser/shot.png":                  filepath.Join(e.brw, "shot.png"),
		"den://memory/GLOBAL.md":                  filepath.Join(e.mem, "GLOBAL.md"),
		"den://skills/pdf/SKILL.md":               filepath.Join(e.skl, "pdf/SKILL.md"),
		"den://shared/notes/r%C3%A9sum%C3%A9.txt": filepath.Join(e.shr, "notes/résumé.txt"),
	}
	for u, host := range files {
		writeFile(t, host, "content of "+u)
	}
	for u := range files {
		resp := e.resource(t, []string{"url", u, "session", "s1"})
		if resp.StatusCode != http.StatusOK || resp.body != "content of "+u {
			t.Errorf("%s in session s1: %d %q", u, resp.StatusCode, resp.body)
		}
		if resp.Header.Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") {
			t.Errorf("%s: headers %v", u, resp.Header)
		}
	}
	for _, u := range []string{"den://memory/GLOBAL.md", "den://skills/pdf/SKILL.md"} {
		if resp := e.resource(t, []string{"url", u, "agent", "default"}); resp.StatusCode != http.StatusOK || resp.body != "content of "+u {
			t.Errorf("%s of agent default: %d %q", u, resp.StatusCode, resp.body)
		}
	}

	for u, want := range map[string]Listing{
		"den://workspace/": {Path: "/workspace", Entries: []Entry{{Name: "out", Type: "dir"}, {Name: "report.md", Type: "file"}}},
		"den://workspace":  {Path: "/workspace", Entries: []Entry{{Name: "out", Type: "dir"}, {Name: "report.md", Type: "file"}}},
		"den://skills/pdf": {Path: "/den/skills/pdf", Entries: []Entry{{Name: "SKILL.md", Type: "file"}}},
		"den://browser/":   {Path: "/den/browser", Entries: []Entry{{Name: "shot.png", Type: "file"}}},
	} {
		resp := e.resource(t, []string{"url", u, "session", "s1"})
		var got Listing
		if err := json.Unmarshal([]byte(resp.body), &got); err != nil || resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d %s (%v)", u, resp.StatusCode, resp.body, err)
			continue
		}
		if got.Path != want.Path || len(got.Entries) != len(want.Entries) {
			t.Errorf("%s lists %+v, want %+v", u, got, want)
			continue
		}
		for i, en := range got.Entries {
			if en.Name != want.Entries[i].Name || en.Type != want.Entries[i].Type {
				t.Errorf("%s: entry %d is %+v, want %+v", u, i, en, want.Entries[i])
			}
		}
	}
}

// TestResourceServes checks that the route serves as the files route
// does: types, inline only when asked and safe, HTML inline only into
// a frame and sandboxed, SVG never inline, ranges.
func TestResourceServes(t *testing.T) {
	e := newEnv(t)
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"
	html := "<p>hi</p><script>parent.document.title='pwned'</script>"
	svg := `<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`
	writeFile(t, filepath.Join(e.ws, "chart.png"), png)
	writeFile(t, filepath.Join(e.ws, "page.html"), html)
	writeFile(t, filepath.Join(e.ws, "pic.svg"), svg)
	writeFile(t, filepath.Join(e.ws, "doc.pdf"), "%PDF-1.4\n")
	for _, tt := range []struct {
		name, inline, dest string
		ctype, disposition string
		sandboxed          bool
	}{
		{"chart.png", "1", "image", "image/png", "inline; filename=chart.png", true},
		{"chart.png", "", "", "image/png", "attachment; filename=chart.png", true},
		{"page.html", "1", "iframe", "text/html; charset=utf-8", "inline; filename=page.html", true},
		{"page.html", "1", "frame", "text/html; charset=utf-8", "inline; filename=page.html", true},
		{"page.html", "1", "document", "text/html; charset=utf-8", "attachment; filename=page.html", true},
		{"page.html", "1", "", "text/html; charset=utf-8", "attachment; filename=page.html", true},
		{"page.html", "", "iframe", "text/html; charset=utf-8", "attachment; filename=page.html", true},
		{"pic.svg", "1", "iframe", "image/svg+xml", "attachment; filename=pic.svg", true},
		{"pic.svg", "1", "image", "image/svg+xml", "attachment; filename=pic.svg", true},
		{"doc.pdf", "1", "iframe", "application/pdf", "inline; filename=doc.pdf", false},
	} {
		kv := []string{"url", "den://workspace/" + tt.name, "session", "s1"}
		if tt.inline != "" {
			kv = append(kv, "inline", tt.inline)
		}
		var hdr []string
		if tt.dest != "" {
			hdr = []string{"Sec-Fetch-Dest", tt.dest}
		}
		resp := e.resource(t, kv, hdr...)
		what := tt.name + " inline=" + tt.inline + " dest=" + tt.dest
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %d %s", what, resp.StatusCode, resp.body)
			continue
		}
		h := resp.Header
		if h.Get("Content-Type") != tt.ctype || h.Get("Content-Disposition") != tt.disposition || h.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: %q, %q, nosniff %q; want %q, %q", what, h.Get("Content-Type"), h.Get("Content-Disposition"), h.Get("X-Content-Type-Options"), tt.ctype, tt.disposition)
		}
		csp := h.Get("Content-Security-Policy")
		if tt.sandboxed && (!strings.HasPrefix(csp, "sandbox;") || strings.Contains(csp, "allow-scripts") || strings.Contains(csp, "allow-same-origin")) {
			t.Errorf("%s: Content-Security-Policy %q, want a sandbox without scripts", what, csp)
		}
	}
	writeFile(t, filepath.Join(e.shr, "big.txt"), strings.Repeat("0123456789", 1000))
	resp := e.resource(t, []string{"url", "den://shared/big.txt", "agent", "default"}, "Range", "bytes=5-14")
	if resp.StatusCode != http.StatusPartialContent || resp.body != "5678901234" {
		t.Errorf("a range: %d %q, want 206 5678901234", resp.StatusCode, resp.body)
	}
}

// TestResourceRefuses asks for what the route must not serve: links
// the computer planted (to /etc/shadow, to a folder elsewhere, on the
// way), named pipes, ".." however it is written, bad URLs, and files
// outside the folders the session or agent may read.
func TestResourceRefuses(t *testing.T) {
	e := newEnv(t)
	writeFile(t, filepath.Join(e.ws, "a.txt"), "inside")
	writeFile(t, filepath.Join(e.mem, "GLOBAL.md"), "remember")
	symlink(t, "/etc/shadow", filepath.Join(e.ws, "shadow"))
	symlink(t, "/etc/shadow", filepath.Join(e.mem, "shadow.md"))
	symlink(t, "/etc/shadow", filepath.Join(e.skl, "evil"))
	symlink(t, filepath.Join(e.out, "secret.txt"), filepath.Join(e.att, "secret.txt"))
	symlink(t, e.out, filepath.Join(e.ws, "lout"))
	symlink(t, "/etc", filepath.Join(e.shr, "etc"))
	symlink(t, "a.txt", filepath.Join(e.ws, "lin"))
	mkfifo(t, filepath.Join(e.ws, "p"))
	mkfifo(t, filepath.Join(e.off, "p"))
	if err := os.Remove(e.brw); err != nil {
		t.Fatal(err)
	}
	shadow, _ := os.ReadFile("/etc/shadow")

	s1 := func(u string) []string { return []string{"url", u, "session", "s1"} }
	for _, tt := range []struct {
		kv     []string
		status int
		code   string
	}{
		{s1("den://workspace/shadow"), http.StatusForbidden, "refused"},
		{[]string{"url", "den://memory/shadow.md", "agent", "default"}, http.StatusForbidden, "refused"},
		{s1("den://memory/shadow.md"), http.StatusForbidden, "refused"},
		{s1("den://skills/evil"), http.StatusForbidden, "refused"},
		{s1("den://skills/evil/"), http.StatusForbidden, "refused"},
		{s1("den://attachments/secret.txt"), http.StatusForbidden, "refused"},
		{s1("den://workspace/lout/secret.txt"), http.StatusForbidden, "refused"},
		{s1("den://workspace/lout"), http.StatusForbidden, "refused"},
		{s1("den://shared/etc/shadow"), http.StatusForbidden, "refused"},
		{s1("den://workspace/lin"), http.StatusForbidden, "refused"},
		{s1("den://workspace/p"), http.StatusForbidden, "refused"},
		{s1("den://offloads/p"), http.StatusForbidden, "refused"},
		{s1("den://workspace/../secret.txt"), http.StatusBadRequest, "bad_request"},
		{s1("den://workspace/../../../../etc/shadow"), http.StatusBadRequest, "bad_request"},
		{s1("den://workspace/%2e%2e/secret.txt"), http.StatusBadRequest, "bad_request"},
		{s1("den://workspace/..%2fsecret.txt"), http.StatusBadRequest, "bad_request"},
		{s1("den://workspace/a/%2e%2e/%2e%2e/secret.txt"), http.StatusBadRequest, "bad_request"},
		{s1("den://workspace//etc/shadow"), http.StatusBadRequest, "bad_request"},
		{s1("den://workspace/%2Fetc%2Fshadow"), http.StatusBadRequest, "bad_request"},
		{s1("den://workspace/a%00b"), http.StatusBadRequest, "bad_request"},
		{s1("den://workspace/a\nb"), http.StatusBadRequest, "bad_request"},
		{s1("den://root/.ssh/id_rsa"), http.StatusBadRequest, "bad_request"},
		{s1("den://etc/shadow"), http.StatusBadRequest, "bad_request"},
		{s1("file:///etc/shadow"), http.StatusBadRequest, "bad_request"},
		{s1("/workspace/a.txt"), http.StatusBadRequest, "bad_request"},
		{s1("den://workspace/a.txt?x"), http.StatusBadRequest, "bad_request"},
		{[]string{"session", "s1"}, http.StatusBadRequest, "bad_request"},
		{[]string{"url", "den://workspace/a.txt", "url", "den://workspace/a.txt", "session", "s1"}, http.StatusBadRequest, "bad_request"},
		{[]string{"url", "den://workspace/a.txt"}, http.StatusBadRequest, "bad_request"},
		{[]string{"url", "den://workspace/a.txt", "agent", "default"}, http.StatusBadRequest, "bad_request"},
		{[]string{"url", "den://memory/GLOBAL.md"}, http.StatusBadRequest, "bad_request"},
		{[]string{"url", "den://memory/GLOBAL.md", "agent", "default", "session", "s1"}, http.StatusBadRequest, "bad_request"},
		{[]string{"url", "den://memory/GLOBAL.md", "agent", "../default"}, http.StatusBadRequest, "bad_request"},
		{[]string{"url", "den://memory/GLOBAL.md", "agent", "ghost"}, http.StatusNotFound, "not_found"},
		{[]string{"url", "den://workspace/a.txt", "session", "s2"}, http.StatusNotFound, "not_found"},
		{[]string{"url", "den://workspace/a.txt", "session", "agent:default"}, http.StatusNotFound, "not_found"},
		{s1("den://workspace/missing.txt"), http.StatusNotFound, "not_found"},
		{s1("den://workspace/a.txt/x"), http.StatusNotFound, "not_found"},
		{s1("den://browser/shot.png"), http.StatusNotFound, "not_found"},
	} {
		for _, inline := range []string{"", "1"} {
			kv := tt.kv
			if inline != "" {
				kv = append(append([]string{}, kv...), "inline", inline)
			}
			resp := e.resource(t, kv, "Sec-Fetch-Dest", "iframe")
			wantError(t, resp, tt.status, tt.code)
			for _, leak := range []string{secret, string(shadow), e.base, e.out} {
				if leak != "" && strings.Contains(resp.body, leak) {
					t.Errorf("%v: the answer shows %q: %s", kv, leak, resp.body)
				}
			}
		}
	}

	// A ".." in the route's own path never reaches the route.
	resp := e.doAt(t, "GET", "/api/v1/resources/../sessions/s1/files/a.txt", nil)
	if resp.StatusCode == http.StatusOK && strings.Contains(resp.body, secret) {
		t.Errorf("GET with a plain ..: %d %s", resp.StatusCode, resp.body)
	}
	// Percent-encoded twice, ".." is a name, not a way up.
	writeFile(t, filepath.Join(e.ws, "%2e%2e"), "a name")
	if resp := e.doAt(t, "GET", "/api/v1/resources?session=s1&url=den://workspace/%25252e%25252e", nil); resp.StatusCode != http.StatusOK || resp.body != "a name" {
		t.Errorf("a file named %%2e%%2e: %d %q", resp.StatusCode, resp.body)
	}
}
