package store

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"den.dev/den/internal/llm"
)

// TestFindSessions: newest first, per agent, paged with Before, and
// found by the words of their messages or title (quoted, so query
// syntax in the words is just text); a removed session is not found.
func TestFindSessions(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	var ids []string
	for i := range 5 {
		agent := "a"
		if i == 4 {
			agent = "b"
		}
		sess := newSession(t, s, agent)
		if _, err := s.Append(ctx, sess.ID, user(fmt.Sprintf("note %d about the garden", i))); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sess.ID)
	}
	s.SetTitle(ctx, ids[1], "Budget 2027")
	s.Append(ctx, ids[2], assistant(`Tomatoes need "sun" AND water`))
	// Newest first: 2, 1, 4 (agent b), 3, 0.

	all, err := s.FindSessions(ctx, SessionQuery{})
	if err != nil || len(all) != 5 || all[0].ID != ids[2] {
		t.Fatalf("all: %v %v", len(all), err)
	}
	a, _ := s.FindSessions(ctx, SessionQuery{Agent: "a", Limit: 2})
	if len(a) != 2 || a[0].ID != ids[2] || a[1].ID != ids[1] {
		t.Errorf("first page of a: %v", sessionIDs(a))
	}
	next, _ := s.FindSessions(ctx, SessionQuery{Agent: "a", Limit: 2, Before: a[1].ID})
	if len(next) != 2 || next[0].ID != ids[3] || next[1].ID != ids[0] {
		t.Errorf("second page of a: %v", sessionIDs(next))
	}
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"tomato", []string{ids[2]}},        // the start of a word
		{`"sun" AND`, []string{ids[2]}},     // syntax is text
		{"garden note 3", []string{ids[3]}}, // every word
		{"budget", []string{ids[1]}},        // the title
		{"nothing-like-this", nil},
	} {
		got, err := s.FindSessions(ctx, SessionQuery{Text: tc.q})
		if err != nil {
			t.Errorf("%q: %v", tc.q, err)
			continue
		}
		if fmt.Sprint(sessionIDs(got)) != fmt.Sprint(tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("%q: %v, want %v", tc.q, sessionIDs(got), tc.want)
		}
	}
	s.DeleteSession(ctx, ids[2])
	if got, _ := s.FindSessions(ctx, SessionQuery{Text: "tomato"}); len(got) != 0 {
		t.Errorf("a removed session is still found: %v", sessionIDs(got))
	}
	if _, err := s.FindSessions(ctx, SessionQuery{Before: "nosuch"}); err == nil {
		t.Error("paging after a missing session")
	}
}

func sessionIDs(list []Session) []string {
	var out []string
	for _, s := range list {
		out = append(out, s.ID)
	}
	return out
}

// TestPathPage: the latest messages of the current path, then older
// pages before a message, with whether more remain.
func TestPathPage(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	sess := newSession(t, s, "a")
	var msgs []llm.Message
	for i := range 7 {
		msgs = append(msgs, user(fmt.Sprint(i)), assistant(fmt.Sprint(i)))
	}
	ids, err := s.Append(ctx, sess.ID, msgs...)
	if err != nil {
		t.Fatal(err)
	}
	page, more, err := s.PathPage(ctx, sess.ID, "", 5)
	if err != nil || !more || len(page) != 5 || page[4].ID != ids[13] || page[0].ID != ids[9] {
		t.Fatalf("latest page: %d more=%v %v", len(page), more, err)
	}
	page, more, _ = s.PathPage(ctx, sess.ID, ids[9], 5)
	if !more || len(page) != 5 || page[4].ID != ids[8] {
		t.Errorf("second page: %d more=%v", len(page), more)
	}
	page, more, _ = s.PathPage(ctx, sess.ID, ids[4], 5)
	if more || len(page) != 4 || page[0].ID != ids[0] {
		t.Errorf("last page: %d more=%v", len(page), more)
	}
	if _, _, err := s.PathPage(ctx, sess.ID, "nosuch", 5); err == nil {
		t.Error("a page before a message of no session")
	}
	empty := newSession(t, s, "a")
	if page, more, err := s.PathPage(ctx, empty.ID, "", 5); err != nil || more || len(page) != 0 {
		t.Errorf("empty session: %v %v %v", page, more, err)
	}
}

