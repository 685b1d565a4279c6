package files

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/server/auth"
	"den.dev/den/internal/server/reply"
	"den.dev/den/internal/session"
	"den.dev/den/internal/store"
)

// owner is whom the tests' computers own their files as: a uid and gid
// no account is likely to have.
const owner = 12345

const secret = "TOP SECRET: the host's own file"

// fakeFolders is a Runtime's Folders for the sessions it knows, and
// for the agents it knows as "agent:NAME".
type fakeFolders map[string]session.Folders

func (f fakeFolders) Folders(_ context.Context, id string) (session.Folders, error) {
	folders, ok := f[id]
	if !ok || strings.HasPrefix(id, "agent:") {
		return session.Folders{}, fmt.Errorf("session %s: %w", id, store.ErrNotFound)
	}
	return folders, nil
}

func (f fakeFolders) AgentFolders(_ context.Context, agent string) (session.Folders, error) {
	if strings.ContainsAny(agent, "/.") {
		return session.Folders{}, fmt.Errorf("%w: agent %q", session.ErrBadOptions, agent)
	}
	folders, ok := f["agent:"+agent]
	if !ok {
		return session.Folders{}, fmt.Errorf("agent %s: %w", agent, store.ErrNotFound)
	}
	return folders, nil
}

// guardMaxBody is the body limit of the tests' guard: far below any
// upload's, which Handler raises for its routes.
const guardMaxBody = 64

// env is a session's folders served by a Handler through a ServeMux
// with the daemon's patterns, behind the daemon's guard (every request
// public, bodies limited to guardMaxBody).
type env struct {
	srv   *httptest.Server
	h     *Handler
	base  string // holds the session's folders, and secret.txt beside them
	ws    string // the workspace
	att   string // the attachments
	off   string // the offloads
	brw   string // the browser's folder
	mem   string // the agent's memory
	skl   string // the agent's skills
	shr   string // the agent's shared folder
	out   string // a folder elsewhere, with secret.txt
	owned bool   // whether files are given to owner (den is root)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{base: t.TempDir(), out: t.TempDir()}
	e.ws, e.att, e.off = filepath.Join(e.base, "workspace"), filepath.Join(e.base, "attachments"), filepath.Join(e.base, "offloads")
	e.brw, e.mem, e.skl, e.shr = filepath.Join(e.base, "browser"), filepath.Join(e.base, "memory"), filepath.Join(e.base, "skills"), filepath.Join(e.base, "shared")
	for _, d := range []string{e.ws, e.att, e.off, e.brw, e.mem, e.skl, e.shr} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(e.base, "secret.txt"), secret)
	writeFile(t, filepath.Join(e.out, "secret.txt"), secret)
	folders := session.Folders{Workspace: e.ws, Attachments: e.att, Offloads: e.off, Browser: e.brw, Memory: e.mem, Skills: e.skl, Shared: e.shr}
	if os.Geteuid() == 0 {
		folders.Owner = &hostfs.Owner{UID: owner, GID: owner}
		e.owned = true
	}
	e.h = &Handler{F: fakeFolders{"s1": folders, "agent:default": {Memory: e.mem, Skills: e.skl, Shared: e.shr}}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/sessions/{id}/files/{path...}", answer(e.h.Get))
	mux.HandleFunc("PUT /api/v1/sessions/{id}/files/{path...}", answer(e.h.Put))
	mux.HandleFunc("POST /api/v1/sessions/{id}/attachments", answer(e.h.Attach))
	mux.HandleFunc("GET /api/v1/sessions/{id}/attachments/{name}", answer(e.h.GetAttachment))
	mux.HandleFunc("GET /api/v1/sessions/{id}/offloads/{name}", answer(e.h.GetOffload))
	mux.HandleFunc("GET /api/v1/resources", answer(e.h.Resource))
	g, err := auth.New(auth.Options{
		DataDir: t.TempDir(),
		Env:     func(string) string { return "" },
		MaxBody: guardMaxBody,
		Public:  func(*http.Request) bool { return true },
	})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(g.Wrap(mux))
	t.Cleanup(e.srv.Close)
	return e
}

