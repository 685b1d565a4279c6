package store

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestSkillsUsed: the skills a session used are kept in the order it
// first used them, once each, for that session only, and go with it.
func TestSkillsUsed(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	a, b := newSession(t, s, "ada"), newSession(t, s, "ada")
	for _, name := range []string{"weather", "git", "weather"} {
		if err := s.UseSkill(ctx, a.ID, name); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.SkillsUsed(ctx, a.ID); err != nil || !slices.Equal(got, []string{"weather", "git"}) {
		t.Errorf("skills of a: %q %v", got, err)
	}
	if got, err := s.SkillsUsed(ctx, b.ID); err != nil || len(got) != 0 {
		t.Errorf("skills of b, which used none: %q %v", got, err)
	}
	if err := s.UseSkill(ctx, "nope", "weather"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a skill of a missing session: %v, want ErrNotFound", err)
	}
	if err := s.UseSkill(ctx, a.ID, ""); err == nil {
		t.Error("a skill with no name was recorded")
	}
	if err := s.DeleteSession(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM session_skills`).Scan(&n); err != nil || n != 0 {
		t.Errorf("rows left after the session was deleted: %d %v", n, err)
	}
}
