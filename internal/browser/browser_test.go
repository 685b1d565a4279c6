package browser

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/sandbox"
)

// TestLocalhostIsTheComputers: the browser's localhost is the
// computer's, and the host's loopback is out of reach. The host serves
// a secret on 127.0.0.1 at the very port the computer's site uses, and
// on a port of its own; the browser sees the computer's site on the
// first and nothing on the second.
func TestLocalhostIsTheComputers(t *testing.T) {
	f := newFixture(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(f.base, "http://"))
	hostSecret := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<title>HOST SECRET</title>host loopback reached")
	})
	same, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		t.Fatalf("the host's loopback at the computer's port: %v", err)
	}
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []net.Listener{same, other} {
		srv := &http.Server{Handler: hostSecret}
		go srv.Serve(l)
		t.Cleanup(func() { srv.Close() })
	}
	r := f.ok(t, Action{Name: "navigate", URL: "localhost:" + port + "/login"})
	if r.Title != "Sign in" || strings.Contains(r.Text(), "HOST SECRET") {
		t.Errorf("localhost:%s is not the computer's: %s", port, r.Text())
	}
	r = f.do(t, Action{Name: "navigate", URL: "http://" + other.Addr().String() + "/"})
	if r.Code != NavFailed || !strings.Contains(r.Message, "net::ERR_CONNECTION_REFUSED") || strings.Contains(r.Text(), "HOST SECRET") {
		t.Errorf("the host's loopback %s was reachable, or the failure is unclear: %s: %s", other.Addr(), r.Code, r.Text())
	}
	// Chromium runs in the computer's network namespace (its renderers
	// in namespaces of their own without a network), never in den's,
	// and never as host root.
	c, _ := f.b.current()
	computerNet, _ := nsOf("/proc/" + strconv.Itoa(c.place.pid) + "/ns/net")
	denNet, _ := nsOf("/proc/self/ns/net")
	procs := chromiumProcs(t, f.b)
	if len(procs) < 3 {
		t.Fatalf("Chromium's processes: %v", procs)
	}
	inComputer := 0
	for _, pid := range procs {
		ns, err := nsOf("/proc/" + strconv.Itoa(pid) + "/ns/net")
		if err != nil {
			continue
		}
		if ns == denNet {
			t.Errorf("process %d is in den's network namespace", pid)
		}
		if ns == computerNet {
			inComputer++
		}
		if uid := procUID(t, pid); uid == 0 {
			t.Errorf("process %d runs as host root", pid)
		}
	}
	if inComputer < 2 {
		t.Errorf("%d of Chromium's processes are in the computer's network namespace", inComputer)
	}
}

func hasLine(text, line string) bool {
	for _, l := range strings.Split(text, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

func chromiumProcs(t testing.TB, b *Browser) []int {
	c, _ := b.current()
	if c == nil {
		t.Fatal("Chromium is not running")
	}
	var procs []sandbox.ProcInfo
	for _, pid := range sandbox.AllPids() {
		if p, ok := sandbox.ReadProc(pid); ok {
			procs = append(procs, p)
		}
	}
	return append([]int{c.cmd.Process.Pid}, sandbox.Descendants(procs, c.cmd.Process.Pid)...)
}

// running reports whether a process runs (zombies have ended).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z' && b[i+2] != 'X'
}

func procUID(t testing.TB, pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "Uid:" {
			n, _ := strconv.Atoi(f[2])
			return n
		}
	}
	return -1
}

var update = flag.Bool("update", false, "rewrite the golden files")

