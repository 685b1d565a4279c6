package clitest

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"den.dev/den/internal/llm/llmtest"
)

// takeoverPage is the page the fake model opens: a button over the top
// left quarter, a field below it, each renaming the page when used, and
// a page long enough to scroll, which renames it too.
const takeoverPage = `<!doctype html><title>Test page</title><style>
body { height: 3000px; margin: 0; background: linear-gradient(#fff, #9cf); }
button, input { position: fixed; left: 0; width: 50vw; font-size: 40px; }
button { top: 0; height: 50vh; }
input { top: 60vh; height: 20vh; }
</style>
<button onclick="document.title='Pressed'; this.textContent='Pressed'">Press me</button>
<input aria-label="Name" oninput="document.title='Typed ' + this.value">
<script>onscroll = () => { document.title = 'Scrolled' }</script>`

// browserUse is a call of the model's browser tool.
func browserUse(id, input string) llmtest.Call {
	return call(id, "browser_use", input)
}

// TestWebBrowser: at a desktop and a phone size, the Browser panel
// (opened from the top bar, or from a browser_use card) shows the page
// the agent opened; taken over, a click or a tap on the picture presses
// the page's button, what is typed goes into the page's field, the
// wheel or a finger scrolls it, and the agent waits; given back, the
// agent's next action is told the user operated the page and sees it
// as the user left it.
func TestWebBrowser(t *testing.T) {
	page := "data:text/html;base64," + base64.StdEncoding.EncodeToString([]byte(takeoverPage))
	for _, sc := range []screen{desktopScreen, phoneScreen} {
		t.Run(sc.name, func(t *testing.T) {
			p, fake := serveWith(t, "",
				llmtest.Turn{Text: "Opening it.", Calls: []llmtest.Call{browserUse("toolu_1", `{"action":"navigate","url":"`+page+`"}`)}},
				llmtest.Turn{Text: "The page is open."},
				llmtest.Turn{Calls: []llmtest.Call{browserUse("toolu_2", `{"action":"snapshot"}`)}},
				llmtest.Turn{Text: "I see what you did."})
			b := openBrowser(t, p, sc)
			// The panel's handlers must not throw.
			b.exec(`window.denErrors = []; addEventListener("error", (e) => denErrors.push(e.message))`)
			id := b.newChat()
			if n := eval[int](b, `document.querySelectorAll('.topbar button[aria-label="Browser"]').length`); n != 0 {
				t.Error("a Browser button before the agent used its browser")
			}
			b.send("open the test page")
			b.waitText(".msg.assistant .md", "The page is open.")
			b.run(chromedp.WaitVisible(chromedp.CSS(`.topbar button[aria-label="Browser"]`)))
			if sc.mobile {
				b.run(chromedp.Click(chromedp.CSS(`details.tool summary`)), chromedp.Click(chromedp.CSS(`details.tool button[data-den-browser]`)))
			} else {
				b.run(chromedp.Click(chromedp.CSS(`.topbar button[aria-label="Browser"]`)))
			}
			b.waitText(".browser-title", "Test page")
			b.waitText(".browser-url", "data:text/html")
			b.waitFor("a frame on the page", `(() => { const i = document.querySelector(".browser-screen img"); return !!i && i.complete && i.naturalWidth > 0 && i.naturalHeight > 0 })()`)
			if alt := eval[string](b, `document.querySelector(".browser-screen img").alt`); !strings.Contains(alt, "Test page") {
				t.Errorf("the picture's alt text %q does not name the page", alt)
			}
			if wide := eval[bool](b, `document.documentElement.scrollWidth > window.innerWidth`); wide {
				t.Errorf("the page scrolls sideways at %dpx", sc.width)
			}
			if out := eval[bool](b, `(() => { const i = document.querySelector(".browser-screen img").getBoundingClientRect(); return i.right > innerWidth + 1 || i.bottom > innerHeight + 1 })()`); out {
				t.Error("the picture does not fit the screen")
			}
			b.shot("browser")

			b.run(chromedp.Click(chromedp.Search(`//button[text()="Take over"]`)))
			b.waitText(".browser-note", "the agent waits")
			if st := p.api(t, "GET", "/api/v1/sessions/"+id+"/browser", nil, http.StatusOK); st["control"] != true {
				t.Errorf("the state after Take over: %v", st)
			}
			// The button, then the field, by the picture.
			b.tapPicture(sc, 0.25, 0.25)
			b.waitText(".browser-title", "Pressed")
			b.tapPicture(sc, 0.25, 0.7)
			b.typeIntoPage(sc, "hiq")
			b.waitText(".browser-title", "Typed hiq")
			b.typeIntoPage(sc, kb.Backspace)
			b.waitText(".browser-title", "Typed hi")
			b.scrollPicture(sc)
			b.waitText(".browser-title", "Scrolled")
			b.shot("taken-over")
			if errs := eval[[]string](b, `denErrors`); len(errs) > 0 {
				t.Errorf("errors on the page: %q", errs)
			}

			b.run(chromedp.Click(chromedp.Search(`//button[text()="Give back"]`)))
			b.run(chromedp.WaitVisible(chromedp.Search(`//button[text()="Take over"]`)))
			if st := p.api(t, "GET", "/api/v1/sessions/"+id+"/browser", nil, http.StatusOK); st["control"] != false {
				t.Errorf("the state after Give back: %v", st)
			}
			// Closing the panel while holding the browser gives it back
			// too.
			b.run(chromedp.Click(chromedp.Search(`//button[text()="Take over"]`)))
			b.run(chromedp.WaitVisible(chromedp.Search(`//button[text()="Give back"]`)))
			b.run(chromedp.Click(chromedp.CSS(`button[aria-label="Close panel"]`)))
			deadline := time.Now().Add(30 * time.Second)
			for p.api(t, "GET", "/api/v1/sessions/"+id+"/browser", nil, http.StatusOK)["control"] != false {
				if time.Now().After(deadline) {
					t.Fatal("the browser stays taken over after its panel closed")
				}
				time.Sleep(50 * time.Millisecond)
			}
			b.send("what now?")
			b.waitText(".msg.assistant .md", "I see what you did.")
			reqs := fake.Requests()
			result := string(reqs[len(reqs)-1].Body)
			if !strings.Contains(result, "The user operated the browser") || !strings.Contains(result, `button \"Pressed\"`) || !strings.Contains(result, `value=\"hi\"`) {
				t.Errorf("the agent's next action did not see what the user did: %s", truncateBytes([]byte(result), 3000))
			}
		})
	}
}

