package clitest

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// browser is a headless Chromium on a page of den serve's web face,
// signed in with the login URL.
type browser struct {
	ctx context.Context
	p   *daemonProc
	t   testing.TB
}

// screen sizes the tests run at: a desktop, and a phone with touch.
type screen struct {
	name          string
	width, height int64
	mobile        bool
}

var (
	desktopScreen = screen{"desktop", 1280, 800, false}
	phoneScreen   = screen{"phone", 390, 844, true}
)

func chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium-headless-shell", "chromium"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return sandboxtest.Need(t, "chromium-headless-shell", "chromium-headless-shell")
}

// openBrowser starts Chromium at sc's size and signs it in to p.
func openBrowser(t testing.TB, p *daemonProc, sc screen) *browser {
	t.Helper()
	return openBrowserWith(t, chromium(t), p, sc)
}

// openBrowserWith is openBrowser with the Chromium at exec.
func openBrowserWith(t testing.TB, exec string, p *daemonProc, sc screen) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exec),
		chromedp.NoSandbox, // den's tests run as root; the page is den's own
		chromedp.WindowSize(int(sc.width), int(sc.height)),
		chromedp.Flag("lang", "en-US"),
		chromedp.Flag("enable-precise-memory-info", true), // the heap figure, unrounded
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelC := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() {
		cancelT()
		cancelC()
		cancelA()
	})
	b := &browser{ctx: ctx, p: p, t: t}
	viewport := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
	if sc.mobile {
		viewport = append(viewport, chromedp.EmulateMobile, chromedp.EmulateTouch)
	}
	b.run(
		chromedp.EmulateViewport(sc.width, sc.height, viewport...),
		chromedp.Navigate(p.url+"/?token="+serveToken),
		chromedp.WaitVisible(chromedp.CSS(`#composer, .welcome`)),
	)
	return b
}

func (b *browser) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.shot("failure")
		b.t.Fatalf("browser: %v", err)
	}
}

// shot saves a screenshot as a test artifact under
// $DEN_TEST_ARTIFACTS (default: the test's temp dir, logged).
func (b *browser) shot(name string) {
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return
	}
	dir := os.Getenv("DEN_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "den-web-shots")
	}
	os.MkdirAll(dir, 0o755)
	path := filepath.Join(dir, strings.ReplaceAll(b.t.Name(), "/", "_")+"-"+name+".png")
	if err := os.WriteFile(path, png, 0o644); err == nil {
		b.t.Logf("screenshot %s", path)
	}
}

