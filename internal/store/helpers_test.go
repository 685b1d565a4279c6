package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	"den.dev/den/internal/llm"
)

// openTemp opens a fresh store in a temporary folder.
func openTemp(t testing.TB) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "den.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func newSession(t testing.TB, s *Store, agent string) Session {
	t.Helper()
	sess, err := s.CreateSession(context.Background(), agent, "anthropic/claude-test")
	if err != nil {
		t.Fatal(err)
	}
	return sess
}

func mustAppend(t testing.TB, s *Store, session string, msgs ...llm.Message) []string {
	t.Helper()
	ids, err := s.Append(context.Background(), session, msgs...)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func user(text string) llm.Message {
	return llm.Message{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: text}}}
}

func assistant(text string) llm.Message {
	return llm.Message{Role: llm.Assistant, Parts: []llm.Part{&llm.Text{Text: text}}}
}

// turn is an assistant message making n tool calls and the user message
// answering them, as the agent loop commits them.
func turn(label string, n int) []llm.Message {
	a := llm.Message{Role: llm.Assistant, Parts: []llm.Part{&llm.Text{Text: label}}}
	r := llm.Message{Role: llm.User}
	for i := range n {
		id := fmt.Sprintf("%s-call-%d", label, i)
		a.Parts = append(a.Parts, &llm.ToolCall{ID: id, Name: "shell",
			Input: []byte(fmt.Sprintf(`{"command":"echo %d"}`, i))})
		r.Parts = append(r.Parts, &llm.ToolResult{CallID: id, Name: "shell",
			Content: []llm.Part{&llm.Text{Text: fmt.Sprintf("%d\n", i)}}})
	}
	return []llm.Message{a, r}
}

// count returns the result of a COUNT query.
func count(t testing.TB, s *Store, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.db.QueryRow(query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkIntegrity fails t unless SQLite's integrity and foreign-key
// checks pass.
func checkIntegrity(t testing.TB, db *sql.DB) {
	t.Helper()
	var res string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&res); err != nil || res != "ok" {
		t.Fatalf("integrity_check: %q, %v", res, err)
	}
	rows, err := db.Query("PRAGMA foreign_key_check")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	if rows.Next() {
		t.Fatal("foreign_key_check reports violations")
	}
}
