package clitest

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/store"
)

// TestWebSettings: on a phone, the settings change an agent's model,
// instructions, network, folders and permissions in den's config file;
// add and remove a group; add a provider whose key never shows again;
// revoke a standing approval; show the spending per day and the
// sessions that cost the most; and rotate the token, which signs out
// everything but this browser and shows the new token once.
func TestWebSettings(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "")
	seedSettings(t, d)
	if err := os.WriteFile(filepath.Join(d.ConfigHome, "den", "mcp.json"),
		[]byte(`{"mcpServers": {"notes": {"command": "mcp-server-filesystem", "args": ["/srv/notes"], "host": true}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// The token is den's own (a file), not the environment's, so that
	// it can be rotated.
	if err := os.WriteFile(filepath.Join(d.Home, "token"), []byte(serveToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startServe(t, d, llmtest.NewAnthropic(t), "DEN_TOKEN=")
	b := openBrowser(t, p, phoneScreen)
	b.openSidebar(phoneScreen)
	b.run(chromedp.Click(chromedp.CSS(`.settings-open`)))
	agent := `form[aria-label="Agent default"] `
	b.run(chromedp.WaitVisible(chromedp.CSS(agent + `input[name="model"]`)))
	b.shot("settings-top")
	folder := t.TempDir()

	// The agent: model, instructions, network, a folder, a permission.
	b.run(
		chromedp.Clear(chromedp.CSS(agent+`input[name="model"]`)),
		chromedp.SendKeys(chromedp.CSS(agent+`input[name="model"]`), "anthropic/claude-opus-5"),
		chromedp.SendKeys(chromedp.CSS(agent+`textarea[name="instructions"]`), "Answer like a pirate."),
		chromedp.SetValue(chromedp.CSS(agent+`select[name="network"]`), "off"),
		chromedp.SendKeys(chromedp.CSS(agent+`input[name="mount_host"]`), folder),
		chromedp.SendKeys(chromedp.CSS(agent+`input[name="mount_guest"]`), "/mnt/notes"),
		chromedp.Click(chromedp.Search(`//form[@aria-label="Agent default"]//button[text()="Add folder"]`)),
		chromedp.Click(chromedp.Search(`//form[@aria-label="Agent default"]//button[text()="Add a permission"]`)),
		chromedp.SendKeys(chromedp.CSS(agent+`input[aria-label="Command"]`), "den-camera"),
		chromedp.Click(chromedp.CSS(agent+`input[name="browser"]`)),
	)
	b.exec(`(() => { const s = document.querySelector('form[aria-label="Agent default"] select[aria-label^="Decision"]');
		s.value = "deny"; s.dispatchEvent(new Event("change", {bubbles: true})) })()`)
	b.exec(`(() => { const s = document.querySelector('form[aria-label="Agent default"] select[name="network"]');
		s.dispatchEvent(new Event("change", {bubbles: true})) })()`)
	b.run(chromedp.Click(chromedp.CSS(agent + `button[type="submit"]`)))
	b.waitText(".settings .banner", "Agent default saved.")
	file := configFile(t, d)
	for _, want := range []string{`model = "anthropic/claude-opus-5"`, `instructions = "Answer like a pirate."`, `network = "off"`,
		folder + `:/mnt/notes:ro`, `den-camera = "deny"`, `browser = false`} {
		if !strings.Contains(file, want) {
			t.Errorf("the config file lacks %s:\n%s", want, file)
		}
	}
	b.shot("settings-agent")
	// The permission removed again.
	b.run(chromedp.Click(chromedp.CSS(agent+`button[aria-label="Remove permission den-camera"]`)),
		chromedp.Click(chromedp.CSS(agent+`button[type="submit"]`)))
	waitFor(t, "the permission removed", func() bool { return !strings.Contains(configFile(t, d), "den-camera") })

	// A group, added and removed.
	group := `form[aria-label="Add or change a group"] `
	b.run(
		chromedp.SendKeys(chromedp.CSS(group+`input[name="group"]`), "fast"),
		chromedp.SendKeys(chromedp.CSS(group+`input[name="members"]`), "anthropic/claude-sonnet-5-5, anthropic/claude-opus-5"),
		chromedp.Click(chromedp.CSS(group+`button[type="submit"]`)),
	)
	b.waitText(".settings .rows", "anthropic/claude-sonnet-5-5 → anthropic/claude-opus-5")
	if file := configFile(t, d); !strings.Contains(file, "[groups.fast]") {
		t.Errorf("no group in the config file:\n%s", file)
	}
	b.run(chromedp.Click(chromedp.CSS(`button[aria-label="Remove group fast"]`)))
	waitFor(t, "the group removed", func() bool { return !strings.Contains(configFile(t, d), "groups.fast") })

	// A provider, whose key is written and never shown again.
	const secret = "sk-test-never-shown-0123456789"
	b.run(
		chromedp.SendKeys(chromedp.CSS(`input[name="provider"]`), "local"),
		chromedp.SendKeys(chromedp.CSS(`input[name="base_url"]`), "http://127.0.0.1:9/v1"),
		chromedp.SendKeys(chromedp.CSS(`input[name="api_key"]`), secret),
		chromedp.Click(chromedp.Search(`//button[text()="Save provider"]`)),
	)
	b.waitText(".settings .banner", "Provider local saved.")
	b.waitText(".settings .rows", "http://127.0.0.1:9/v1")
	if !strings.Contains(configFile(t, d), secret) {
		t.Error("the key is not in the config file")
	}
	if page := eval[string](b, `document.documentElement.outerHTML`); strings.Contains(page, secret) {
		t.Error("the key is still in the page after it was saved")
	}
	for _, path := range []string{"/api/v1/config", "/api/v1/models", "/api/v1/agents"} {
		if got := p.api(t, "GET", path, nil, http.StatusOK); strings.Contains(mustJSON(got), secret) {
			t.Errorf("GET %s shows the key", path)
		}
	}

	// The MCP servers, the host's marked as running with the user's
	// rights.
	b.waitText(`section[aria-labelledby="s-mcp"]`, "notes on this machine, with your rights")

	// The standing approval, revoked.
	b.waitText(".settings .rows", "den-config")
	b.run(chromedp.Click(chromedp.CSS(`button[aria-label="Revoke den-config set"]`)))
	waitFor(t, "the rule revoked", func() bool {
		return len(p.api(t, "GET", "/api/v1/rules", nil, http.StatusOK)["rules"].([]any)) == 0
	})

	// Usage: two days, and the session that cost the most.
	b.waitText("ol.days", "$0.5000")
	if n := eval[int](b, `document.querySelectorAll("ol.days li").length`); n != 2 {
		t.Errorf("%d days of usage shown, want 2", n)
	}
	b.waitText("table.usage a", "Costly chat")
	b.shot("settings-usage")

	// The token: rotated, shown once; the old one no longer works, this
	// browser is still signed in.
	b.run(chromedp.Click(chromedp.Search(`//button[text()="Rotate the token"]`)),
		chromedp.Click(chromedp.Search(`//button[text()="Sign out everything else"]`)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`code.token`)))
	token := strings.TrimSpace(eval[string](b, `document.querySelector("code.token").textContent`))
	if len(token) < 32 || token == serveToken {
		t.Fatalf("the new token shown: %q", token)
	}
	if resp, _ := p.raw(t, "GET", "/api/v1/sessions", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the old token after rotation: %d", resp.StatusCode)
	}
	status, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](`fetch("/api/v1/sessions", {credentials: "same-origin"}).then(r => r.status)`, chromedp.EvalAwaitPromise))
	if err != nil || status != http.StatusOK {
		t.Errorf("this browser after rotation: %d %v", status, err)
	}
	b.shot("settings-token")
}

