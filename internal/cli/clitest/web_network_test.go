package clitest

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"den.dev/den/internal/llm/llmtest"
)

// TestWebNetwork: the chat lists its computer's connections; one den
// refused is marked so and says how to allow it, live and after a
// reload. The refused command's card ends with den's note for the
// model.
func TestWebNetwork(t *testing.T) {
	p, _ := serveWith(t, "egress = \"allowlist\"\n",
		llmtest.Turn{Calls: []llmtest.Call{sh("toolu_e", `printf 'GET / HTTP/1.0\r\nHost: blocked.example\r\n\r\n' | nc -w 10 blocked.example 80; echo done`)}},
		llmtest.Turn{Text: "It was blocked."})
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
	}
	b.shot("network")
	b.run(chromedp.Click(chromedp.CSS("details.tool summary")))
	b.waitText("details.tool .tool-output", "[den refused 1 connection(s) of this command]")
}
