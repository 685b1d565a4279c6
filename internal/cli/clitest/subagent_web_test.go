package clitest

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"den.dev/den/internal/llm/llmtest"
)

// TestWebSubagents: the sidebar shows a sub-agent's session nested
// under the session that started it, and opens it.
func TestWebSubagents(t *testing.T) {
	p, _ := serveWith(t, "[profiles.scout]\ndescription = \"looks around\"\n",
		llmtest.Turn{Calls: []llmtest.Call{sh("p1", `den-agent run --profile scout "look around" -q`)}},
		llmtest.Turn{Text: "Nothing here."},
		llmtest.Turn{Text: "The scout found nothing."})
	b := openBrowser(t, p, desktopScreen)
	b.newChat()
	b.send("send a scout")
	b.waitText(".msg.assistant .md", "The scout found nothing.")
	b.waitText(".sessions li.sub .title", "look around")
	order := eval[[]string](b, `[...document.querySelectorAll(".sessions li")].map(li => (li.classList.contains("sub") ? "sub:" : "") + li.querySelector(".title").textContent)`)
	if len(order) != 2 || order[0] != "send a scout" || order[1] != "sub:look around" {
		t.Errorf("sidebar %q, want the sub-agent right under its parent", order)
	}
	indent := eval[bool](b, `(() => { const [a, c] = [...document.querySelectorAll(".sessions li a")]; return c.getBoundingClientRect().left + parseFloat(getComputedStyle(c).paddingLeft) > a.getBoundingClientRect().left + parseFloat(getComputedStyle(a).paddingLeft) })()`)
	if !indent {
		t.Error("the sub-agent is not indented under its parent")
	}
	b.shot("subagents")
	b.run(chromedp.Click(chromedp.CSS(`.sessions li.sub a`)))
	if got := b.waitText(".msg.assistant .md", "Nothing here."); !strings.Contains(got, "Nothing here.") {
		t.Errorf("the sub-agent's session shows %q", got)
	}
}