// text waits until the element sel contains want and returns its text.
func (b *browser) waitText(sel, want string) string {
	b.t.Helper()
	var got string
	deadline := time.Now().Add(60 * time.Second)
	for {
		texts, _ := chromedp.Run(b.ctx, chromedp.Evaluate[[]string](fmt.Sprintf(`[...document.querySelectorAll(%q)].map(e => e.textContent)`, sel)))
		got = strings.Join(texts, "\n")
		if strings.Contains(got, want) {
			return got
		}
		if time.Now().After(deadline) {
			b.shot("timeout")
			b.t.Fatalf("no %q in %s; it says:\n%s", want, sel, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// eval is the value of the JavaScript expression js on the page.
func eval[T any](b *browser, js string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](js))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", js, err)
	}
	return v
}

// exec runs the JavaScript js on the page.
func (b *browser) exec(js string) {
	b.t.Helper()
	eval[any](b, js+"; null")
}

// newChat starts a chat in the app and returns its session id.
func (b *browser) newChat() string {
	b.t.Helper()
	b.run(chromedp.Click(chromedp.CSS(`.welcome .primary`), chromedp.NodeVisible))
	var id string
	deadline := time.Now().Add(10 * time.Second)
	for id == "" && time.Now().Before(deadline) {
		id = eval[string](b, `location.hash.slice(1)`)
		time.Sleep(20 * time.Millisecond)
	}
	if id == "" {
		b.t.Fatal("no session opened")
	}
	b.run(chromedp.WaitVisible(chromedp.CSS(`#composer`)))
	return id
}

// send types text into the composer and presses Send.
func (b *browser) send(text string) {
	b.t.Helper()
	b.run(
		chromedp.SendKeys(chromedp.CSS(`#composer`), text),
		chromedp.Click(chromedp.CSS(`button[aria-label="Send"]`)),
	)
}

func (b *browser) openSidebar(sc screen) {
	if sc.mobile {
		b.run(chromedp.Click(chromedp.CSS(`button.menu`)))
		time.Sleep(300 * time.Millisecond) // the drawer slides in
	}
}

// TestWebChat: at a desktop and a phone size, a prompt sent from the
// page streams its answer, shows a tool card with its command and exit
// code, and the page has no sideways scrolling.
func TestWebChat(t *testing.T) {
	for _, sc := range []screen{desktopScreen, phoneScreen} {
		t.Run(sc.name, func(t *testing.T) {
			d := newDen(t)
			serveConfig(t, d, "")
			answer := "The files are **a.txt** and `b.txt`.\n\n```bash\nls -l /workspace\n```"
			fake := llmtest.NewAnthropic(t,
				llmtest.Turn{Text: "Let me look.", Calls: []llmtest.Call{sh("toolu_1", "touch a.txt b.txt; ls")}},
				llmtest.Turn{Text: answer})
			p := startServe(t, d, fake)
			b := openBrowser(t, p, sc)
			b.newChat()
			b.send("what files are there?")
			b.waitText(".msg.user .bubble", "what files are there?")
			b.waitText(".msg.assistant .md", "The files are a.txt and b.txt.")
			cards := b.waitText("details.tool summary", "touch a.txt b.txt; ls")
			if !strings.Contains(cards, "exit 0") {
				t.Errorf("the tool card lacks its exit code: %q", cards)
			}
			// The card opens to show the output.
			b.run(chromedp.Click(chromedp.CSS(`details.tool summary`)))
			b.waitText("details.tool .tool-output", "a.txt")
			b.waitText(".msg.assistant pre code", "ls -l /workspace")
			wide := eval[bool](b, `document.documentElement.scrollWidth > window.innerWidth`)
			if wide {
				t.Errorf("the page scrolls sideways at %dpx", sc.width)
			}
			unnamed := eval[[]string](b, `[...document.querySelectorAll("button, input, select, textarea")].filter(e => !e.hidden && e.type !== "file" &&
				!(e.getAttribute("aria-label") || e.textContent.trim() || (e.labels && e.labels.length))).map(e => e.outerHTML)`)
			if len(unnamed) > 0 {
				t.Errorf("controls without an accessible name: %v", unnamed)
			}
			if sc.mobile {
				small := eval[[]string](b, `[...document.querySelectorAll(".composer button, .topbar button")].filter(e => {
					const r = e.getBoundingClientRect(); return r.width > 0 && (r.width < 44 || r.height < 44) }).map(e => e.outerHTML)`)
				if len(small) > 0 {
					t.Errorf("touch targets under 44 px: %v", small)
				}
			}
			b.shot("chat")
			b.openSidebar(sc)
			b.waitText(".sessions .title", "what files are there?")
			b.shot("sessions")
		})
	}
}

// TestWebApproval: an approval is answered inline with "Allow once", and
// the turn goes on; the session's badge says it waits meanwhile.
func TestWebApproval(t *testing.T) {
	p, _ := serveWith(t, "[agents.default.permissions]\n\"den-notify\" = \"ask\"\n",
		llmtest.Turn{Calls: []llmtest.Call{sh("toolu_n", "den-notify --title hi from-the-web")}},
		llmtest.Turn{Text: "Notified you."})
	b := openBrowser(t, p, desktopScreen)
	b.newChat()
	b.send("notify me")
	b.waitText(".approval", "den-notify")
	labels := eval[[]string](b, `[...document.querySelectorAll(".approval button")].map(e => e.textContent)`)
	if strings.Join(labels, "|") != "Allow once|Allow for this session|Always allow|Deny" {
		t.Errorf("approval buttons %q", labels)
	}
	b.waitText(".sessions .badge", "approval")
	b.shot("approval")
	b.run(chromedp.Click(chromedp.Search(`//button[text()="Allow once"]`)))
	b.waitText(".msg.assistant .md", "Notified you.")
	// den-notify reached the page.
	b.waitText(".toast", "hi from-the-web")
	left := eval[int](b, `document.querySelectorAll(".approval").length`)
	if left != 0 {
		t.Errorf("%d approvals still shown after the answer", left)
	}
}

// TestWebStopAndQueue: a message sent while a turn runs is shown queued
// and joins the turn; Stop ends a turn.
func TestWebStopAndQueue(t *testing.T) {
	p, _ := serveWith(t, "",
		// The first command waits until the test has seen the second
		// message queued, however slow the machine.
		llmtest.Turn{Text: "Working on it.", Calls: []llmtest.Call{sh("toolu_1", "until [ -e /workspace/go ]; do sleep 0.1; done; echo waited")}},
		llmtest.Turn{Text: "Got your second message too."},
		llmtest.Turn{Text: "Sleeping long.", Calls: []llmtest.Call{sh("toolu_2", "sleep 60")}},
		llmtest.Turn{Text: "never"})
	b := openBrowser(t, p, phoneScreen)
	id := b.newChat()
	b.send("first")
	b.waitText("details.tool summary", "until [ -e /workspace/go ]")
	b.send("and also this")
	b.waitText(".msg.queued", "and also this")
	b.shot("queued")
	if err := os.WriteFile(filepath.Join(p.den.AgentDir("default"), "sessions", id, "workspace", "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	b.waitText(".msg.assistant .md", "Got your second message too.")
	// The queued message joined the turn: it is a message of the
	// session now, not queued.
	b.waitText(".msg.user .bubble", "and also this")
	// (The queued copy goes with the event that delivered it, which may
	// come a moment after the message shows in the history.)
	queued := 1
	for range 100 {
		if queued = eval[int](b, `document.querySelectorAll(".msg.queued").length`); queued == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if queued != 0 {
		t.Errorf("%d messages still shown queued", queued)
	}
	b.send("sleep now")
	b.waitText("details.tool summary", "sleep 60")
	b.run(chromedp.Click(chromedp.CSS(`button[aria-label="Stop"]`)))
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := p.api(t, "GET", "/api/v1/sessions/"+id, nil, http.StatusOK)
		if s["status"] == "interrupted" || s["status"] == "idle" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn did not stop: %v", s["status"])
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop := 1
	for range 100 {
		stop = eval[int](b, `document.querySelectorAll('button[aria-label="Stop"]').length`)
		if stop == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if stop != 0 {
		t.Error("the Stop button stays after the turn stopped")
	}
}

// TestWebReloadMidTurn: a page reloaded while a turn streams re-attaches
// and shows the turn's text exactly once when it ends.
func TestWebReloadMidTurn(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "")
	final := "Here is the summary you asked for, in full."
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Text: "Starting the long part now.", Calls: []llmtest.Call{sh("toolu_1", "sleep 2; echo done")}},
		llmtest.Turn{Text: final})
	p := startServe(t, d, fake)
	b := openBrowser(t, p, desktopScreen)
	b.newChat()
	b.send("summarise")
	b.waitText("details.tool summary", "sleep 2")
	b.run(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#composer`)))
	b.waitText(".msg.assistant .md", final)
	time.Sleep(500 * time.Millisecond)
	all := eval[string](b, `document.querySelector(".messages").textContent`)
	if n := strings.Count(all, final); n != 1 {
		t.Errorf("the final text shows %d times", n)
	}
	if n := strings.Count(all, "Starting the long part now."); n != 1 {
		t.Errorf("the first turn's text shows %d times", n)
	}
	b.shot("reloaded")
}

// TestWebVersions: regenerating an answer makes a second version, and
// the ‹ 2/2 › switcher goes back to the first.
func TestWebVersions(t *testing.T) {
	p, _ := serveWith(t, "", llmtest.Turn{Text: "First answer."}, llmtest.Turn{Text: "Second answer."})
	b := openBrowser(t, p, desktopScreen)
	b.newChat()
	b.send("a question")
	b.waitText(".msg.assistant .md", "First answer.")
	b.run(chromedp.Click(chromedp.Search(`//button[text()="Regenerate"]`)))
	b.waitText(".msg.assistant .md", "Second answer.")
	b.waitText(".msg.assistant .versions", "2/2")
	b.shot("versions")
	b.run(chromedp.Click(chromedp.CSS(`.msg.assistant button[aria-label="Previous version"]`)))
	b.waitText(".msg.assistant .md", "First answer.")
	b.waitText(".msg.assistant .versions", "1/2")
}

// TestWebFilesAndTerminal: a file uploaded in the files panel is listed
// and is in the computer, where the terminal reads it; the terminal
// closed and opened again is the same shell.
func TestWebFilesAndTerminal(t *testing.T) {
	for _, sc := range []screen{desktopScreen, phoneScreen} {
		t.Run(sc.name, func(t *testing.T) {
			d := newDen(t)
			serveConfig(t, d, "")
			p := startServe(t, d, llmtest.NewAnthropic(t))
			b := openBrowser(t, p, sc)
			id := b.newChat()
			local := filepath.Join(t.TempDir(), "notes.txt")
			if err := os.WriteFile(local, []byte("from the phone\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			b.run(chromedp.Click(chromedp.CSS(`button[aria-label="Files"]`)))
			b.waitText(".files-panel", "This folder is empty.")
			b.run(chromedp.SetUploadFiles(chromedp.CSS(`input[aria-label="Upload files"]`), []string{local}))
			b.waitText(".entries .entry-name", "notes.txt")
			b.run(chromedp.Click(chromedp.Search(`//button[.//span[text()="notes.txt"]]`)))
			b.waitText(".preview-text", "from the phone")
			b.shot("files")
			if resp, body := p.raw(t, "GET", "/api/v1/sessions/"+id+"/files/notes.txt", "", nil); resp.StatusCode != http.StatusOK || string(body) != "from the phone\n" {
				t.Errorf("the uploaded file in the computer: %d %q", resp.StatusCode, body)
			}

			b.run(chromedp.Click(chromedp.CSS(`button[aria-label="Close panel"]`)), chromedp.Click(chromedp.CSS(`button[aria-label="Terminal"]`)))
			b.run(chromedp.WaitVisible(chromedp.CSS(`.term .xterm-rows`)))
			b.waitText(".term .xterm-rows", "/workspace#") // the shell's prompt: it reads what is typed now
			b.typeTerminal("cat /workspace/notes.txt; echo pid=$((1000+$$))\r")
			rows := b.waitText(".term .xterm-rows", "pid=10")
			b.shot("terminal")
			pid := shellPid.FindString(rows)
			if !strings.Contains(rows, "from the phone") {
				t.Errorf("the terminal did not read the file:\n%s", rows)
			}
			b.run(chromedp.Click(chromedp.CSS(`button[aria-label="Close panel"]`)))
			b.run(chromedp.Click(chromedp.CSS(`button[aria-label="Terminal"]`)))
			// What the shell prints, not the command line it echoes.
			b.typeTerminal("echo again pid=$((1000+$$))\r")
			rows = b.waitText(".term .xterm-rows", "again pid=10")
			if got := shellPid.FindAllString(rows, -1); pid == "" || len(got) < 2 || got[len(got)-1] != pid {
				t.Errorf("the shell changed when the panel closed: pid %q, then %q", pid, got)
			}
		})
	}
}

// typeTerminal types keys into the terminal as a keyboard does: a key
// down that carries its text, which the browser turns into a keypress
// unless the page took the key down, then a key up. (chromedp's
// KeyEvent sends a separate char event too, which arrives even when the
// page took the key down: xterm.js, which does, would get every
// character twice.)
func (b *browser) typeTerminal(keys string) {
	b.t.Helper()
	b.run(chromedp.Click(chromedp.CSS(`.term .xterm-screen`)), chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		for _, r := range keys {
			for _, k := range kb.Encode(r) {
				switch k.Type {
				case kb.KeyChar:
					continue
				case kb.KeyDown:
					k.Text, k.UnmodifiedText = string(r), string(r)
				}
				if _, err := cdp.Call(ctx, t, input.DispatchKeyEvent, *k); err != nil {
					return err
				}
			}
		}
		return nil
	}))
}

// shellPid finds what echo pid=$((1000+$$)) prints.
var shellPid = regexp.MustCompile(`pid=1\d{3}`)

// TestWebAttachments: files picked in the composer go to the computer's
// /den/attachments with the message; audio plays inline, an image is
// shown, another file is a link, and the model is told where they are.
func TestWebAttachments(t *testing.T) {
	p, fake := serveWith(t, "", llmtest.Turn{Text: "I have them."})
	b := openBrowser(t, p, phoneScreen)
	id := b.newChat()
	dir := t.TempDir()
	files := map[string][]byte{"memo.ogg": []byte("OggS\x00\x02fake-audio"), "square.png": redSquarePNG, "report.csv": []byte("a,b\n1,2\n")}
	var paths []string
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	b.run(chromedp.SetUploadFiles(chromedp.CSS(`.composer input[type="file"]`), paths))
	b.waitText(".composer .files", "report.csv")
	b.send("here are my files")
	b.waitText(".msg.assistant .md", "I have them.")
	b.waitText(".msg.user .bubble", "here are my files")
	b.waitText(".msg.user .attached-file", "report.csv")
	if n := eval[int](b, `document.querySelectorAll(".msg.user audio.attached").length`); n != 1 {
		t.Errorf("%d audio players", n)
	}
	if n := eval[int](b, `document.querySelectorAll(".msg.user img.attached").length`); n != 1 {
		t.Errorf("%d images", n)
	}
	if bubble := eval[string](b, `document.querySelector(".msg.user .bubble").textContent`); strings.Contains(bubble, "[attached:") {
		t.Errorf("the bubble shows den's attachment lines: %q", bubble)
	}
	b.shot("attachments")
	last := fake.Requests()[len(fake.Requests())-1].Body
	for name := range files {
		if !strings.Contains(string(last), "/den/attachments/"+name) {
			t.Errorf("the model was not told of %s", name)
		}
	}
	if resp, body := p.raw(t, "GET", "/api/v1/sessions/"+id+"/attachments/report.csv", "", nil); resp.StatusCode != http.StatusOK || string(body) != "a,b\n1,2\n" {
		t.Errorf("the attachment in the computer: %d %q", resp.StatusCode, body)
	}
}

// TestWebLocation: den-location answers not_available while no browser
// has den open, and the location of the browser once one has.
func TestWebLocation(t *testing.T) {
	p, fake := serveWith(t, "[agents.default.permissions]\n\"den-location\" = \"allow\"\n",
		llmtest.Turn{Calls: []llmtest.Call{sh("toolu_1", "den-location --timeout 5s")}},
		llmtest.Turn{Text: "No browser."},
		llmtest.Turn{Calls: []llmtest.Call{sh("toolu_2", "den-location")}},
		llmtest.Turn{Text: "You are in Berlin."})
	id := p.api(t, "POST", "/api/v1/sessions", map[string]any{"agent": "default"}, http.StatusCreated)["id"].(string)
	sent := p.api(t, "POST", "/api/v1/sessions/"+id+"/messages", map[string]any{"text": "where am I?"}, http.StatusAccepted)
	waitIdle(t, p, id, sent["message_id"].(string))
	if body := string(fake.Requests()[1].Body); !strings.Contains(body, "not_available") || !strings.Contains(body, "no browser with den's web face is connected") {
		t.Errorf("den-location without a browser: %s", truncateBytes([]byte(body), 800))
	}

	b := openBrowser(t, p, phoneScreen)
	lat, lon, acc := 52.52, 13.405, 12.0
	b.run(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		if _, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
			Permission: &cdpbrowser.PermissionDescriptor{Name: "geolocation"}, Setting: cdpbrowser.PermissionSettingGranted, Origin: p.url}); err != nil {
			return err
		}
		_, err := cdp.Call(ctx, tg, emulation.SetGeolocationOverride, emulation.SetGeolocationOverrideParams{Latitude: &lat, Longitude: &lon, Accuracy: &acc})
		return err
	}))
	b.run(chromedp.Navigate(p.url + "/#" + id))
	b.waitText(".msg.assistant .md", "No browser.")
	b.send("and now?")
	b.waitText(".msg.assistant .md", "You are in Berlin.")
	body := string(fake.Requests()[3].Body)
	if !strings.Contains(body, `\"latitude\": 52.52`) || !strings.Contains(body, `\"longitude\": 13.405`) {
		t.Errorf("den-location with a browser: %s", truncateBytes([]byte(body), 1200))
	}
}

