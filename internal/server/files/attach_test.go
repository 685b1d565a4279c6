package files

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// filePart is one part of a multipart body: a file named name (raw:
// the test writes the header, hostile bytes and all, as RFC 2231
// encodes them) in the field "file".
type filePart struct {
	name, content string
}

// multipartBody is a multipart/form-data body with parts, and a
// field "comment" before them, which Attach skips.
func multipartBody(t *testing.T, parts ...filePart) (io.Reader, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if err := mw.WriteField("comment", "not a file"); err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		writePart(t, mw, p)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf, mw.FormDataContentType()
}

func writePart(t *testing.T, mw *multipart.Writer, p filePart) {
	t.Helper()
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", `form-data; name="file"; filename*=UTF-8''`+url.PathEscape(p.name))
	h.Set("Content-Type", "application/x-test")
	w, err := mw.CreatePart(h)
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, p.content)
}

type attachAnswer struct {
	Attachments []Attachment `json:"attachments"`
}

func (e *env) attach(t *testing.T, parts ...filePart) attachAnswer {
	t.Helper()
	body, ctype := multipartBody(t, parts...)
	resp := e.do(t, "POST", "s1/attachments", body, "Content-Type", ctype)
	var got attachAnswer
	if err := json.Unmarshal([]byte(resp.body), &got); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST attachments: %d %s (%v); want 201", resp.StatusCode, resp.body, err)
	}
	return got
}

// names lists the entries of dir.
func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// TestAttach sends two files in one request: both saved, exact, the
// computer's, and described in the answer.
func TestAttach(t *testing.T) {
	e := newEnv(t)
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB: spans many reads
	got := e.attach(t, filePart{"report.pdf", big}, filePart{"notes.txt", "line 1\r\nline 2\n--not a boundary"})
	want := attachAnswer{[]Attachment{
		{Name: "report.pdf", Path: "/den/attachments/report.pdf", Size: int64(len(big)), ContentType: "application/x-test"},
		{Name: "notes.txt", Path: "/den/attachments/notes.txt", Size: 31, ContentType: "application/x-test"},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
	unchanged(t, filepath.Join(e.att, "report.pdf"), big)
	unchanged(t, filepath.Join(e.att, "notes.txt"), "line 1\r\nline 2\n--not a boundary")
	e.ownedBy(t, filepath.Join(e.att, "report.pdf"), 0o644)
	e.ownedBy(t, filepath.Join(e.att, "notes.txt"), 0o644)
	if diff := cmp.Diff([]string{"notes.txt", "report.pdf"}, names(t, e.att)); diff != "" {
		t.Errorf("the attachments folder (-want +got):\n%s", diff)
	}
}

// TestAttachNames sends hostile file names: each is saved under a
// safe name in the attachments folder, and nothing is made elsewhere.
func TestAttachNames(t *testing.T) {
	e := newEnv(t)
	long := strings.Repeat("n", 300) + ".txt"
	longRunes := strings.Repeat("é", 150) + ".txt" // 2 bytes each: cut on a rune
	tests := []struct{ client, want string }{
		{"../../x", "x"},
		{"../../../../../../tmp/den-attach-escape", "den-attach-escape"},
		{`..\..\win.txt`, "win.txt"},
		{".bashrc", "bashrc"},
		{"...", "attachment"},
		{"", "attachment"},
		{"a\nb\r\x01c\x7f\x00d.txt", "abcd.txt"},
		{"evil\u202egnp.exe", "evilgnp.exe"},
		{"  spaced . ", "spaced"},
		{"bad\xffutf8.txt", "badutf8.txt"},
		{long, strings.Repeat("n", 96) + ".txt"},
		{longRunes, strings.Repeat("é", 48) + ".txt"},
		{"x.averyveryverylongextension", "x.averyveryverylongextension"},
	}
	var parts []filePart
	for i, tt := range tests {
		parts = append(parts, filePart{tt.client, fmt.Sprint("content ", i)})
	}
	got := e.attach(t, parts...)
	if len(got.Attachments) != len(tests) {
		t.Fatalf("%d attachments, want %d", len(got.Attachments), len(tests))
	}
	seen := map[string]bool{}
	for i, tt := range tests {
		a := got.Attachments[i]
		want := tt.want
		if seen[want] { // "attachment" twice
			want = fit(want, "-2")
		}
		seen[want] = true
		if a.Name != want || a.Path != "/den/attachments/"+want {
			t.Errorf("%q saved as %q (%s), want %q", tt.client, a.Name, a.Path, want)
		}
		if len(a.Name) > 100 {
			t.Errorf("%q saved as %d bytes, more than 100", tt.client, len(a.Name))
		}
		unchanged(t, filepath.Join(e.att, a.Name), fmt.Sprint("content ", i))
	}
	absent(t, filepath.Join(e.base, "x"))
	absent(t, "/tmp/den-attach-escape")
	if n := len(names(t, e.att)); n != len(tests) {
		t.Errorf("%d entries in the attachments folder, want %d: %v", n, len(tests), names(t, e.att))
	}
}

// TestAttachCollision checks that a name already taken, by a file or
// by a planted link, gets -2, -3 … and that nothing is overwritten or
// followed.
func TestAttachCollision(t *testing.T) {
	e := newEnv(t)
	writeFile(t, filepath.Join(e.att, "dup.txt"), "first")
	symlink(t, filepath.Join(e.out, "made.txt"), filepath.Join(e.att, "planted.txt"))
	symlink(t, filepath.Join(e.out, "secret.txt"), filepath.Join(e.att, "secret.txt"))
	got := e.attach(t, filePart{"dup.txt", "second"}, filePart{"dup.txt", "third"}, filePart{"planted.txt", "p"}, filePart{"secret.txt", "s"})
	var gotNames []string
	for _, a := range got.Attachments {
		gotNames = append(gotNames, a.Name)
	}
	if diff := cmp.Diff([]string{"dup-2.txt", "dup-3.txt", "planted-2.txt", "secret-2.txt"}, gotNames); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	unchanged(t, filepath.Join(e.att, "dup.txt"), "first")
	unchanged(t, filepath.Join(e.att, "dup-2.txt"), "second")
	unchanged(t, filepath.Join(e.att, "dup-3.txt"), "third")
	unchanged(t, filepath.Join(e.out, "secret.txt"), secret)
	absent(t, filepath.Join(e.out, "made.txt"))
}

// TestAttachAborted cuts uploads short: the body ends inside a part,
// the client goes away mid-part, the body is over the limit. Nothing of
// the request is kept, the files saved before the failing part
// included, and no temporary file is left.
func TestAttachAborted(t *testing.T) {
	// start writes a complete first part and the start of a second.
	start := func(t *testing.T) (*bytes.Buffer, string) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		writePart(t, mw, filePart{"whole.txt", "complete"})
		writePart(t, mw, filePart{"cut.txt", strings.Repeat("partial ", 1000)})
		return &buf, mw.FormDataContentType() // no closing boundary
	}

	t.Run("body ends mid-part", func(t *testing.T) {
		e := newEnv(t)
		body, ctype := start(t)
		wantError(t, e.do(t, "POST", "s1/attachments", unsized{body}, "Content-Type", ctype), http.StatusBadRequest, "bad_request")
		if left := names(t, e.att); len(left) != 0 {
			t.Errorf("left in the attachments folder: %v", left)
		}
	})

	t.Run("client goes away mid-part", func(t *testing.T) {
		e := newEnv(t)
		head, ctype := start(t)
		pr, pw := io.Pipe()
		sent := make(chan struct{})
		go func() {
			pw.Write(head.Bytes())
			close(sent)
			// Let den read into the second part before the cut.
			pw.Write(bytes.Repeat([]byte("more "), 1<<14))
			pw.CloseWithError(io.ErrClosedPipe)
		}()
		req, err := http.NewRequest("POST", e.srv.URL+"/api/v1/sessions/s1/attachments", pr)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", ctype)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode < 400 {
				t.Errorf("a cut upload answered %d", resp.StatusCode)
			}
		}
		<-sent
		e.srv.Close() // waits for the handler to finish
		if left := names(t, e.att); len(left) != 0 {
			t.Errorf("left in the attachments folder: %v", left)
		}
	})

	t.Run("over the limit", func(t *testing.T) {
		e := newEnv(t)
		e.h.Limit = 4000
		body, ctype := multipartBody(t, filePart{"a.txt", strings.Repeat("a", 1000)}, filePart{"b.txt", strings.Repeat("b", 3500)})
		wantError(t, e.do(t, "POST", "s1/attachments", unsized{body}, "Content-Type", ctype), http.StatusRequestEntityTooLarge, "too_large")
		body, ctype = multipartBody(t, filePart{"a.txt", strings.Repeat("a", 1000)}, filePart{"b.txt", strings.Repeat("b", 3500)})
		wantError(t, e.do(t, "POST", "s1/attachments", body, "Content-Type", ctype), http.StatusRequestEntityTooLarge, "too_large")
		if left := names(t, e.att); len(left) != 0 {
			t.Errorf("left in the attachments folder: %v", left)
		}
	})
}