// TestSnapshotFormat compares a page of every kind of part with the
// golden snapshot (go test -run TestSnapshotFormat -update rewrites it).
func TestSnapshotFormat(t *testing.T) {
	f := newFixture(t)
	r := f.ok(t, Action{Name: "navigate", URL: f.base + "/format"})
	got := strings.ReplaceAll(r.Snapshot.Text, f.base, "http://SITE")
	golden := filepath.Join("testdata", "format.golden")
	if *update {
		os.MkdirAll("testdata", 0o755)
		if err := os.WriteFile(golden, []byte(got+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got+"\n" != string(want) {
		t.Errorf("snapshot:\n%s\nwant:\n%s", got, want)
	}
}

// TestSnapshotPages: a long page's snapshot comes in pages; later pages
// are of the same snapshot, so their indexes act.
func TestSnapshotPages(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.SnapshotSize = 2000 })
	r := f.ok(t, Action{Name: "navigate", URL: f.base + "/article"})
	if r.Snapshot.Pages < 3 || r.Snapshot.Page != 1 || len(r.Snapshot.Text) > 2000 || !strings.Contains(r.Text(), "snapshot with page=2 shows more") {
		t.Fatalf("page 1: %d of %d, %d characters:\n%s", r.Snapshot.Page, r.Snapshot.Pages, len(r.Snapshot.Text), r.Text())
	}
	first := r.Snapshot.Text
	last := r.Snapshot.Pages
	r = f.ok(t, Action{Name: "snapshot", Page: last})
	if r.Snapshot.Page != last || r.Snapshot.Text == first || !strings.Contains(r.Snapshot.Text, "Privacy") {
		t.Fatalf("page %d: %s", last, r.Text())
	}
	r = f.ok(t, Action{Name: "click", Index: indexOf(t, r, `link "Privacy"`)})
	if !strings.Contains(r.Message, "navigated to "+f.base+"/privacy") {
		t.Errorf("an index of the last page: %s", r.Text())
	}
	if r := f.do(t, Action{Name: "snapshot", Page: 99}); r.Code != Invalid {
		t.Errorf("a page past the end: %s", r.Text())
	}
}

// TestTwoComputers: two sessions of an agent run two computers, each
// with its own localhost; the agent's one Chromium moves to the computer
// of the session that acts, and each session sees its own computer's
// page, with a note when its tabs had to go.
func TestTwoComputers(t *testing.T) {
	f := newFixture(t)
	other, err := f.computer.Start(context.Background(), "s2", computer.SessionOptions{Network: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(f.base, "http://"))
	l := listenInside(t, other, mustAtoi(t, port))
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "<title>Second computer</title><p>served by s2")
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	dir := f.computer.SessionDir("s2")
	s2, err := f.b.Session("s2", Env{Computer: other.Process(), Workspace: filepath.Join(dir, "workspace"), Files: filepath.Join(dir, "browser")})
	if err != nil {
		t.Fatal(err)
	}
	url := "http://localhost:" + port + "/login"
	r := f.ok(t, Action{Name: "navigate", URL: url})
	if r.Title != "Sign in" {
		t.Fatalf("s1: %s", r.Text())
	}
	r2, err := s2.Do(context.Background(), Action{Name: "navigate", URL: url})
	if err != nil || !r2.OK() || r2.Title != "Second computer" {
		t.Fatalf("s2: %v %s", err, r2.Text())
	}
	r = f.ok(t, Action{Name: "snapshot"})
	notes := strings.Join(r.Notes, "\n")
	if r.Title != "Sign in" || !strings.Contains(notes, "moved to the computer of session s2") || !strings.Contains(notes, "reopened the page "+url) {
		t.Errorf("s1 after s2 used the browser: %s", r.Text())
	}
}

func mustAtoi(t testing.TB, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLogin fills a form the server checks, by the snapshot's indexes,
// and the session cookie it sets stays out of every text.
func TestLogin(t *testing.T) {
	f := newFixture(t)
	r := f.ok(t, Action{Name: "navigate", URL: f.base + "/login"})
	user, pass := indexOf(t, r, `textbox "Username"`), indexOf(t, r, `textbox "Password"`)
	remember, submit := indexOf(t, r, `checkbox "Remember me"`), indexOf(t, r, `button "Sign in"`)
	f.ok(t, Action{Name: "type", Index: user, Text: "ada"})
	r = f.ok(t, Action{Name: "type", Index: pass, Text: "nope"})
	r = f.ok(t, Action{Name: "click", Index: submit})
	if !strings.Contains(r.Message, "HTTP 401") || !strings.Contains(r.Snapshot.Text, "Wrong password") {
		t.Fatalf("a wrong password: %s", r.Text())
	}
	r = f.ok(t, Action{Name: "back"})
	r = f.ok(t, Action{Name: "snapshot"})
	user, pass = indexOf(t, r, `textbox "Username"`), indexOf(t, r, `textbox "Password"`)
	remember, submit = indexOf(t, r, `checkbox "Remember me"`), indexOf(t, r, `button "Sign in"`)
	f.ok(t, Action{Name: "type", Index: user, Text: "ada"})
	r = f.ok(t, Action{Name: "type", Index: pass, Text: "lovelace"})
	if strings.Contains(r.Text(), "lovelace") {
		t.Errorf("the password shows: %s", r.Text())
	}
	r = f.ok(t, Action{Name: "click", Index: remember})
	if !strings.Contains(r.Snapshot.Text, `checkbox "Remember me" checked`) {
		t.Errorf("the checkbox: %s", r.Text())
	}
	r = f.ok(t, Action{Name: "click", Index: submit})
	if !strings.Contains(r.Message, "navigated to "+f.base+"/account") || !strings.Contains(r.Snapshot.Text, "Welcome, ada") {
		t.Fatalf("after signing in: %s", r.Text())
	}
	r = f.ok(t, Action{Name: "get_cookies"})
	if len(r.Cookies) != 1 || r.Cookies[0].Name != "sid" || r.Cookies[0].Value != "s3cr3t-session-value" {
		t.Fatalf("cookies: %+v", r.Cookies)
	}
	if strings.Contains(r.Text(), "s3cr3t") || !strings.Contains(r.Text(), "sid") {
		t.Errorf("the cookie's value shows, or its name does not: %s", r.Text())
	}
	if env := string(CookieEnv(r.Cookies)); !strings.Contains(env, "export COOKIE_SID='s3cr3t-session-value'") {
		t.Errorf("env file: %s", env)
	}
}

// TestPasswordMasking: passwords, card numbers and one-time codes never
// show, by type, autocomplete, or the look of the value.
func TestPasswordMasking(t *testing.T) {
	f := newFixture(t)
	r := f.ok(t, Action{Name: "navigate", URL: f.base + "/secret"})
	text := r.Text()
	for _, secret := range []string{"hunter2", "4111 1111 1111 1111", "314159", "5555555555554444", "4242 4242 4242 4242"} {
		if strings.Contains(text, secret) {
			t.Errorf("%q shows:\n%s", secret, text)
		}
	}
	if !strings.Contains(text, `value="ada@example.com"`) || !strings.Contains(text, "•••• 4242") || !strings.Contains(text, `textbox "Password" value=(hidden`) {
		t.Errorf("what is not secret should show, and secrets be marked hidden:\n%s", text)
	}
	r = f.ok(t, Action{Name: "get_readable"})
	if strings.Contains(r.Text(), "4242 4242 4242 4242") {
		t.Errorf("readable text shows a card number: %s", r.Text())
	}
}

// TestLateApp: a page that renders late is described once it settled,
// without waiting by hand.
func TestLateApp(t *testing.T) {
	f := newFixture(t)
	r := f.ok(t, Action{Name: "navigate", URL: f.base + "/spa"})
	for _, want := range []string{"## Groceries", "- Apples", "- Cheese", `button "Add item"`} {
		if !strings.Contains(r.Snapshot.Text, want) {
			t.Errorf("%q not in the snapshot of the app:\n%s", want, r.Snapshot.Text)
		}
	}
	r = f.ok(t, Action{Name: "click", Index: indexOf(t, r, `button "Add item"`)})
	if !strings.Contains(r.Message, "the page changed") || !strings.Contains(r.Snapshot.Text, "- Dates") {
		t.Errorf("after adding: %s", r.Text())
	}
}

// TestScrollAndCollect gathers every post of an infinite feed once.
func TestScrollAndCollect(t *testing.T) {
	f := newFixture(t)
	f.ok(t, Action{Name: "navigate", URL: f.base + "/feed"})
	r := f.ok(t, Action{Name: "scroll_and_collect", ItemSelector: "article.post", MaxScrolls: 20})
	if len(r.Items) != 50 {
		t.Fatalf("%d items: %s", len(r.Items), r.Text())
	}
	seen := map[string]bool{}
	for _, it := range r.Items {
		if seen[it] {
			t.Errorf("%q twice", it)
		}
		seen[it] = true
	}
	if !seen["Post number 1"] || !seen["Post number 50"] {
		t.Errorf("items: %v", r.Items)
	}
	// Without a selector, the feed's repeated items are found.
	f.ok(t, Action{Name: "navigate", URL: f.base + "/feed"})
	r = f.ok(t, Action{Name: "scroll_and_collect", MaxScrolls: 3})
	if len(r.Items) < 20 || r.Items[0] != "Post number 1" {
		t.Errorf("guessed items: %s", r.Text())
	}
}

// TestFramesAndShadow: elements in a same-origin iframe and in a shadow
// root are in the snapshot and can be clicked.
func TestFramesAndShadow(t *testing.T) {
	f := newFixture(t)
	r := f.ok(t, Action{Name: "navigate", URL: f.base + "/frames"})
	for _, want := range []string{`iframe "Inner frame":`, "inner waiting", "Shadow text"} {
		if !strings.Contains(r.Snapshot.Text, want) {
			t.Errorf("%q not in:\n%s", want, r.Snapshot.Text)
		}
	}
	r = f.ok(t, Action{Name: "click", Index: indexOf(t, r, `button "Inner button"`)})
	if !strings.Contains(r.Snapshot.Text, "inner clicked") {
		t.Errorf("after the inner click: %s", r.Text())
	}
	r = f.ok(t, Action{Name: "click", Index: indexOf(t, r, `button "Shadow button"`)})
	if !strings.Contains(r.Snapshot.Text, "shadow clicks: 1") {
		t.Errorf("after the shadow click: %s", r.Text())
	}
	// Selectors reach into shadow roots and frames too.
	r = f.ok(t, Action{Name: "click", Selector: "#sb"})
	if !strings.Contains(r.Snapshot.Text, "shadow clicks: 2") {
		t.Errorf("after a click by selector: %s", r.Text())
	}
}

// TestDownload: a download lands in the session's workspace under the
// page's name (made safe), and is reported once.
func TestDownload(t *testing.T) {
	f := newFixture(t)
	r := f.ok(t, Action{Name: "navigate", URL: f.base + "/download"})
	r = f.ok(t, Action{Name: "click", Index: indexOf(t, r, `link "Get the report"`)})
	if len(r.Downloads) != 1 || r.Downloads[0].Path != "/workspace/downloads/report.csv" || r.Downloads[0].Bytes != 8 {
		t.Fatalf("downloads: %+v\n%s", r.Downloads, r.Text())
	}
	b, err := os.ReadFile(filepath.Join(f.env.Workspace, "downloads", "report.csv"))
	if err != nil || string(b) != "a,b\n1,2\n" {
		t.Fatalf("the downloaded file: %q, %v", b, err)
	}
	r = f.ok(t, Action{Name: "snapshot"})
	if len(r.Downloads) != 0 {
		t.Errorf("reported twice: %+v", r.Downloads)
	}
	// Navigating to the file downloads it too, under a new name.
	r = f.ok(t, Action{Name: "navigate", URL: f.base + "/files/report.csv"})
	if len(r.Downloads) != 1 || r.Downloads[0].Name != "report (2).csv" {
		t.Errorf("a second download: %+v\n%s", r.Downloads, r.Text())
	}
	staged, _ := os.ReadDir(f.b.o.folders().downloads)
	if len(staged) != 0 {
		t.Errorf("left in the staging folder: %v", staged)
	}
}

// TestUpload gives a file of the computer to a file input, directly and
// through the chooser a label opens.
func TestUpload(t *testing.T) {
	f := newFixture(t)
	src := filepath.Join(f.env.Workspace, "notes.txt")
	if err := os.WriteFile(src, []byte("hello upload"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := f.ok(t, Action{Name: "navigate", URL: f.base + "/upload"})
	f.ok(t, Action{Name: "upload", Selector: "input[type=file]", Path: src})
	r = f.ok(t, Action{Name: "click", Index: indexOf(t, r, `button "Send"`)})
	if !strings.Contains(r.Snapshot.Text, "Received notes.txt (12 bytes)") {
		t.Fatalf("after sending: %s", r.Text())
	}
	f.site.mu.Lock()
	got := f.site.uploads["notes.txt"]
	f.site.mu.Unlock()
	if got != "hello upload" {
		t.Errorf("the server got %q", got)
	}
	f.ok(t, Action{Name: "back"})
	r = f.ok(t, Action{Name: "snapshot"})
	r = f.ok(t, Action{Name: "upload", Index: indexOf(t, r, `button "Document"`), Path: src})
	if !strings.Contains(r.Message, "Gave notes.txt") {
		t.Errorf("upload through the chooser: %s", r.Text())
	}
}

// TestStaleIndex: an index whose element changed since the snapshot is
// refused with a fresh snapshot, and the element now in its place is
// not clicked.
func TestStaleIndex(t *testing.T) {
	f := newFixture(t)
	r := f.ok(t, Action{Name: "navigate", URL: f.base + "/stale"})
	keep := indexOf(t, r, `button "Keep"`)
	if _, err := f.s.Do(context.Background(), Action{Name: "execute_js", Script: "shuffle.click()"}); err != nil {
		t.Fatal(err)
	}
	r = f.do(t, Action{Name: "click", Index: keep})
	if r.Code != Stale || r.Snapshot == nil || !strings.Contains(r.Snapshot.Text, `button "Delete all"`) || !strings.Contains(r.Message, `button "Keep"`) {
		t.Fatalf("a stale index: %s: %s", r.Code, r.Text())
	}
	time.Sleep(300 * time.Millisecond)
	if n := f.site.clicked("deleteall"); n != 0 {
		t.Fatalf("the element now at the stale index was clicked %d times", n)
	}
	// The fresh snapshot's indexes work.
	f.ok(t, Action{Name: "click", Index: indexOf(t, r, `button "Keep"`)})
	eventually(t, "the server saw the click on Keep", func() bool { return f.site.clicked("keep") == 1 })
	// A page that navigated makes every index stale.
	r = f.ok(t, Action{Name: "snapshot"})
	keep = indexOf(t, r, `button "Keep"`)
	cur := f.s.current()
	f.ok(t, Action{Name: "execute_js", Script: "location.href = '/buttons'"})
	eventually(t, "the page navigates", func() bool { n, _ := cur.ev.counters(); return n != cur.snap.navigations })
	r = f.do(t, Action{Name: "click", Index: keep})
	if r.Code != Stale || !strings.Contains(r.Message, "navigated") {
		t.Errorf("an index of a page that navigated: %s: %s", r.Code, r.Text())
	}
}

// TestSelectorMatchesNothing fails at once with the closest candidates,
// instead of waiting for the selector to appear.
func TestSelectorMatchesNothing(t *testing.T) {
	f := newFixture(t)
	f.ok(t, Action{Name: "navigate", URL: f.base + "/buttons"})
	r := f.do(t, Action{Name: "click", Selector: "#incr", Timeout: 20 * time.Second})
	if r.Code != NotFound || !strings.Contains(r.Message, "#inc") || !strings.Contains(r.Message, `button "Increment"`) {
		t.Errorf("a selector that matches nothing: %s: %s", r.Code, r.Text())
	}
	r = f.do(t, Action{Name: "click", Selector: "button[[", Timeout: 20 * time.Second})
	if r.Code != Invalid {
		t.Errorf("a bad selector: %s: %s", r.Code, r.Text())
	}
	r = f.do(t, Action{Name: "click", Index: 99})
	if r.Code != NotFound && r.Code != Stale {
		t.Errorf("an index out of range: %s: %s", r.Code, r.Text())
	}
}

// TestActions runs the rest of the action set on a local page.
func TestActions(t *testing.T) {
	f := newFixture(t)
	r := f.ok(t, Action{Name: "navigate", URL: f.base + "/buttons"})
	inc := indexOf(t, r, `button "Increment"`)
	r = f.ok(t, Action{Name: "click", Index: inc})
	if !hasLine(r.Snapshot.Text, "1") {
		t.Errorf("after a click: %s", r.Text())
	}
	r = f.ok(t, Action{Name: "click", Selector: "#noop"})
	if !strings.Contains(r.Message, "nothing on the page changed") || r.Snapshot != nil {
		t.Errorf("a click that changes nothing: %s", r.Text())
	}
	r = f.ok(t, Action{Name: "select", Selector: "#size", Value: []string{"Large"}})
	if !strings.Contains(r.Message, `Selected "Large"`) {
		t.Errorf("select: %s", r.Text())
	}
	r = f.do(t, Action{Name: "select", Selector: "#size", Value: []string{"Huge"}})
	if r.Code != NotFound || !strings.Contains(r.Message, `"Medium"`) {
		t.Errorf("a missing option: %s", r.Text())
	}
	r = f.ok(t, Action{Name: "type", Selector: "#q", Text: "bikes", Submit: false})
	r = f.ok(t, Action{Name: "snapshot"})
	if !strings.Contains(r.Snapshot.Text, `textbox "Search" value="bikes"`) {
		t.Errorf("typed text: %s", r.Snapshot.Text)
	}
	f.ok(t, Action{Name: "press", Key: "Control+A", Selector: "#q"})
	f.ok(t, Action{Name: "press", Key: "Backspace"})
	r = f.ok(t, Action{Name: "snapshot"})
	if !hasLine(r.Snapshot.Text, fmt.Sprintf(`[%d] textbox "Search"`, indexOf(t, r, `textbox "Search"`))) {
		t.Errorf("after Control+A and Backspace the field is not empty: %s", r.Snapshot.Text)
	}
	r = f.ok(t, Action{Name: "scroll", Direction: "down", Amount: 1000})
	if !strings.Contains(r.Message, "now at 1000 of") {
		t.Errorf("scroll: %s", r.Text())
	}
	r = f.ok(t, Action{Name: "hover", Index: inc})
	r = f.ok(t, Action{Name: "screenshot"})
	if len(r.Image) < 100 || string(r.Image[1:4]) != "PNG" || !strings.HasPrefix(r.File, "/den/browser/screenshot-") {
		t.Fatalf("screenshot: %d bytes, %s", len(r.Image), r.Text())
	}
	if _, err := os.Stat(filepath.Join(f.env.Files, filepath.Base(r.File))); err != nil {
		t.Errorf("the screenshot was not saved: %v", err)
	}
	r = f.ok(t, Action{Name: "screenshot", FullPage: true})
	if !strings.Contains(r.Message, "full page") {
		t.Errorf("full page: %s", r.Text())
	}
	r = f.ok(t, Action{Name: "pdf"})
	if pdf, err := os.ReadFile(filepath.Join(f.env.Files, filepath.Base(r.File))); err != nil || !strings.HasPrefix(string(pdf), "%PDF") {
		t.Errorf("pdf: %v", err)
	}
	r = f.ok(t, Action{Name: "execute_js", Script: "return {n: +count.textContent, t: document.title}"})
	if r.Value != `{"n":1,"t":"Buttons"}` {
		t.Errorf("execute_js: %s", r.Text())
	}
	r = f.do(t, Action{Name: "execute_js", Script: "throw new Error('boom')"})
	if r.Code != ScriptError || !strings.Contains(r.Message, "boom") {
		t.Errorf("a script that throws: %s", r.Text())
	}
	r = f.ok(t, Action{Name: "set_viewport", Width: 400, Height: 700})
	r = f.ok(t, Action{Name: "execute_js", Script: "return innerWidth"})
	if r.Value != "400" {
		t.Errorf("viewport: %s", r.Value)
	}
	f.ok(t, Action{Name: "set_viewport", Reset: true})
	r = f.ok(t, Action{Name: "reload"})
	r = f.ok(t, Action{Name: "get_readable"})
	r = f.ok(t, Action{Name: "wait_for", Settled: true})
	r = f.do(t, Action{Name: "wait_for", Text: "never there", Timeout: time.Second})
	if r.Code != Timeout || !strings.Contains(r.Message, "did not appear") {
		t.Errorf("wait_for text that never comes: %s: %s", r.Code, r.Text())
	}
	// Tabs.
	r = f.ok(t, Action{Name: "open_tab", URL: f.base + "/login"})
	if r.Tab != 2 || r.Title != "Sign in" {
		t.Errorf("open_tab: %s", r.Text())
	}
	r = f.ok(t, Action{Name: "tabs"})
	if len(r.Tabs) != 2 || !r.Tabs[1].Current {
		t.Errorf("tabs: %+v", r.Tabs)
	}
	r = f.ok(t, Action{Name: "switch_tab", Tab: 1})
	if r.Title != "Buttons" {
		t.Errorf("switch_tab: %s", r.Text())
	}
	r = f.ok(t, Action{Name: "close_tab", Tab: 2})
	r = f.ok(t, Action{Name: "tabs"})
	if len(r.Tabs) != 1 {
		t.Errorf("after close_tab: %+v", r.Tabs)
	}
	r = f.ok(t, Action{Name: "execute_js", Script: "window.open('/login'); return 1"})
	eventually(t, "the popup joins the session", func() bool { return len(f.ok(t, Action{Name: "tabs"}).Tabs) == 2 })
	// Cookies.
	f.ok(t, Action{Name: "set_cookies", Cookies: []Cookie{{Name: "theme", Value: "dark"}}})
	r = f.ok(t, Action{Name: "get_cookies", Keywords: []string{"them"}})
	if len(r.Cookies) != 1 || r.Cookies[0].Value != "dark" || strings.Contains(r.Text(), "dark") {
		t.Errorf("cookies: %+v %s", r.Cookies, r.Text())
	}
	// File URLs are refused: the browser would show its own files.
	r = f.do(t, Action{Name: "navigate", URL: "file:///profile/Default/Cookies"})
	if r.Code != Invalid {
		t.Errorf("a file URL: %s", r.Text())
	}
	r = f.do(t, Action{Name: "navigate", URL: "http://does-not-exist.invalid/"})
	if r.Code != NavFailed || !strings.Contains(r.Message, "net::ERR_NAME_NOT_RESOLVED") {
		t.Errorf("an unknown host: %s: %s", r.Code, r.Text())
	}
}

// TestCovered: an element another covers is not clicked (a click at its
// centre would reach the other), and the result names what covers it.
func TestCovered(t *testing.T) {
	f := newFixture(t)
	r := f.ok(t, Action{Name: "navigate", URL: f.base + "/covered"})
	under := indexOf(t, r, `button "Under"`)
	r = f.do(t, Action{Name: "click", Index: under})
	if r.Code != Failed || !strings.Contains(r.Message, "covers it: div#overlay") {
		t.Errorf("a covered button: %s: %s", r.Code, r.Text())
	}
	r = f.ok(t, Action{Name: "click", Selector: "#close"})
	f.ok(t, Action{Name: "click", Index: indexOf(t, r, `button "Under"`)})
	eventually(t, "the server saw one click on Under", func() bool { return f.site.clicked("under") == 1 })
}

// TestDialogs: the page's dialogs are answered and reported, confirm
// dismissed unless the action says accept.
func TestDialogs(t *testing.T) {
	f := newFixture(t)
	f.ok(t, Action{Name: "navigate", URL: f.base + "/buttons"})
	r := f.ok(t, Action{Name: "execute_js", Script: "return confirm('Delete everything?')"})
	if r.Value != "false" || !strings.Contains(strings.Join(r.Notes, "\n"), `a confirm dialog "Delete everything?"; den dismissed it`) {
		t.Errorf("confirm: %s", r.Text())
	}
	r = f.ok(t, Action{Name: "execute_js", Script: "return confirm('Sure?')", Dialog: "accept"})
	if r.Value != "true" {
		t.Errorf("accepted confirm: %s", r.Text())
	}
	// A page that shows dialogs in a loop does not flood the result.
	r = f.ok(t, Action{Name: "execute_js", Script: "for (let i = 0; i < 30; i++) alert(i); return 'done'"})
	if r.Value != `"done"` || len(r.Notes) != maxNotes+1 || r.Notes[maxNotes] != "10 more notes" {
		t.Errorf("30 alerts: %d notes: %s", len(r.Notes), r.Text())
	}
}

// TestTimeout: an action on a page that never answers ends at its
// timeout with a clear result, and the next action still works.
func TestTimeout(t *testing.T) {
	f := newFixture(t)
	r := f.do(t, Action{Name: "navigate", URL: f.base + "/slow", Timeout: 2 * time.Second})
	if r.Code != Timeout || !strings.Contains(r.Message, "did not answer") || r.Snapshot == nil {
		t.Errorf("a page that never answers: %s: %s", r.Code, r.Text())
	}
	r = f.do(t, Action{Name: "execute_js", Script: "while (true) {}", Timeout: 2 * time.Second})
	if r.Code != Timeout && r.Code != ScriptError {
		t.Errorf("a script that never ends: %s: %s", r.Code, r.Text())
	}
	r = f.ok(t, Action{Name: "navigate", URL: f.base + "/login"})
	if r.Title != "Sign in" {
		t.Errorf("after timeouts: %s", r.Text())
	}
}

// TestCrashedTab: a tab whose renderer crashed is reopened at its page,
// and the result says so.
func TestCrashedTab(t *testing.T) {
	f := newFixture(t)
	f.ok(t, Action{Name: "navigate", URL: f.base + "/login"})
	cur := f.s.current()
	// Page.crash never answers: its renderer is gone.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	cdp.Call(ctx, cur.t, page.Crash, cdp.Empty{})
	eventually(t, "the tab knows it crashed", cur.ev.isCrashed)
	r := f.ok(t, Action{Name: "snapshot"})
	notes := strings.Join(r.Notes, "\n")
	if !strings.Contains(notes, "the tab crashed") || !strings.Contains(notes, "reopened the page "+f.base+"/login") || r.Title != "Sign in" {
		t.Errorf("after a crash: %s", r.Text())
	}
}

// TestBrowserCrash: a Chromium that died is started again, the session's
// page reopened, and the result says so.
func TestBrowserCrash(t *testing.T) {
	f := newFixture(t)
	f.ok(t, Action{Name: "navigate", URL: f.base + "/login"})
	procs := chromiumProcs(t, f.b)
	for _, pid := range procs[1:] {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	eventually(t, "Chromium dies", func() bool { return !running(procs[0]) })
	r := f.ok(t, Action{Name: "snapshot"})
	notes := strings.Join(r.Notes, "\n")
	if !strings.Contains(notes, "stopped unexpectedly") || !strings.Contains(notes, "reopened the page") || r.Title != "Sign in" {
		t.Errorf("after Chromium died: %s", r.Text())
	}
}

// TestTakeover: while the user controls the browser the agent's action
// waits; the user's input reaches the page; afterwards the action says
// the user operated it and shows the page as it is.
func TestTakeover(t *testing.T) {
	f := newFixture(t)
	f.ok(t, Action{Name: "navigate", URL: f.base + "/buttons"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	frames := 0
	for fr, err := range f.s.Screencast(ctx, ScreencastOptions{}) {
		if err != nil {
			t.Fatal(err)
		}
		if len(fr.JPEG) < 3 || fr.JPEG[0] != 0xFF || fr.JPEG[1] != 0xD8 || fr.Width == 0 {
			t.Fatalf("a frame: %d bytes, %v×%v", len(fr.JPEG), fr.Width, fr.Height)
		}
		frames++
		break
	}
	if frames != 1 {
		t.Fatal("no screencast frame")
	}
	if err := f.s.Input(ctx, InputEvent{Kind: "down", X: 10, Y: 10}); !errors.Is(err, ErrNoControl) {
		t.Errorf("input without control: %v", err)
	}
	if err := f.s.TakeControl(); err != nil {
		t.Fatal(err)
	}
	done := make(chan *Result, 1)
	go func() {
		r, err := f.s.Do(context.Background(), Action{Name: "click", Selector: "#noop"})
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	var pos struct{ X, Y float64 }
	f.s.current().eval(ctx, `; (() => { const r = document.getElementById('inc').getBoundingClientRect(); return {X: r.x + r.width/2, Y: r.y + r.height/2}; })()`, &pos)
	for _, kind := range []string{"move", "down", "up"} {
		if err := f.s.Input(ctx, InputEvent{Kind: kind, X: pos.X, Y: pos.Y}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case r := <-done:
		t.Fatalf("the agent's action ran while the user had control: %s", r.Text())
	case <-time.After(300 * time.Millisecond):
	}
	f.s.ReleaseControl()
	r := <-done
	if r.Code != UserControl || !strings.Contains(r.Message, "user operated") || r.Snapshot == nil || !hasLine(r.Snapshot.Text, "1") {
		t.Errorf("after the takeover: %s: %s", r.Code, r.Text())
	}
	r = f.ok(t, Action{Name: "click", Selector: "#noop"})
}

// TestIdle: idle tabs close, an idle Chromium stops, and the next action
// starts it again and says so.
func TestIdle(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Idle = 500 * time.Millisecond; o.TabIdle = 300 * time.Millisecond })
	f.ok(t, Action{Name: "navigate", URL: f.base + "/login"})
	// A browser the user watches is in use.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, err := range f.s.Screencast(ctx, ScreencastOptions{}) {
			if err != nil {
				return
			}
		}
	}()
	time.Sleep(1500 * time.Millisecond)
	if !f.b.Running() || len(f.s.Tabs()) != 1 {
		t.Errorf("a watched browser stopped, or its tab closed: running %v, tabs %v", f.b.Running(), f.s.Tabs())
	}
	cancel()
	<-done
	eventually(t, "the idle browser stops", func() bool { return !f.b.Running() })
	r := f.ok(t, Action{Name: "navigate", URL: f.base + "/buttons"})
	notes := strings.Join(r.Notes, "\n")
	if !strings.Contains(notes, "closed after") {
		t.Errorf("notes after idling: %s", r.Text())
	}
}

// TestMemory measures a running browser.
func TestMemory(t *testing.T) {
	f := newFixture(t)
	if m, err := f.b.Memory(); err != nil || m.Running {
		t.Fatalf("before start: %+v %v", m, err)
	}
	f.ok(t, Action{Name: "navigate", URL: f.base + "/login"})
	m, err := f.b.Memory()
	if err != nil || !m.Running || m.Processes < 2 || m.PSS <= 0 || m.RSS < m.PSS {
		t.Fatalf("memory: %+v %v", m, err)
	}
	t.Logf("one tab: %d processes, RSS %s, PSS %s", m.Processes, sizeText(m.RSS), sizeText(m.PSS))
	// Another process (den doctor) finds the same Chromium.
	if at, err := MemoryAt(f.b.o.Dir); err != nil || !at.Running || at.Processes != m.Processes {
		t.Errorf("MemoryAt: %+v %v, Memory: %+v", at, err, m)
	}
	f.b.Close()
	if m, _ := f.b.Memory(); m.Running {
		t.Errorf("after Close: %+v", m)
	}
	if at, err := MemoryAt(f.b.o.Dir); err != nil || at.Running {
		t.Errorf("MemoryAt after Close: %+v %v", at, err)
	}
}

// TestNoGoroutineLeft: once the browser is closed, none of its
// goroutines (nor chromedp's) runs.
func TestNoGoroutineLeft(t *testing.T) {
	f := newFixture(t)
	f.ok(t, Action{Name: "navigate", URL: f.base + "/download"})
	f.ok(t, Action{Name: "click", Selector: "a"})
	f.ok(t, Action{Name: "execute_js", Script: "window.open('/login'); return 1"})
	ctx, cancel := context.WithCancel(context.Background())
	for range f.s.Screencast(ctx, ScreencastOptions{}) {
		break
	}
	cancel()
	f.b.Close()
	var left string
	for range 100 {
		buf := make([]byte, 1<<20)
		left = ""
		for _, g := range strings.Split(string(buf[:goruntime.Stack(buf, true)]), "\n\n") {
			if (strings.Contains(g, "internal/browser.") || strings.Contains(g, "chromedp")) && !strings.Contains(g, "_test.go") {
				left += g + "\n\n"
			}
		}
		if left == "" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("goroutines left after Close:\n%s", left)
}

// TestDenURLs: den:// URLs load from the session's resolver, with their
// relative links.
func TestDenURLs(t *testing.T) {
	f := newFixture(t)
	files := map[string]string{
		"den://workspace/site/index.html": `<title>Mine</title><link rel=stylesheet href="style.css"><h1>Made by the agent</h1><a href="page2.html">Next</a>`,
		"den://workspace/site/style.css":  `h1 { color: red }`,
		"den://workspace/site/page2.html": `<title>Second</title><p>second page</p>`,
	}
	f.env.Resolve = func(ctx context.Context, u string) (io.ReadCloser, string, error) {
		s, ok := files[u]
		if !ok {
			return nil, "", fmt.Errorf("no such file")
		}
		ct := "text/html"
		if strings.HasSuffix(u, ".css") {
			ct = "text/css"
		}
		return io.NopCloser(strings.NewReader(s)), ct, nil
	}
	if _, err := f.b.Session("s1", f.env); err != nil {
		t.Fatal(err)
	}
	r := f.ok(t, Action{Name: "navigate", URL: "den://workspace/site/index.html"})
	if r.Title != "Mine" || r.URL != "den://workspace/site/index.html" {
		t.Fatalf("a den:// page: %s", r.Text())
	}
	r = f.ok(t, Action{Name: "execute_js", Script: "return getComputedStyle(document.querySelector('h1')).color"})
	if r.Value != `"rgb(255, 0, 0)"` {
		t.Errorf("its stylesheet: %s", r.Value)
	}
	r = f.ok(t, Action{Name: "click", Selector: "a"})
	if r.URL != "den://workspace/site/page2.html" || !strings.Contains(r.Snapshot.Text, "second page") {
		t.Errorf("a relative link: %s", r.Text())
	}
}

// TestClose: closing the browser ends Chromium's processes, and a closed
// session refuses actions.
func TestClose(t *testing.T) {
	f := newFixture(t)
	f.ok(t, Action{Name: "navigate", URL: f.base + "/login"})
	procs := chromiumProcs(t, f.b)
	f.b.Close()
	for _, pid := range procs {
		if running(pid) {
			t.Errorf("process %d outlives the browser", pid)
		}
	}
	if _, err := f.s.Do(context.Background(), Action{Name: "snapshot"}); !errors.Is(err, ErrClosed) {
		t.Errorf("an action after Close: %v", err)
	}
}