// BenchmarkFind is the figures: listing among 10,000 sessions,
// and the latest page of a 10,000-message session.
func BenchmarkFind(b *testing.B) {
	ctx := context.Background()
	s := openTemp(b)
	var big string
	for i := range 10_000 {
		sess := newSession(b, s, "a")
		if i == 0 {
			big = sess.ID
		}
	}
	var msgs []llm.Message
	for i := range 5_000 {
		msgs = append(msgs, user(fmt.Sprint("question ", i)), assistant(fmt.Sprint("answer ", i)))
	}
	if _, err := s.Append(ctx, big, msgs...); err != nil {
		b.Fatal(err)
	}
	b.Run("list-10k-sessions", func(b *testing.B) {
		for b.Loop() {
			if got, err := s.FindSessions(ctx, SessionQuery{Agent: "a"}); err != nil || len(got) != 50 {
				b.Fatal(len(got), err)
			}
		}
	})
	b.Run("search-10k-sessions", func(b *testing.B) {
		for b.Loop() {
			if _, err := s.FindSessions(ctx, SessionQuery{Text: "answer 4999"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("latest-page-of-10k-messages", func(b *testing.B) {
		for b.Loop() {
			if page, _, err := s.PathPage(ctx, big, "", 50); err != nil || len(page) != 50 {
				b.Fatal(len(page), err)
			}
		}
	})
}

// TestSearchMessages: across 1,000 sessions, a word said once in one
// message of one session finds that session, with a snippet around it;
// a word said everywhere gives at most the limit, one hit a session;
// another agent's sessions are not searched.
func TestSearchMessages(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	var target Session
	for i := range 1000 {
		agent := "a"
		if i%10 == 9 {
			agent = "b"
		}
		sess := newSession(t, s, agent)
		text := fmt.Sprintf("we talked about the garden on day %d and the weather", i)
		if i == 500 {
			target = sess
			text = "the plumber Zbigniew fixed the boiler on Tuesday"
		}
		if _, err := s.Append(ctx, sess.ID, user("a question about the house"), assistant(text)); err != nil {
			t.Fatal(err)
		}
	}
	hits, err := s.SearchMessages(ctx, "a", "zbigniew boiler", 0)
	if err != nil || len(hits) != 1 || hits[0].Session != target.ID || !strings.Contains(hits[0].Snippet, "[Zbigniew]") {
		t.Fatalf("hits %+v %v", hits, err)
	}
	if hits, _ := s.SearchMessages(ctx, "a", "Zbig", 0); len(hits) != 1 {
		t.Errorf("a word's start: %+v", hits)
	}
	hits, err = s.SearchMessages(ctx, "a", "garden", 20)
	if err != nil || len(hits) != 20 {
		t.Fatalf("a common word: %d hits, %v", len(hits), err)
	}
	seen := map[string]bool{}
	for _, h := range hits {
		if seen[h.Session] {
			t.Errorf("session %s twice", h.Session)
		}
		seen[h.Session] = true
	}
	if hits, _ := s.SearchMessages(ctx, "b", "zbigniew", 0); len(hits) != 0 {
		t.Errorf("another agent's session was searched: %+v", hits)
	}
	if hits, err := s.SearchMessages(ctx, "a", `" OR *`, 0); err != nil || len(hits) != 0 {
		t.Errorf("FTS syntax in the query: %+v %v", hits, err)
	}
}

// BenchmarkSearchMessages: full-text search over 100,000 messages of
// 1,000 sessions (the figure to reach: a median of at most 50 ms).
func BenchmarkSearchMessages(b *testing.B) {
	ctx := context.Background()
	s := openTemp(b)
	words := strings.Fields("garden weather boiler invoice trip train ticket dinner recipe report budget meeting doctor school piano bike")
	for i := range 1000 {
		sess := newSession(b, s, "a")
		msgs := make([]llm.Message, 0, 100)
		for j := range 50 {
			msgs = append(msgs, user(fmt.Sprintf("question %d about the %s and the %s", j, words[(i+j)%len(words)], words[(i*7+j)%len(words)])),
				assistant(fmt.Sprintf("answer %d: the %s is fine, and so is the %s on day %d", j, words[(i+3*j)%len(words)], words[j%len(words)], i)))
		}
		if _, err := s.Append(ctx, sess.ID, msgs...); err != nil {
			b.Fatal(err)
		}
	}
	for _, q := range []string{"boiler invoice", "piano", "day 777"} {
		b.Run(strings.ReplaceAll(q, " ", "-"), func(b *testing.B) {
			for b.Loop() {
				if _, err := s.SearchMessages(ctx, "a", q, 20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
