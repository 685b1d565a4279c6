package clitest

import (
	"bytes"
	"context"
	"encoding/base64"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/dom"
	"github.com/chromedp/chromedp"

	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// TestRunResourceHostPath: den run's answer names a file by its den://
// URL, which the file tool gave the model, and den prints where the
// file is on this machine next to it; --json prints the answer as the
// model wrote it.
func TestRunResourceHostPath(t *testing.T) {
	sandboxtest.Need(t, "bwrap", "bubblewrap")
	sandboxtest.Need(t, "busybox", "busybox-static")
	answer := "The report is at den://workspace/out/report.md."
	turns := []llmtest.Turn{
		{Calls: []llmtest.Call{call("toolu_1", "file_write", `{"path":"out/report.md","content":"# Report\n"}`)}},
		{Text: answer},
	}
	fake := llmtest.NewAnthropic(t, append(turns, turns...)...)
	d := newDen(t)
	env := []string{"ANTHROPIC_API_KEY=sk-test", "ANTHROPIC_BASE_URL=" + fake.URL}
	cmd := exec.Command(d.Bin, "run", "--rootfs", "busybox", "--model", "anthropic/claude-sonnet-4-5", "write the report")
	cmd.Env = append(d.Env(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("den run: %v\n%s\n%s", err, out.String(), errb.String())
	}
	if body := string(fake.Requests()[1].Body); !strings.Contains(body, `den://workspace/out/report.md`) {
		t.Errorf("the file tool's result did not give the URL: %s", truncateBytes([]byte(body), 1500))
	}
	sessions := filepath.Join(d.AgentDir("default"), "sessions")
	m := regexp.MustCompile(`^The report is at den://workspace/out/report\.md \((` + regexp.QuoteMeta(sessions) + `/[^/]+/workspace/out/report\.md)\)\.\n$`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("den run printed %q; want the answer with the report's path under %s", out.String(), sessions)
	}
	if got := readFile(t, m[1]); got != "# Report\n" {
		t.Errorf("the printed path %s holds %q", m[1], got)
	}

	events, r := runJSON(t, d, env, "--rootfs", "busybox", "--model", "anthropic/claude-sonnet-4-5", "write it again")
	if done := ofType(events, "done"); r.Code != 0 || len(done) != 1 || done[0]["text"] != answer {
		t.Errorf("--json: %v (%s)", done, r)
	}
}

// chartPNG is a w×h PNG, blue.
func chartPNG(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.Draw(img, img.Bounds(), &image.Uniform{color.RGBA{30, 90, 200, 255}}, image.Point{}, draw.Src)
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// hostilePage is an HTML page whose script, should it run, says so in
// its own page, in its parent's, and to its parent by postMessage.
const hostilePage = `<!doctype html><html><head><title>page</title></head><body>
<p id="status">static page</p>
<script>
document.getElementById("status").textContent = "script ran";
document.body.dataset.ran = "yes";
try { parent.document.body.dataset.pwned = "yes"; } catch (e) {}
try { parent.postMessage("script ran", "*"); } catch (e) {}
</script></body></html>`

// TestWebResourcePreviews: the model makes a chart and an HTML page in
// /workspace and answers with their den:// URLs. The chart shows under
// the answer, the page in a sandboxed frame, served by den, where its
// script does not run (it changes neither its own page nor den's, and
// sends nothing); the links point at den, and the chart's opens the
// files panel.
func TestWebResourcePreviews(t *testing.T) {
	png := chartPNG(t, 64, 48)
	answer := "Here is the chart: den://workspace/chart.png\n\nand [the page](den://workspace/page.html)."
	p, fake := serveWith(t, "",
		llmtest.Turn{Calls: []llmtest.Call{
			sh("toolu_1", "echo "+base64.StdEncoding.EncodeToString(png)+" | base64 -d > /workspace/chart.png"),
			call("toolu_2", "file_write", `{"path":"page.html","content":`+quoteJSON(hostilePage)+`}`),
		}},
		llmtest.Turn{Text: answer})
	b := openBrowser(t, p, desktopScreen)
	b.newChat()
	b.exec(`window.__messages = []; addEventListener("message", (e) => window.__messages.push(String(e.data)))`)
	b.send("make a chart and a page")
	b.waitText(".msg.assistant .md", "Here is the chart")
	if body := string(fake.Requests()[1].Body); !strings.Contains(body, "den://workspace/page.html") {
		t.Errorf("file_write's result did not give the page's URL: %s", truncateBytes([]byte(body), 1500))
	}

	// The chart: an image from den's resources route, loaded whole.
	b.waitTrue(`(() => { const i = document.querySelector(".msg.assistant .den-preview-image img"); return !!i && i.complete && i.naturalWidth === 64 && i.naturalHeight === 48; })()`)
	src := eval[string](b, `document.querySelector(".msg.assistant .den-preview-image img").getAttribute("src")`)
	if !strings.HasPrefix(src, "/api/v1/resources?url=den%3A%2F%2Fworkspace%2Fchart.png&session=") {
		t.Errorf("the chart comes from %q", src)
	}

	// The page: a frame with no permission at all, showing den's copy.
	frame := `document.querySelector(".msg.assistant .den-preview-html iframe")`
	if sb := eval[string](b, frame+`.getAttribute("sandbox") ?? "(none)"`); sb != "" {
		t.Errorf("the page's frame has sandbox=%q, want it empty (nothing allowed)", sb)
	}
	if n := eval[int](b, `document.querySelectorAll(".msg.assistant iframe").length`); n != 1 {
		t.Errorf("%d frames, want the page's only", n)
	}
	status := frameText(t, b, "page.html", "#status")
	b.shot("previews")
	if status != "static page" {
		t.Errorf("the page's own text is %q: its script ran, or it did not load", status)
	}
	if ran := frameText(t, b, "page.html", "body[data-ran]"); ran != "" {
		t.Errorf("the page's script marked its body")
	}
	if pwned := eval[bool](b, `document.body.dataset.pwned === "yes"`); pwned {
		t.Error("the page's script changed den's page")
	}
	if msgs := eval[[]string](b, `window.__messages`); len(msgs) != 0 {
		t.Errorf("the page's script sent %q", msgs)
	}

	// Links: the chart's opens the files panel on it, the page's too.
	links := eval[[]string](b, `[...document.querySelectorAll(".msg.assistant .md a")].map(a => a.getAttribute("data-den-path") + " " + a.textContent)`)
	if strings.Join(links, "|") != "/workspace/chart.png den://workspace/chart.png|/workspace/page.html the page" {
		t.Errorf("links: %q", links)
	}
	// (A click by script: frameText's DOM.getDocument renewed the node
	// ids chromedp's own queries keep.)
	b.exec(`document.querySelector('.msg.assistant .md a[data-den-path="/workspace/chart.png"]').click()`)
	b.waitTrue(`(() => { const i = document.querySelector(".files-panel .preview-image"); return !!i && i.complete && i.naturalWidth === 64; })()`)
	b.waitText(".files-panel .entry-name, .files-panel .preview-name", "chart.png")
	b.shot("files")
	if banner := eval[string](b, `[...document.querySelectorAll(".banner.error")].map(e => e.textContent).join("|")`); banner != "" {
		t.Errorf("opening the chart's link shows an error: %s", banner)
	}
}

// TestWebResourceSanitizer: the Markdown renderer keeps den:// links and
// images, and only those that parse, and still drops javascript:,
// vbscript:, data: links and every other scheme DOMPurify drops.
func TestWebResourceSanitizer(t *testing.T) {
	p, _ := serveWith(t, "")
	b := openBrowser(t, p, desktopScreen)
	render := func(md string) string {
		t.Helper()
		js := `import("/app/markdown.js").then((m) => m.render(` + quoteJSON(md) + `))`
		out, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("render %q: %v", md, err)
		}
		return out
	}
	for _, tt := range []struct {
		md      string
		want    []string
		dropped []string
	}{
		{"[r](den://workspace/report.md)", []string{`data-den-url="den://workspace/report.md"`}, []string{"href="}},
		{"![c](den://workspace/chart.png)", []string{`data-den-url="den://workspace/chart.png"`}, []string{"src="}},
		{"<den://memory/GLOBAL.md>", []string{`data-den-url="den://memory/GLOBAL.md"`}, nil},
		{"[x](javascript:alert(1))", nil, []string{"javascript:", "href"}},
		{"[x](JaVaScRiPt:alert(1))", nil, []string{"alert", "href"}},
		{"<a href=\"javascript:alert(1)\">x</a>", nil, []string{"javascript:", "href"}},
		{"<a href=\"vbscript:msgbox(1)\">x</a>", nil, []string{"vbscript", "href"}},
		{"<a href=\"data:text/html,<script>alert(1)</script>\">x</a>", nil, []string{"data:", "href"}},
		{"<a href=\"file:///etc/shadow\">x</a>", nil, []string{"file:", "href"}},
		{"<a href=\"den:javascript:alert(1)\">x</a>", nil, []string{"javascript", "href"}},
		{"<img src=\"javascript:alert(1)\">", nil, []string{"javascript", "src="}},
		{"<img src=x onerror=alert(1)>", nil, []string{"onerror"}},
		{"[up](den://workspace/../../etc/shadow)", nil, []string{"den-url", "href"}},
		{"[up](den://workspace/%2e%2e/x)", nil, []string{"den-url", "href"}},
		{"[root](den://root/.ssh/id_rsa)", nil, []string{"den-url", "href"}},
		{"<iframe src=\"den://workspace/page.html\"></iframe>", nil, []string{"iframe"}},
		{"<video src=\"den://workspace/a.mp4\"></video>", nil, []string{"den://"}},
		{"<a data-den-url=\"den://workspace/x\" data-den-path=\"/etc/passwd\">x</a>", nil, []string{"data-den"}},
		{"[web](https://example.com/a)", []string{`href="https://example.com/a"`, `rel="noopener noreferrer"`}, nil},
	} {
		out := render(tt.md)
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("render(%q) = %q, want %s in it", tt.md, out, w)
			}
		}
		for _, d := range tt.dropped {
			if strings.Contains(out, d) {
				t.Errorf("render(%q) = %q, which keeps %s", tt.md, out, d)
			}
		}
	}
}