// TestWebClipboard: den-clipboard writes and reads the clipboard of the
// browser that has den open and in front.
func TestWebClipboard(t *testing.T) {
	p, fake := serveWith(t, "[agents.default.permissions]\n\"den-clipboard\" = \"allow\"\n",
		llmtest.Turn{Calls: []llmtest.Call{sh("toolu_1", "den-clipboard read -q && den-clipboard write copied-by-den -q")}},
		llmtest.Turn{Text: "Copied."})
	b := openBrowser(t, p, phoneScreen)
	for _, name := range []string{"clipboard-read", "clipboard-write"} {
		b.run(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
				Permission: &cdpbrowser.PermissionDescriptor{Name: name}, Setting: cdpbrowser.PermissionSettingGranted, Origin: p.url})
			return err
		}))
	}
	b.newChat()
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[any](`navigator.clipboard.writeText("from-the-phone")`, chromedp.EvalAwaitPromise)); err != nil {
		t.Fatal(err)
	}
	b.send("copy something")
	b.waitText(".msg.assistant .md", "Copied.")
	if got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise)); err != nil || got != "copied-by-den" {
		t.Errorf("the browser's clipboard holds %q (%v)", got, err)
	}
	body := string(fake.Requests()[1].Body)
	if !strings.Contains(body, "from-the-phone") || strings.Contains(body, "not_available") {
		t.Errorf("den-clipboard: %s", truncateBytes([]byte(body), 1500))
	}
}

