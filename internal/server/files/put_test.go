package files

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPut uploads a new file (201), replaces it (200), and makes
// nested folders, each new file and folder the computer's, with the
// modes promised; an existing folder is left as it was.
func TestPut(t *testing.T) {
	e := newEnv(t)
	put := func(urlPath, content string, status int, wantPath string) {
		t.Helper()
		resp := e.do(t, "PUT", urlPath, strings.NewReader(content))
		var got Upload
		if err := json.Unmarshal([]byte(resp.body), &got); err != nil || resp.StatusCode != status || got != (Upload{wantPath, int64(len(content))}) {
			t.Fatalf("PUT %s: %d %s (%v); want %d %+v", urlPath, resp.StatusCode, resp.body, err, status, Upload{wantPath, int64(len(content))})
		}
	}
	put("s1/files/new.txt", "hello", http.StatusCreated, "/workspace/new.txt")
	unchanged(t, filepath.Join(e.ws, "new.txt"), "hello")
	e.ownedBy(t, filepath.Join(e.ws, "new.txt"), 0o644)

	put("s1/files/new.txt", "bye", http.StatusOK, "/workspace/new.txt")
	unchanged(t, filepath.Join(e.ws, "new.txt"), "bye")
	e.ownedBy(t, filepath.Join(e.ws, "new.txt"), 0o644)

	put("s1/files/a/b/c.txt", "deep", http.StatusCreated, "/workspace/a/b/c.txt")
	unchanged(t, filepath.Join(e.ws, "a/b/c.txt"), "deep")
	e.ownedBy(t, filepath.Join(e.ws, "a"), 0o755|os.ModeDir)
	e.ownedBy(t, filepath.Join(e.ws, "a/b"), 0o755|os.ModeDir)
	e.ownedBy(t, filepath.Join(e.ws, "a/b/c.txt"), 0o644)

	// Bigger than the guard's limit for other routes: Put raises it.
	long := strings.Repeat("long ", 1000)
	put("s1/files/long.txt", long, http.StatusCreated, "/workspace/long.txt")
	unchanged(t, filepath.Join(e.ws, "long.txt"), long)

	put("s1/files/%2e/a/b%2F%2Fd.txt", "", http.StatusCreated, "/workspace/a/b/d.txt")
	unchanged(t, filepath.Join(e.ws, "a/b/d.txt"), "")

	// A folder that was there keeps its mode and owner.
	if err := os.Mkdir(filepath.Join(e.ws, "mine"), 0o700); err != nil {
		t.Fatal(err)
	}
	put("s1/files/mine/f", "x", http.StatusCreated, "/workspace/mine/f")
	fi, err := os.Lstat(filepath.Join(e.ws, "mine"))
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode() != 0o700|os.ModeDir || int(st.Uid) != os.Geteuid() {
		t.Errorf("an existing folder became %v, uid %d", fi.Mode(), st.Uid)
	}
	noTemps(t, e.ws)
}

// TestPutRefuses puts through hostile paths: a link planted as the
// file or as a folder on the way, to a file or folder outside, a named
// pipe, a folder, "..". Each is refused, and nothing outside is
// written.
func TestPutRefuses(t *testing.T) {
	e := newEnv(t)
	outSecret := filepath.Join(e.out, "secret.txt")
	symlink(t, outSecret, filepath.Join(e.ws, "lsecret"))
	symlink(t, filepath.Join(e.out, "made.txt"), filepath.Join(e.ws, "dangling"))
	symlink(t, e.out, filepath.Join(e.ws, "lout"))
	writeFile(t, filepath.Join(e.ws, "dir/keep"), "kept")
	writeFile(t, filepath.Join(e.ws, "file.txt"), "a file")
	mkfifo(t, filepath.Join(e.ws, "p"))

	tests := []struct {
		urlPath string
		status  int
		code    string
	}{
		{"lsecret", http.StatusForbidden, "refused"},
		{"dangling", http.StatusForbidden, "refused"},
		{"lout/secret.txt", http.StatusForbidden, "refused"},
		{"lout/made.txt", http.StatusForbidden, "refused"},
		{"lout/new/made.txt", http.StatusForbidden, "refused"},
		{"p", http.StatusForbidden, "refused"},
		{"p/x", http.StatusForbidden, "refused"},
		{"dir", http.StatusConflict, "conflict"},
		{"", http.StatusConflict, "conflict"},
		{"file.txt/x", http.StatusConflict, "conflict"},
		{"new/", http.StatusBadRequest, "bad_request"},
		{"%2e%2e/secret.txt", http.StatusBadRequest, "bad_request"},
		{"new/%2e%2e/%2e%2e/secret.txt", http.StatusBadRequest, "bad_request"},
		{"%2Ftmp%2Fden-put-escape", http.StatusBadRequest, "bad_request"},
		{"a%00b", http.StatusBadRequest, "bad_request"},
	}
	for _, tt := range tests {
		wantError(t, e.do(t, "PUT", "s1/files/"+tt.urlPath, strings.NewReader("PLANTED")), tt.status, tt.code)
	}
	unchanged(t, outSecret, secret)
	unchanged(t, filepath.Join(e.base, "secret.txt"), secret)
	absent(t, filepath.Join(e.out, "made.txt"))
	absent(t, filepath.Join(e.out, "new"))
	absent(t, filepath.Join(e.ws, "new"))
	absent(t, "/tmp/den-put-escape")
	unchanged(t, filepath.Join(e.ws, "dir/keep"), "kept")
	unchanged(t, filepath.Join(e.ws, "file.txt"), "a file")
	for _, link := range []string{"lsecret", "dangling", "lout"} {
		if fi, err := os.Lstat(filepath.Join(e.ws, link)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer the link planted: %v %v", link, fi.Mode(), err)
		}
	}
	if fi, err := os.Lstat(filepath.Join(e.ws, "p")); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		t.Errorf("p is no longer the named pipe: %v", err)
	}
	noTemps(t, e.ws)
}