// TestWebResourceLinks: rendered for a session, den:// URLs become links
// to den's resources route (the workspace's to the files panel), images
// show in place, and the files are previewed under the text by kind;
// URLs that do not parse stay text.
func TestWebResourceLinks(t *testing.T) {
	p, _ := serveWith(t, "")
	b := openBrowser(t, p, desktopScreen)
	shown := func(md string) string {
		t.Helper()
		js := `import("/app/markdown.js").then((m) => { const d = document.createElement("div"); d.innerHTML = m.render(` + quoteJSON(md) +
			`); m.linkPaths(d); m.resources(d, "S1"); return d.innerHTML; })`
		out, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("render %q: %v", md, err)
		}
		return out
	}
	route := func(u string) string { return "/api/v1/resources?url=" + url.QueryEscape(u) + "&amp;session=S1" }
	for _, tt := range []struct {
		md         string
		figures    int // previews under the text
		want, none []string
	}{
		{"![chart](den://workspace/chart.png)", 0, []string{`src="` + route("den://workspace/chart.png") + `&amp;inline=1"`}, nil},
		{"![doc](den://shared/doc.pdf)", 1, []string{`<a data-den-url="den://shared/doc.pdf" href="` + route("den://shared/doc.pdf") + `" download="doc.pdf">doc</a>`, `<iframe src="` + route("den://shared/doc.pdf") + `&amp;inline=1"`}, []string{"sandbox"}},
		{"see den://memory/notes.md.", 0, []string{`<a data-den-url="den://memory/notes.md" href="` + route("den://memory/notes.md") + `" download="notes.md">den://memory/notes.md</a>.`}, nil},
		{"`den://workspace/out/a%20b.txt`", 0, []string{`data-den-path="/workspace/out/a b.txt"`, `href="#"`}, nil},
		{"den://workspace/a.mp3 den://browser/b.webm den://workspace/c.svg den://workspace/d.html", 4, []string{
			`<audio controls="" preload="metadata" src="` + route("den://workspace/a.mp3") + `"`,
			`<video controls="" preload="metadata" src="` + route("den://browser/b.webm") + `"`,
			`<img src="` + route("den://workspace/c.svg") + `&amp;inline=1" alt="c.svg"`,
			`<iframe sandbox="" src="` + route("den://workspace/d.html") + `&amp;inline=1"`,
		}, nil},
		{"twice den://workspace/a.png and [again](den://workspace/a.png)", 1, []string{`den-preview-image`}, nil},
		{"den://workspace/../../etc/shadow and den://root/x and den://workspace//x", 0, nil, []string{"<a"}},
	} {
		out := shown(tt.md)
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%q shows as\n%s\nwithout %s", tt.md, out, w)
			}
		}
		for _, n := range tt.none {
			if strings.Contains(out, n) {
				t.Errorf("%q shows as\n%s\nwith %s", tt.md, out, n)
			}
		}
		if n := strings.Count(out, "<figure"); n != tt.figures {
			t.Errorf("%q: %d previews, want %d:\n%s", tt.md, n, tt.figures, out)
		}
	}
}