// TestWebOffload: a tool card whose output was capped links to the full
// output, which den serves from the computer.
func TestWebOffload(t *testing.T) {
	p, _ := serveWith(t, "",
		llmtest.Turn{Calls: []llmtest.Call{sh("toolu_1", "seq 1 40000")}},
		llmtest.Turn{Text: "Counted."})
	b := openBrowser(t, p, desktopScreen)
	b.newChat()
	b.send("count")
	b.waitText(".msg.assistant .md", "Counted.")
	b.run(chromedp.Click(chromedp.CSS(`details.tool summary`)))
	b.waitText("details.tool .offload", "/den/offloads/")
	full, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`fetch(document.querySelector("details.tool .offload a").href).then(r => r.text())`, chromedp.EvalAwaitPromise))
	if err != nil || !strings.HasSuffix(full, "39999\n40000\n") || !strings.HasPrefix(full, "1\n2\n") {
		t.Errorf("the full output: %v, %d bytes", err, len(full))
	}
}

// serveWith starts den serve on a fresh den whose config holds extra
// (besides the busybox computer), talking to a fake Anthropic API that
// answers turns.
func serveWith(t *testing.T, extra string, turns ...llmtest.Turn) (*daemonProc, *llmtest.Server) {
	t.Helper()
	d := newDen(t)
	serveConfig(t, d, extra)
	fake := llmtest.NewAnthropic(t, turns...)
	return startServe(t, d, fake), fake
}