// unsized is a body of unknown length: the client sends it chunked, and
// the limit is met while it streams.
type unsized struct{ io.Reader }

// TestPutTooLarge sends bodies over the limit, with a Content-Length
// and without: 413, and no file, temporary file or folder left behind,
// and the file a PUT would have replaced as it was.
func TestPutTooLarge(t *testing.T) {
	e := newEnv(t)
	e.h.Limit = 1000
	writeFile(t, filepath.Join(e.ws, "keep.txt"), "old")
	for _, tt := range []struct {
		name string
		body func() io.Reader
	}{
		{"sized", func() io.Reader { return strings.NewReader(strings.Repeat("x", 1001)) }},
		{"unsized", func() io.Reader { return unsized{strings.NewReader(strings.Repeat("x", 5000))} }},
		{"unsized, one byte over", func() io.Reader { return unsized{strings.NewReader(strings.Repeat("x", 1001))} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantError(t, e.do(t, "PUT", "s1/files/deep/er/big.bin", tt.body()), http.StatusRequestEntityTooLarge, "too_large")
			absent(t, filepath.Join(e.ws, "deep"))
			wantError(t, e.do(t, "PUT", "s1/files/keep.txt", tt.body()), http.StatusRequestEntityTooLarge, "too_large")
			unchanged(t, filepath.Join(e.ws, "keep.txt"), "old")
			noTemps(t, e.ws)
		})
	}
	resp := e.do(t, "PUT", "s1/files/deep/exact.bin", unsized{strings.NewReader(strings.Repeat("x", 1000))})
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("PUT of exactly the limit: %d %s", resp.StatusCode, resp.body)
	}
}

// TestPutFolder: a path ending in "/" with an empty body makes the
// folder (201, the computer's), again is 200, through a planted link is
// refused, and with a body is a bad request.
func TestPutFolder(t *testing.T) {
	e := newEnv(t)
	if resp := e.do(t, "PUT", "s1/files/docs/notes/", strings.NewReader("")); resp.StatusCode != http.StatusCreated || !strings.Contains(resp.body, `"/workspace/docs/notes"`) {
		t.Fatalf("mkdir: %d %s", resp.StatusCode, resp.body)
	}
	e.ownedBy(t, filepath.Join(e.ws, "docs/notes"), 0o755|os.ModeDir)
	if resp := e.do(t, "PUT", "s1/files/docs/notes/", strings.NewReader("")); resp.StatusCode != http.StatusOK {
		t.Errorf("mkdir again: %d %s", resp.StatusCode, resp.body)
	}
	if err := os.Symlink("/etc", filepath.Join(e.ws, "link")); err != nil {
		t.Fatal(err)
	}
	if resp := e.do(t, "PUT", "s1/files/link/x/", strings.NewReader("")); resp.StatusCode != http.StatusForbidden {
		t.Errorf("mkdir through a link: %d %s", resp.StatusCode, resp.body)
	}
	if _, err := os.Lstat("/etc/x"); err == nil {
		t.Fatal("a folder was made through the link")
	}
	if resp := e.do(t, "PUT", "s1/files/docs/other/", strings.NewReader("data")); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("mkdir with a body: %d %s", resp.StatusCode, resp.body)
	}
}
