package clitest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/serviceworker"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/sandbox/sandboxtest"
	"den.dev/den/internal/webpush/webpushtest"
)

// TestPushEndToEnd: a browser subscribes to den serve over the API with
// an endpoint of a fake push service (den trusts its certificate through
// SSL_CERT_FILE); the model runs den-notify in the computer, and the
// push service gets, signed with den's key and the configured contact,
// a message the browser decrypts to that notification, then one saying
// the turn is done.
func TestPushEndToEnd(t *testing.T) {
	svc := webpushtest.NewService(t)
	certs := filepath.Join(t.TempDir(), "push-ca.pem")
	if err := os.WriteFile(certs, svc.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	d := newDen(t)
	serveConfig(t, d, "[agents.default.permissions]\n\"den-notify\" = \"allow\"\n\n[server]\npush_contact = \"mailto:ops@example.org\"\n")
	fake := llmtest.NewAnthropic(t,
		llmtest.Turn{Text: "Telling you.", Calls: []llmtest.Call{sh("toolu_1", "den-notify --title Hello from-the-computer")}},
		llmtest.Turn{Text: "I sent the notification."},
		llmtest.Turn{Calls: []llmtest.Call{sh("toolu_2", "den-notify --title Again while-you-look")}},
		llmtest.Turn{Text: "Sent again."})
	p := startServe(t, d, fake, "SSL_CERT_FILE="+certs)

	info := p.api(t, "GET", "/api/v1/push", nil, http.StatusOK)
	key, err := base64.RawURLEncoding.DecodeString(info["public_key"].(string))
	if err != nil || len(key) != 65 || info["subscriptions"] != float64(0) {
		t.Fatalf("GET /api/v1/push: %v", info)
	}
	browser := svc.Subscribe(key)
	p256dh, auth := browser.Keys()
	p.api(t, "POST", "/api/v1/push/subscriptions", map[string]any{"endpoint": browser.Endpoint, "expirationTime": nil,
		"keys": map[string]string{"p256dh": p256dh, "auth": auth}}, http.StatusCreated)

	id := p.api(t, "POST", "/api/v1/sessions", map[string]any{"agent": "default"}, http.StatusCreated)["id"].(string)
	p.api(t, "POST", "/api/v1/sessions/"+id+"/messages", map[string]any{"text": "notify me"}, http.StatusAccepted)
	for _, want := range []map[string]any{
		{"title": "Hello", "body": "from-the-computer", "session_id": id, "url": "/#" + id, "kind": "notify"},
		{"title": "notify me", "body": "I sent the notification.", "tag": "done-" + id, "session_id": id, "url": "/#" + id, "kind": "done"},
	} {
		r := browser.Next(t, 60*time.Second)
		if r.Err != nil || r.Status != http.StatusCreated {
			t.Fatalf("the push service refused den's message: %d %v\n%s", r.Status, r.Err, p.stderr)
		}
		if r.Claims.Sub != "mailto:ops@example.org" {
			t.Errorf("VAPID subject %q, want the configured push_contact", r.Claims.Sub)
		}
		var got map[string]any
		if err := json.Unmarshal(r.Payload, &got); err != nil {
			t.Fatalf("payload %q: %v", r.Payload, err)
		}
		if want["kind"] == "notify" {
			if tag, _ := got["tag"].(string); !strings.HasPrefix(tag, "notify-") {
				t.Errorf("notify tag %q", tag)
			}
			delete(got, "tag")
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("payload (-want +got):\n%s", diff)
		}
	}

	// While the user uses den in a browser, den's pushes stay quiet:
	// they see on the page what a push would say.
	b := openBrowser(t, p, desktopScreen)
	b.run(chromedp.Navigate(p.url + "/#" + id))
	b.waitText(".msg.assistant .md", "I sent the notification.")
	b.run(chromedp.Click(chromedp.CSS(`#composer`)))
	b.send("again")
	b.waitText(".toast", "while-you-look")
	b.waitText(".msg.assistant .md", "Sent again.")
	select {
	case r := <-browser.Received():
		t.Errorf("den pushed while the user was using it: %q\n%s", r.Payload, p.stderr)
	case <-time.After(2 * time.Second):
	}
}

// shownNotification is a notification the service worker shows, as the
// page reads it back.
type shownNotification struct {
	Title  string `json:"title"`
	Body   string `json:"body"`
	Tag    string `json:"tag"`
	URL    string `json:"url"`
	Silent bool   `json:"silent"`
}

// TestWebPushWorker: Chromium delivers pushes (as its push service
// would, through DevTools) to den's service worker, which shows the
// notification of each payload: title, body, tag and den's URL to open
// (never another site's); it alerts while den's page is not focused,
// and is shown silently, not skipped, when it is.
func TestWebPushWorker(t *testing.T) {
	p, _ := serveWith(t, "")
	b := openBrowserWith(t, fullChromium(t), p, phoneScreen)
	setNotifications := func(setting cdpbrowser.PermissionSetting) {
		b.run(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.CallBrowser(ctx, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
				Permission: &cdpbrowser.PermissionDescriptor{Name: "notifications"}, Setting: setting, Origin: p.url})
			return err
		}))
	}
	// push.js, as the settings will use it: supported here, blocked
	// while notifications are denied, off once they are allowed (the
	// browser has no subscription: subscribing needs the browser's push
	// service, out of reach in a test), and a test push reaches nobody.
	pushJS := func() string {
		got, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`import("/app/push.js").then(async m =>
			[m.pushSupported(), await m.pushState(), JSON.stringify(await m.testPush()), await m.disablePush()].join(" "))`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("push.js: %v", err)
		}
		return got
	}
	setNotifications(cdpbrowser.PermissionSettingDenied)
	if got := pushJS(); got != `true denied {"failed":[],"sent":0} off` {
		t.Errorf("push.js with notifications denied: %s", got)
	}
	setNotifications(cdpbrowser.PermissionSettingGranted)
	if got := pushJS(); got != `true off {"failed":[],"sent":0} off` {
		t.Errorf("push.js with notifications allowed: %s", got)
	}

	// The page registers the worker; it is ready once activated.
	state, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`navigator.serviceWorker.ready.then(r => r.active.state === "activated" ? "activated" :
		new Promise(ok => r.active.addEventListener("statechange", e => e.target.state === "activated" && ok("activated"))))`, chromedp.EvalAwaitPromise))
	if err != nil || state != "activated" {
		t.Fatalf("den's service worker: %q %v", state, err)
	}

	regs := make(chan serviceworker.RegistrationID, 16)
	if err := chromedp.Listen(b.ctx, func(ev any) {
		if e, ok := ev.(*serviceworker.EventWorkerRegistrationUpdated); ok {
			for _, r := range e.Registrations {
				if !r.IsDeleted && strings.HasPrefix(r.ScopeURL, p.url) {
					select {
					case regs <- r.RegistrationID:
					default:
					}
				}
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(b.ctx, serviceworker.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	var reg serviceworker.RegistrationID
	select {
	case reg = <-regs:
	case <-time.After(30 * time.Second):
		t.Fatal("DevTools named no service worker registration of den")
	}
	// In the background (headless, the page is visible but not
	// focused), a notification alerts; with den's page in front it is
	// shown silently, never skipped.
	b.push(t, reg, `{"title":"Hello from den","body":"from-the-computer","tag":"notify-7","session_id":"s1","url":"/#s1","kind":"notify"}`)
	want := []shownNotification{{Title: "Hello from den", Body: "from-the-computer", Tag: "notify-7", URL: p.url + "/#s1"}}
	if shown := b.notifications(t, 1); !cmp.Equal(shown, want) {
		t.Errorf("shown %+v, want %+v", shown, want)
	}
	if _, err := chromedp.Call(b.ctx, emulation.SetFocusEmulationEnabled, emulation.SetFocusEmulationEnabledParams{Enabled: true}); err != nil {
		t.Fatal(err)
	}
	b.push(t, reg, `{"title":"den needs your approval","body":"agent wants to run: den-config set","tag":"approval-a1","session_id":"s2","url":"https://elsewhere.example/","kind":"approval"}`)
	want = append([]shownNotification{{Title: "den needs your approval", Body: "agent wants to run: den-config set", Tag: "approval-a1", URL: p.url + "/", Silent: true}}, want...)
	if shown := b.notifications(t, 2); !cmp.Equal(shown, want) {
		t.Errorf("shown %+v, want %+v", shown, want)
	}
}

// push delivers data to the service worker registration reg, as a push
// service would.
func (b *browser) push(t *testing.T, reg serviceworker.RegistrationID, data string) {
	t.Helper()
	if _, err := chromedp.Call(b.ctx, serviceworker.DeliverPushMessage, serviceworker.DeliverPushMessageParams{
		Origin: b.p.url, RegistrationID: reg, Data: data}); err != nil {
		t.Fatal(err)
	}
}

// notifications waits until n notifications of den are shown and
// returns them, by tag.
func (b *browser) notifications(t *testing.T, n int) []shownNotification {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		shown, err := chromedp.Run(b.ctx, chromedp.Evaluate[[]shownNotification](`navigator.serviceWorker.ready.then(r => r.getNotifications()).then(ns =>
			ns.map(n => ({title: n.title, body: n.body, tag: n.tag, url: n.data && n.data.url, silent: n.silent})).sort((a, b) => a.tag < b.tag ? -1 : 1))`, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatal(err)
		}
		if len(shown) >= n {
			return shown
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d notifications shown, want %d: %+v", len(shown), n, shown)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// fullChromium is the Chromium browser itself: the headless shell has
// no notifications (it reports the permission denied even when granted,
// and showNotification fails).
func fullChromium(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	return sandboxtest.Need(t, "chromium", "chromium")
}