// TestAttachBad sends requests that are not uploads.
func TestAttachBad(t *testing.T) {
	e := newEnv(t)
	wantError(t, e.do(t, "POST", "s1/attachments", strings.NewReader(`{"file": "x"}`), "Content-Type", "application/json"),
		http.StatusUnsupportedMediaType, "unsupported_media_type")
	body, ctype := multipartBody(t) // the comment field only
	wantError(t, e.do(t, "POST", "s1/attachments", body, "Content-Type", ctype), http.StatusBadRequest, "bad_request")
	if left := names(t, e.att); len(left) != 0 {
		t.Errorf("left in the attachments folder: %v", left)
	}
}

// TestSafeName checks the names made from clients' filenames, and
// their fitting to 100 bytes with a suffix.
func TestSafeName(t *testing.T) {
	for _, tt := range []struct{ client, suffix, want string }{
		{"report.pdf", "", "report.pdf"},
		{"report.pdf", "-2", "report-2.pdf"},
		{"a.tar.gz", "-3", "a.tar-3.gz"},
		{"bashrc", "-2", "bashrc-2"},
		{strings.Repeat("n", 200) + ".pdf", "-12", strings.Repeat("n", 93) + "-12.pdf"},
	} {
		if got := fit(safeName(tt.client), tt.suffix); got != tt.want {
			t.Errorf("fit(safeName(%q), %q) = %q, want %q", tt.client, tt.suffix, got, tt.want)
		}
	}
	got := slices.Collect(candidates("x.txt"))
	if len(got) != maxTries || got[0] != "x.txt" || got[1] != "x-2.txt" || got[maxTries-1] != fmt.Sprintf("x-%d.txt", maxTries) {
		t.Errorf("candidates: %d of them, %v … %v", len(got), got[:2], got[len(got)-1])
	}
}
