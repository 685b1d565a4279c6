package clitest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"den.dev/den/internal/llm/llmtest"
)

// TestWebUndo: each turn that changed the computer shows what it
// changed (files, packages) under its tool calls, and Undo puts the
// computer back as it was before the turn, saying what it did not
// touch; Redo undoes the undo.
func TestWebUndo(t *testing.T) {
	p, _ := serveWith(t, "",
		llmtest.Turn{Text: "Step one.", Calls: []llmtest.Call{sh("toolu_1", "echo keep > /root/keep")}},
		llmtest.Turn{Text: "Step two.", Calls: []llmtest.Call{sh("toolu_2",
			`rm /root/keep && echo new > /root/new && mkdir -p /lib/apk/db && printf 'P:cowsay\nV:3.04-r2\n\n' > /lib/apk/db/installed`)}},
		llmtest.Turn{Text: "All done."})
	b := openBrowser(t, p, phoneScreen)
	b.newChat()
	b.send("change things")
	b.waitText(".msg.assistant .md", "All done.")
	// The turn is over: Undo is enabled.
	b.waitText("details.changes summary", "Changes in the computer")
	step := func(text string) string {
		return fmt.Sprintf(`[...document.querySelectorAll(".msg.assistant")].find(e => e.textContent.includes(%q))`, text)
	}
	if n := eval[int](b, `document.querySelectorAll("details.changes").length`); n != 2 {
		t.Fatalf("%d turns show their changes, want 2 (the two that wrote)", n)
	}
	b.exec(step("Step one.") + `.querySelector("details.changes summary").click()`)
	one := b.waitText("details.changes[open]", "/root/keep")
	if !strings.Contains(one, "1 added") {
		t.Errorf("step one's changes: %q", one)
	}
	b.exec(step("Step one.") + `.querySelector("details.changes summary").click()`)
	b.exec(step("Step two.") + `.querySelector("details.changes summary").click()`)
	two := b.waitText("details.changes[open]", "/root/new")
	for _, want := range []string{"/root/keep", "cowsay 3.04-r2", "1 package"} {
		if !strings.Contains(two, want) {
			t.Errorf("step two's changes lack %q: %q", want, two)
		}
	}
	b.shot("changes")
	b.run(chromedp.Click(chromedp.Search(`//details[@open]//button[text()="Undo"]`)))
	b.waitText("details.changes[open] .confirm", "mounted folders are not touched")
	b.run(chromedp.Click(chromedp.Search(`//details[@open]//button[text()="Undo the changes"]`)))
	done := b.waitText("details.changes[open] .restored", "back as it was before this turn")
	if !strings.Contains(done, "Not touched: ") || !strings.Contains(done, "/den/memory") {
		t.Errorf("the undo does not say what it left alone: %q", done)
	}
	b.shot("undone")
	rootfs := filepath.Join(p.den.AgentDir("default"), "rootfs")
	if b, err := os.ReadFile(filepath.Join(rootfs, "root/keep")); err != nil || string(b) != "keep\n" {
		t.Errorf("/root/keep after the undo: %q %v", b, err)
	}
	for _, gone := range []string{"root/new", "lib/apk/db/installed"} {
		if _, err := os.Lstat(filepath.Join(rootfs, gone)); err == nil {
			t.Errorf("/%s is still there after the undo", gone)
		}
	}
	// Redo: the undo is undone in turn.
	b.run(chromedp.Click(chromedp.Search(`//details[@open]//button[text()="Redo"]`)))
	b.waitText("details.changes[open]", "Undo")
	waitFor(t, "the redo", func() bool {
		_, err := os.Lstat(filepath.Join(rootfs, "root/new"))
		return err == nil
	})
}
