package cli

import (
	"testing"
	"time"

	"den.dev/den/internal/store"
)

// TestNestSessions: sub-agents follow their parent, oldest first, their
// own sub-agents under them; one whose parent is not listed keeps its
// place.
func TestNestSessions(t *testing.T) {
	at := func(m int) time.Time { return time.Date(2026, 1, 1, 0, m, 0, 0, time.UTC) }
	list := []store.Session{
		{ID: "b2", Parent: "p", Created: at(3)},
		{ID: "p", Created: at(0)},
		{ID: "q", Created: at(1)},
		{ID: "b1", Parent: "p", Created: at(2)},
		{ID: "g", Parent: "b1", Created: at(4)},
		{ID: "orphan", Parent: "gone", Created: at(5)},
	}
	var got []string
	for _, n := range nestSessions(list) {
		got = append(got, n.ID+":"+string(rune('0'+n.Depth)))
	}
	want := "p:0 b1:1 g:2 b2:1 q:0 orphan:0"
	if s := join(got); s != want {
		t.Errorf("nested %s, want %s", s, want)
	}
}

func join(s []string) string {
	out := ""
	for i, v := range s {
		if i > 0 {
			out += " "
		}
		out += v
	}
	return out
}