// seedSettings gives d a standing approval and two days of usage, one
// session costlier than the other, before den serve starts.
func seedSettings(t *testing.T, d *Den) {
	t.Helper()
	st, err := store.Open(filepath.Join(d.Home, "den.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	st.EnsureAgent(ctx, "default")
	if err := st.AddRule(ctx, store.Rule{Agent: "default", Command: "den-config", Action: "set", Subject: "agents.default.model", Decision: "allow"}); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i, c := range []struct {
		title string
		cost  float64
		at    time.Time
	}{{"Costly chat", 0.5, now}, {"Cheap chat", 0.01, now.Add(-48 * time.Hour)}} {
		s, err := st.CreateSession(ctx, "default", "anthropic/claude-sonnet-5-5")
		if err != nil {
			t.Fatal(err)
		}
		st.SetTitle(ctx, s.ID, c.title)
		if err := st.RecordUsage(ctx, store.UsageRecord{Session: s.ID, Model: "anthropic/claude-sonnet-5-5", Purpose: store.PurposeConversation,
			InputTokens: int64(1000 * (i + 1)), OutputTokens: 100, CostUSD: c.cost, Time: c.at}); err != nil {
			t.Fatal(err)
		}
	}
}

func configFile(t *testing.T, d *Den) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.ConfigHome, "den", "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// waitFor waits until ok, failing the test after a while.
func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !ok(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s", what)
		}
	}
}