// waitFor polls the JavaScript expression js until it is true.
func (b *browser) waitFor(what, js string) {
	b.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !eval[bool](b, js) {
		if time.Now().After(deadline) {
			b.shot("timeout")
			b.t.Fatalf("%s: still not so", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// picturePoint is the point at fractions fx, fy of the browser's
// picture, in the den page's CSS pixels.
func (b *browser) picturePoint(fx, fy float64) (x, y float64) {
	b.t.Helper()
	r := eval[[]float64](b, `(() => { const r = document.querySelector(".browser-screen img").getBoundingClientRect(); return [r.left, r.top, r.width, r.height] })()`)
	return r[0] + fx*r[2], r[1] + fy*r[3]
}

// tapPicture clicks (a desktop) or taps (a phone) the picture at
// fractions fx, fy of its size.
func (b *browser) tapPicture(sc screen, fx, fy float64) {
	b.t.Helper()
	x, y := b.picturePoint(fx, fy)
	if sc.mobile {
		b.run(chromedp.TapXY(x, y))
	} else {
		b.run(chromedp.MouseClickXY(x, y))
	}
}

// typeIntoPage types into the panel's typing field: key by key on a
// desktop; on a phone as its keyboard does, text as inserted text and
// Backspace as a key.
func (b *browser) typeIntoPage(sc screen, text string) {
	b.t.Helper()
	if !sc.mobile || text == kb.Backspace {
		b.run(chromedp.SendKeys(chromedp.CSS(`.browser-keys`), text))
		return
	}
	b.run(chromedp.Click(chromedp.CSS(`.browser-keys`)), chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, input.InsertText, input.InsertTextParams{Text: text})
		return err
	}))
}

// scrollPicture scrolls the page down by the picture: the wheel on a
// desktop, a finger dragged up on a phone.
func (b *browser) scrollPicture(sc screen) {
	b.t.Helper()
	x, y := b.picturePoint(0.75, 0.8)
	if !sc.mobile {
		b.run(chromedp.MouseEvent(input.DispatchMouseEventTypeMouseWheel, x, y, func(p *input.DispatchMouseEventParams) {
			// Chromium wants deltaX, which a zero would leave out of the
			// JSON; the page cannot scroll sideways.
			p.DeltaX, p.DeltaY = 1, 200
		}))
		return
	}
	b.run(chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		id, one := 1.0, 1.0
		point := func(y float64) []*input.TouchPoint {
			return []*input.TouchPoint{{X: x, Y: y, ID: &id, RadiusX: &one, RadiusY: &one, Force: &one}}
		}
		steps := []input.DispatchTouchEventParams{{Type: input.DispatchTouchEventTypeTouchStart, TouchPoints: point(y)}}
		for i := 1; i <= 6; i++ {
			steps = append(steps, input.DispatchTouchEventParams{Type: input.DispatchTouchEventTypeTouchMove, TouchPoints: point(y - float64(i)*20)})
		}
		steps = append(steps, input.DispatchTouchEventParams{Type: input.DispatchTouchEventTypeTouchEnd, TouchPoints: []*input.TouchPoint{}})
		for _, s := range steps {
			if _, err := cdp.Call(ctx, t, input.DispatchTouchEvent, s); err != nil {
				return fmt.Errorf("touch %s: %w", s.Type, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		return nil
	}))
}
