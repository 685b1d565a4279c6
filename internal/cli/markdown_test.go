package cli

import "testing"

func TestMarkdownStreamed(t *testing.T) {
	var m markdown
	// Markers split across deltas still render.
	got := m.feed("# Tit") + m.feed("le\nsome **bo") + m.feed("ld** and `co") + m.feed("de`\n- item\n```\nx := 1\n```\ntail")
	got += m.flush()
	want := ansiBold + "Title" + ansiReset + "\n" +
		"some " + ansiBold + "bold" + ansiReset + " and " + ansiCyan + "code" + ansiReset + "\n" +
		"• item\n" +
		ansiCyan + "```" + ansiReset + "\n" + ansiCyan + "x := 1" + ansiReset + "\n" + ansiCyan + "```" + ansiReset + "\n" +
		"tail"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
