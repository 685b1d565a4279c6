package clitest

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"den.dev/den/internal/llm/llmtest"
)

// TestWebNetwork: the chat lists its computer's connections; one den
// refused is marked so and says how to allow it, live and after a
// reload; one a skill in use let out says so. The refused command's
// card ends with den's note for the model.
func TestWebNetwork(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "sunny") })}
	go srv.Serve(l)
	defer srv.Close()
	fetch := func(host string) string {
		return `printf 'GET / HTTP/1.0\r\nHost: ` + host + `\r\n\r\n' | nc -w 10 ` + host + ` 80; echo done`
	}
	p, _ := serveWith(t, fmt.Sprintf("egress = \"allowlist\"\n\n[agents.default.skills.weather]\nallow = [\"weather.example\"]\n\n[network]\nhosts = { \"weather.example:80\" = %q }\n", l.Addr()),
		llmtest.Turn{Calls: []llmtest.Call{sh("toolu_e", fetch("blocked.example"))}},
		llmtest.Turn{Calls: []llmtest.Call{{ID: "toolu_r", Name: "file_read", Input: `{"path":"/den/skills/weather/SKILL.md"}`}}},
		llmtest.Turn{Calls: []llmtest.Call{sh("toolu_w", fetch("weather.example"))}},
		llmtest.Turn{Text: "It was blocked."})
	skill := filepath.Join(p.den.Home, "agents", "default", "skills", "weather")
	if err := os.MkdirAll(skill, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte("---\nname: weather\ndescription: The weather.\n---\n\nGET http://weather.example/\n"), 0o644)
	b := openBrowser(t, p, phoneScreen)
	b.newChat()
	b.send("fetch blocked.example")
	b.waitText(".msg.assistant .md", "It was blocked.")
	for _, reload := range []bool{false, true} {
		if reload {
			b.run(chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS(`#composer`)))
		}
		b.waitText(".network-info summary", "1 refused")
		b.run(chromedp.Click(chromedp.CSS(".network-info summary")))
		row := b.waitText(".network-info tr.refused", "blocked.example:80")
		why := b.waitText(".network-info tr.why", "den network allow --agent default blocked.example")
		if !strings.Contains(row, "refused") || why == "" {
			t.Errorf("the refused connection's rows: %q, %q", row, why)
		}
		if row := b.waitText(".network-info tr", "weather.example:80"); !strings.Contains(row, "allowed") || !strings.Contains(row, "skill weather") {
			t.Errorf("the connection the skill let out: %q", row)
		}
	}
	b.shot("network")
	b.run(chromedp.Click(chromedp.CSS("details.tool summary")))
	b.waitText("details.tool .tool-output", "[den refused 1 connection(s) of this command]")
}

// TestWebEgressSettings: the settings set an agent's egress policy and
// its allowed hosts in den's config, and set and remove a secret whose
// value goes to den's secrets file and never back to the page.
func TestWebEgressSettings(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "")
	p := startServe(t, d, llmtest.NewAnthropic(t))
	b := openBrowser(t, p, phoneScreen)
	b.openSidebar(phoneScreen)
	b.run(chromedp.Click(chromedp.CSS(`.settings-open`)))
	agent := `form[aria-label="Agent default"] `
	b.run(chromedp.WaitVisible(chromedp.CSS(agent + `select[name="egress"]`)))
	b.exec(`(() => { const s = document.querySelector('form[aria-label="Agent default"] select[name="egress"]');
		s.value = "allowlist"; s.dispatchEvent(new Event("change", {bubbles: true})) })()`)
	b.run(chromedp.SendKeys(chromedp.CSS(agent+`textarea[name="allow"]`), "pypi.org\n*.github.com"),
		chromedp.Click(chromedp.CSS(agent+`button[type="submit"]`)))
	b.waitText(".settings .banner", "Agent default saved.")
	file := configFile(t, d)
	for _, want := range []string{`egress = "allowlist"`, `allow = ["pypi.org", "*.github.com"]`} {
		if !strings.Contains(file, want) {
			t.Errorf("the config file lacks %s:\n%s", want, file)
		}
	}

	const value = "tok-web-value-8d2c41"
	form := `form[aria-label="Set a secret"] `
	b.run(
		chromedp.SendKeys(chromedp.CSS(form+`input[name="secret_name"]`), "gh_token"),
		chromedp.SendKeys(chromedp.CSS(form+`input[name="secret_hosts"]`), "api.github.com"),
		chromedp.SendKeys(chromedp.CSS(form+`input[name="secret_value"]`), value),
		chromedp.Click(chromedp.CSS(form+`button[type="submit"]`)),
	)
	b.waitText(".settings .banner", "Secret GH_TOKEN saved.")
	b.waitText(`section[aria-labelledby="s-secrets"] .rows`, "api.github.com")
	b.shot("secrets")
	if page := eval[string](b, `document.documentElement.outerHTML + [...document.querySelectorAll("input")].map(i => i.value).join(" ")`); strings.Contains(page, value) {
		t.Errorf("the secret's value is still on the page")
	}
	if b, err := os.ReadFile(filepath.Join(d.Home, "secrets.json")); err != nil || !strings.Contains(string(b), value) || !strings.Contains(string(b), `"GH_TOKEN"`) {
		t.Errorf("den's secrets file: %v\n%s", err, b)
	}
	b.run(chromedp.Click(chromedp.CSS(`button[aria-label="Remove secret GH_TOKEN"]`)))
	b.waitText(`section[aria-labelledby="s-secrets"] .rows`, "None.")
}