// TestWebMemorySwitch: the topbar's Memory switch and /memory in the
// composer turn the chat's memory off and on, as the session's record
// says, and /memory is not sent to the agent.
func TestWebMemorySwitch(t *testing.T) {
	p, fake := serveWith(t, "", llmtest.Turn{Text: "ok"})
	b := openBrowser(t, p, phoneScreen)
	id := b.newChat()
	memoryOf := func() bool {
		t.Helper()
		return p.api(t, "GET", "/api/v1/sessions/"+id, nil, http.StatusOK)["memory"].(bool)
	}
	b.run(chromedp.WaitVisible(chromedp.CSS(`button[aria-label="Memory"][aria-pressed="true"]`)))
	b.run(chromedp.Click(chromedp.CSS(`button[aria-label="Memory"]`)))
	b.run(chromedp.WaitVisible(chromedp.CSS(`button[aria-label="Memory"][aria-pressed="false"]`)))
	if memoryOf() {
		t.Error("the switch turned memory off, the session says on")
	}
	b.send("/memory")
	b.waitText(".composer-note", "Memory is on for this chat")
	b.run(chromedp.WaitVisible(chromedp.CSS(`button[aria-label="Memory"][aria-pressed="true"]`)))
	if !memoryOf() {
		t.Error("/memory turned memory on, the session says off")
	}
	b.send("/memory off")
	b.waitText(".composer-note", "Memory is off")
	if memoryOf() {
		t.Error("/memory off left memory on")
	}
	if n := len(fake.Requests()); n != 0 || eval[int](b, `document.querySelectorAll(".msg.user").length`) != 0 {
		t.Errorf("/memory went to the agent: %d requests", n)
	}
	b.shot("memory-switch")
}

// TestWebRequestInfo: after a turn, the chat says how the last request
// was made up, the parts adding up to what the provider counted; it is
// still there after a reload.
func TestWebRequestInfo(t *testing.T) {
	p, _ := serveWith(t, "", llmtest.Turn{Text: "Hi.", InputTokens: 4000, CacheReadTokens: 1000, OutputTokens: 3})
	b := openBrowser(t, p, desktopScreen)
	b.newChat()
	b.send("hello")
	b.waitText(".request-info summary", "Last request: 5,000 tokens in")
	b.run(chromedp.Click(chromedp.CSS(`.request-info summary`)))
	b.waitText(".request-info table", "memory")
	b.waitText(".request-info table", "conversation")
	b.shot("request-info")
	b.run(chromedp.Reload())
	b.waitText(".request-info summary", "Last request: 5,000 tokens in")
}

// TestWebSkills: typing "/" in the composer suggests the agent's skills;
// one picked and sent puts its SKILL.md in front of the model, and the
// message shows it folded under what the user typed.
func TestWebSkills(t *testing.T) {
	p, fake := serveWith(t, "", llmtest.Turn{Text: "ok"}, llmtest.Turn{Text: "Haiku time."})
	b := openBrowser(t, p, phoneScreen)
	b.newChat()
	b.send("hi")
	b.waitText(".msg.assistant .md", "ok")
	dir := filepath.Join(p.den.AgentDir("default"), "skills", "haiku-writer")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: haiku-writer\ndescription: Writes haiku about anything.\n---\n\nCount 5-7-5 syllables.\n"), 0o644)
	b.run(chromedp.SendKeys(chromedp.CSS(`#composer`), "/hai"))
	b.waitText(".suggestions", "/haiku-writer")
	b.shot("skill-suggestions")
	b.run(chromedp.Click(chromedp.Search(`//ul[@class="suggestions"]//button[contains(., "/haiku-writer")]`)),
		chromedp.SendKeys(chromedp.CSS(`#composer`), "about a frog"),
		chromedp.Click(chromedp.CSS(`button[aria-label="Send"]`)))
	b.waitText(".msg.assistant .md", "Haiku time.")
	b.waitText(".msg.user .bubble", "about a frog")
	b.waitText(".msg.user .skill-used summary", "Skill: haiku-writer")
	if body := string(fake.Requests()[1].Body); !strings.Contains(body, "Count 5-7-5 syllables.") {
		t.Errorf("the skill did not reach the model: %s", body)
	}
	if bubble := eval[string](b, `[...document.querySelectorAll(".msg.user .bubble")].pop().firstChild.textContent`); strings.Contains(bubble, "<skill") {
		t.Errorf("the bubble shows den's skill block: %q", bubble)
	}
}