// answer answers a handler's error as the server's errorFor does with
// the errors this package returns.
func answer(h func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		err := h(w, r)
		if err == nil {
			return
		}
		status, code, msg := http.StatusInternalServerError, "internal", "den failed"
		var fe *Error
		var tooLarge *http.MaxBytesError
		switch {
		case errors.As(err, &fe):
			status, code, msg = fe.Status, fe.Code, fe.Message
		case errors.As(err, &tooLarge):
			status, code, msg = http.StatusRequestEntityTooLarge, "too_large", "over the limit"
		case errors.Is(err, store.ErrNotFound):
			status, code, msg = http.StatusNotFound, "not_found", err.Error()
		case errors.Is(err, session.ErrBadOptions):
			status, code, msg = http.StatusBadRequest, "bad_request", err.Error()
		}
		reply.JSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
	}
}

// response is a response read whole.
type response struct {
	*http.Response
	body string
}

// do sends a request to the session's URL path (from /api/v1/sessions/
// on, as written, escapes and all) and reads the answer. It follows no
// redirect, and fails the test if den takes more than 10 s: a handler
// that opens a named pipe blocks (a hang detector, not a timing).
func (e *env) do(t *testing.T, method, urlPath string, body io.Reader, hdr ...string) response {
	t.Helper()
	return e.doAt(t, method, "/api/v1/sessions/"+urlPath, body, hdr...)
}

// doAt is do for any path of den's (from /api/v1/ on).
func (e *env) doAt(t *testing.T, method, urlPath string, body io.Reader, hdr ...string) response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, e.srv.URL+urlPath, body)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%s %s did not answer within 10 s: it blocks", method, urlPath)
	}
	if err != nil {
		t.Fatalf("%s %s: %v", method, urlPath, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read the answer: %v", method, urlPath, err)
	}
	return response{resp, string(b)}
}

// wantError fails unless resp is den's JSON error with status and code.
func wantError(t *testing.T, resp response, status int, code string) {
	t.Helper()
	var got struct {
		Error struct{ Code, Message string }
	}
	shown := resp.body // what a broken handler served may be long, or secret
	if len(shown) > 200 {
		shown = shown[:200] + "…"
	}
	if resp.StatusCode != status {
		t.Errorf("%s %s: status %d, want %d (%s)", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, status, shown)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q, want JSON", resp.Request.Method, resp.Request.URL.Path, ct)
	}
	if err := json.Unmarshal([]byte(resp.body), &got); err != nil || got.Error.Code != code || got.Error.Message == "" {
		t.Errorf("%s %s: body %s (%v), want an error with code %q and a message", resp.Request.Method, resp.Request.URL.Path, shown, err, code)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// mkfifo makes a named pipe at path. Should a broken handler be stuck
// opening it, for reading or for writing, the test's end opens it at
// both ends, which frees the handler, so that the server can close.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	if err := unix.Mkfifo(path, 0o666); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r, err := unix.Open(path, unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return
		}
		defer unix.Close(r)
		if w, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
			unix.Close(w)
		}
	})
}

// unchanged fails unless the file at path still holds want.
func unchanged(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if string(got) != want {
		t.Errorf("%s changed: it holds %q, want %q", path, got, want)
	}
}

// absent fails unless nothing is at path.
func absent(t *testing.T, path string) {
	t.Helper()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s exists (%v); want nothing there", path, err)
	}
}

// noTemps fails if a temporary file is left anywhere beneath dir.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), ".den-tmp-") {
			t.Errorf("temporary file %s left behind", p)
		}
		return nil
	})
}

// ownedBy fails unless path (not followed) has mode and, when den is
// root, belongs to owner.
func (e *env) ownedBy(t *testing.T, path string, mode fs.FileMode) {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != mode {
		t.Errorf("%s: mode %v, want %v", path, fi.Mode(), mode)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if e.owned && (st.Uid != owner || st.Gid != owner) {
		t.Errorf("%s: owner %d:%d, want %d:%d", path, st.Uid, st.Gid, owner, owner)
	}
}

// TestMissingSession checks that every route answers a session that
// does not exist with a 404 JSON error, and touches nothing.
func TestMissingSession(t *testing.T) {
	e := newEnv(t)
	wantError(t, e.do(t, "GET", "nope/files/", nil), http.StatusNotFound, "not_found")
	wantError(t, e.do(t, "GET", "nope/files/a.txt", nil), http.StatusNotFound, "not_found")
	wantError(t, e.do(t, "PUT", "nope/files/a.txt", strings.NewReader("x")), http.StatusNotFound, "not_found")
	body, ctype := multipartBody(t, filePart{"a.txt", "x"})
	wantError(t, e.do(t, "POST", "nope/attachments", body, "Content-Type", ctype), http.StatusNotFound, "not_found")
	absent(t, filepath.Join(e.ws, "a.txt"))
	absent(t, filepath.Join(e.att, "a.txt"))
}