// waitTrue waits until the JavaScript expression js is true on the
// page.
func (b *browser) waitTrue(js string) {
	b.t.Helper()
	waitFor(b.t.(*testing.T), js, func() bool { return eval[bool](b, js) })
}

// frameText is the text of the element sel in the frame whose document's
// URL has urlPart in it, "" when it has no such element. It reads the
// frame's DOM through the DevTools protocol (no script of the page's
// or of the frame's runs), in the page's process or in the frame's
// own, and waits up to 30 s for the frame's body.
func frameText(t *testing.T, b *browser, urlPart, sel string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		text, found, err := frameQuery(b, urlPart, sel)
		if err != nil {
			t.Fatalf("read the frame %s: %v", urlPart, err)
		}
		if found {
			return text
		}
		if time.Now().After(deadline) {
			b.shot("timeout")
			t.Fatalf("no frame with %s and a body", urlPart)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// frameQuery looks for the frame in the page's DOM, then among the
// browser's targets (a sandboxed frame may run in a process of its
// own); found says the frame's body was there.
func frameQuery(b *browser, urlPart, sel string) (text string, found bool, err error) {
	read := func(ctx context.Context, t *chromedp.Target) error {
		depth, pierce := int64(-1), true
		doc, err := cdp.Call(ctx, t, dom.GetDocument, dom.GetDocumentParams{Depth: &depth, Pierce: &pierce})
		if err != nil {
			return err
		}
		frame := findDocument(doc.Root, urlPart)
		if frame == nil {
			return nil
		}
		if body, err := cdp.Call(ctx, t, dom.QuerySelector, dom.QuerySelectorParams{NodeID: frame.NodeID, Selector: "body"}); err != nil || body.NodeID == 0 {
			return nil
		}
		found = true
		el, err := cdp.Call(ctx, t, dom.QuerySelector, dom.QuerySelectorParams{NodeID: frame.NodeID, Selector: sel})
		if err != nil || el.NodeID == 0 {
			return nil
		}
		html, err := cdp.Call(ctx, t, dom.GetOuterHTML, dom.GetOuterHTMLParams{NodeID: el.NodeID})
		if err != nil {
			return err
		}
		text = strings.TrimSpace(tags.ReplaceAllString(html.OuterHTML, ""))
		return nil
	}
	if err := chromedp.Do(b.ctx, chromedp.Func(read)); err != nil || found {
		return text, found, err
	}
	targets, err := chromedp.Targets(b.ctx)
	if err != nil {
		return "", false, err
	}
	for _, tg := range targets {
		if tg.Type != "iframe" || !strings.Contains(tg.URL, urlPart) {
			continue
		}
		ctx, cancel := chromedp.NewContext(b.ctx, chromedp.WithTargetID(tg.TargetID))
		defer cancel()
		return text, found, chromedp.Do(ctx, chromedp.Func(read))
	}
	return "", false, nil
}

// tags finds HTML tags, to read an element's text from its markup.
var tags = regexp.MustCompile(`<[^>]*>`)

// findDocument is the document beneath n whose URL has urlPart in it.
func findDocument(n *cdp.Node, urlPart string) *cdp.Node {
	if n == nil {
		return nil
	}
	if n.NodeType == 9 && // Node.DOCUMENT_NODE
		strings.Contains(n.DocumentURL, urlPart) {
		return n
	}
	if d := findDocument(n.ContentDocument, urlPart); d != nil {
		return d
	}
	for _, c := range n.Children {
		if d := findDocument(c, urlPart); d != nil {
			return d
		}
	}
	return nil
}
