package clitest

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"den.dev/den/internal/llm/llmtest"
)

// TestWebCamera: den-camera shows a prompt on every browser with den
// open; the photo taken on the phone is saved in the computer and its
// path reaches the agent, and the prompt leaves the other browser. A
// declined request reaches the agent as denied.
func TestWebCamera(t *testing.T) {
	p, fake := serveWith(t, "",
		llmtest.Turn{Calls: []llmtest.Call{sh("toolu_1", `den-camera --prompt "the whiteboard"`)}},
		llmtest.Turn{Text: "Got the photo."},
		llmtest.Turn{Calls: []llmtest.Call{sh("toolu_2", `den-camera`)}},
		llmtest.Turn{Text: "No photo then."})
	phone := openBrowser(t, p, phoneScreen)
	desk := openBrowser(t, p, desktopScreen)
	id := phone.newChat()
	desk.run(chromedp.Navigate(p.url + "/#" + id))
	desk.run(chromedp.WaitVisible(chromedp.CSS(`#composer`)))

	phone.send("photograph the whiteboard")
	phone.waitText(".device-prompt", "the whiteboard")
	desk.waitText(".device-prompt", "the whiteboard")
	phone.shot("camera-prompt")
	capture := eval[string](phone, `document.querySelector('.device-prompt input[aria-label="Camera"]').getAttribute("capture")`)
	if capture != "environment" {
		t.Errorf("the camera input's capture is %q", capture)
	}
	photo := filepath.Join(t.TempDir(), "whiteboard.png")
	if err := os.WriteFile(photo, redSquarePNG, 0o644); err != nil {
		t.Fatal(err)
	}
	phone.run(chromedp.SetUploadFiles(chromedp.CSS(`.device-prompt input[aria-label="Camera"]`), []string{photo}))
	phone.waitText(".msg.assistant .md", "Got the photo.")
	result := string(fake.Requests()[1].Body)
	if !strings.Contains(result, `/den/attachments/whiteboard.png`) || !strings.Contains(result, `image/png`) {
		t.Errorf("den-camera's answer: %s", truncateBytes([]byte(result), 1500))
	}
	if resp, body := p.raw(t, "GET", "/api/v1/sessions/"+id+"/attachments/whiteboard.png", "", nil); resp.StatusCode != http.StatusOK || string(body) != string(redSquarePNG) {
		t.Errorf("the photo in the computer: %d, %d bytes", resp.StatusCode, len(body))
	}
	waitGone(t, desk, ".device-prompt")
	waitGone(t, phone, ".device-prompt")

	phone.send("another one")
	phone.waitText(".device-prompt", "den asks for a photo")
	phone.run(chromedp.Click(chromedp.Search(`//div[@class="device-prompt"]//button[text()="Decline"]`)))
	phone.waitText(".msg.assistant .md", "No photo then.")
	if result := string(fake.Requests()[3].Body); !strings.Contains(result, "declined") || !strings.Contains(result, `\"authorization_denied\"`) || !strings.Contains(result, "[exit code: 3]") {
		t.Errorf("a declined photo: %s", truncateBytes([]byte(result), 1500))
	}
	waitGone(t, desk, ".device-prompt")
}

// fakeSpeech replaces the page's speech synthesis (which a headless
// browser lacks the voices for) with one that records what it is asked
// to say: the first request fails as a phone fails one it was not
// tapped for, later ones are spoken.
const fakeSpeech = `(() => {
  window.__spoken = [];
  window.SpeechSynthesisUtterance = class { constructor(text) { this.text = text; } };
  let first = true;
  const fake = {
    getVoices: () => [{ name: "Test Voice", lang: "en-GB" }],
    speak(u) {
      setTimeout(() => {
        if (first) { first = false; u.onerror && u.onerror({ error: "not-allowed" }); return; }
        window.__spoken.push({ text: u.text, lang: u.lang, rate: u.rate, voice: u.voice && u.voice.name });
        u.onend && u.onend({});
      }, 10);
    },
    cancel() {},
  };
  Object.defineProperty(window, "speechSynthesis", { value: fake, configurable: true });
})();`

// TestWebSpeak: den-speak --browser has the page say the text with the
// language asked for; where the browser wants a tap first, a prompt
// with Play does it; den-speak returns once it was spoken.
func TestWebSpeak(t *testing.T) {
	p, fake := serveWith(t, "",
		llmtest.Turn{Calls: []llmtest.Call{sh("toolu_1", `den-speak --browser --lang en-GB --rate 1.5 "Good morning, the tea is ready."`)}},
		llmtest.Turn{Text: "Said it."})
	b := openBrowser(t, p, phoneScreen)
	b.run(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: fakeSpeech})
		return err
	}))
	b.run(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`.welcome`)))
	b.newChat()
	b.send("tell me the tea is ready")
	b.waitText(".device-prompt", "the tea is ready")
	b.shot("speak-prompt")
	b.run(chromedp.Click(chromedp.Search(`//div[@class="device-prompt"]//button[text()="Play"]`)))
	b.waitText(".msg.assistant .md", "Said it.")
	spoken := eval[[]map[string]any](b, `window.__spoken`)
	if len(spoken) != 1 || spoken[0]["text"] != "Good morning, the tea is ready." || spoken[0]["lang"] != "en-GB" ||
		spoken[0]["rate"] != 1.5 || spoken[0]["voice"] != "Test Voice" {
		t.Errorf("the page said %v", spoken)
	}
	if result := string(fake.Requests()[1].Body); !strings.Contains(result, `\"spoken\": true`) || !strings.Contains(result, "Test Voice") {
		t.Errorf("den-speak --browser's answer: %s", truncateBytes([]byte(result), 1500))
	}
	waitGone(t, b, ".device-prompt")
}

// waitGone waits until no element matches sel.
func waitGone(t *testing.T, b *browser, sel string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for eval[int](b, `document.querySelectorAll(`+quoteJSON(sel)+`).length`) > 0 {
		if time.Now().After(deadline) {
			b.shot("still-there")
			t.Fatalf("%s is still shown", sel)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
