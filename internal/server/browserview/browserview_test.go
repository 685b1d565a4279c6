package browserview

import (
	"math"
	"testing"
	"time"

	"den.dev/den/internal/browser"
)

// TestCheck: input events out of the protocol's range are refused
// before they reach the page. (The routes themselves are tested in
// internal/server, on a real browser.)
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		ev browser.InputEvent
		ok bool
	}{
		{browser.InputEvent{Kind: "down", X: 10, Y: 20, Button: "left", ClickCount: 1}, true},
		{browser.InputEvent{Kind: "wheel", X: 1, Y: 1, DeltaY: -120}, true},
		{browser.InputEvent{Kind: "keydown", Key: "Enter", Code: "Enter", Text: "\r"}, true},
		{browser.InputEvent{Kind: "text", Text: "héllo"}, true},
		{browser.InputEvent{Kind: "teleport"}, false},
		{browser.InputEvent{Kind: ""}, false},
		{browser.InputEvent{Kind: "move", X: 2e6}, false},
		{browser.InputEvent{Kind: "move", Y: math.Inf(-1)}, false},
		{browser.InputEvent{Kind: "wheel", DeltaX: math.NaN()}, false},
		{browser.InputEvent{Kind: "down", Button: "back"}, false},
		{browser.InputEvent{Kind: "down", ClickCount: 9}, false},
		{browser.InputEvent{Kind: "keydown", Modifiers: 16}, false},
		{browser.InputEvent{Kind: "keydown", Key: "a-key-name-far-longer-than-any-dom-key"}, false},
	} {
		if got := check(c.ev) == ""; got != c.ok {
			t.Errorf("check(%+v): ok %v, want %v", c.ev, got, c.ok)
		}
	}
}

// TestBucket: a burst is taken, then messages at the sustained rate.
func TestBucket(t *testing.T) {
	var b bucket
	now := time.Unix(1000, 0)
	for i := range InputBurst {
		if !b.take(now) {
			t.Fatalf("message %d of the burst refused", i)
		}
	}
	if b.take(now) {
		t.Error("a message past the burst taken")
	}
	now = now.Add(time.Second / InputRate)
	if !b.take(now) {
		t.Error("a message at the sustained rate refused")
	}
	if b.take(now) {
		t.Error("two messages in one interval taken")
	}
}

// TestClip: long addresses and titles are cut at a character's start.
func TestClip(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"abcdefghij", 10, "abcdefghij"},
		{"abcdefghijk", 10, "abcdefg…"},
		{"ééééééé", 10, "ééé…"}, // the cut at byte 7 would split the fourth é
	} {
		if got := clip(c.s, c.n); got != c.want || len(got) > c.n {
			t.Errorf("clip(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}
