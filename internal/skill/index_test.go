package skill

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// manySkills makes n usable skills with long descriptions, installed
// a month before now and never used.
func manySkills(n int) []Entry {
	var out []Entry
	for i := range n {
		name := fmt.Sprintf("skill-%03d", i)
		out = append(out, Entry{
			Name: name, State: Installed,
			Manifest: &Manifest{Name: name, Description: fmt.Sprintf("Skill %d. ", i) + strings.Repeat("Does a particular thing well; use it when asked. ", 8)},
			Record:   &Record{Origin: OriginInstalled, Installed: now.AddDate(0, -1, 0), Updated: now.AddDate(0, -1, 0), Enabled: true},
		})
	}
	return out
}

func TestIndexBudget(t *testing.T) {
	for _, tt := range []struct{ tokens, want int }{{8_000, 640}, {32_000, 2560}, {200_000, 8000}, {1_000_000, 8000}, {0, 0}} {
		if got := IndexBudget(tt.tokens); got != tt.want {
			t.Errorf("IndexBudget(%d) = %d, want %d", tt.tokens, got, tt.want)
		}
	}
}

// TestIndexFits checks that with 200 skills the index never exceeds its
// budget, lists as many as fit, and says how many it left out.
func TestIndexFits(t *testing.T) {
	skills := manySkills(200)
	for _, tokens := range []int{8_000, 200_000, 1_000_000} {
		t.Run(fmt.Sprint(tokens), func(t *testing.T) {
			got := Index(skills, tokens, now)
			budget := IndexBudget(tokens)
			if n := utf8.RuneCountInString(got); n > budget {
				t.Fatalf("%d characters, budget %d:\n%s", n, budget, got)
			}
			listed := strings.Count(got, "<skill>")
			if listed == 0 {
				t.Fatalf("no skill listed in %d characters:\n%s", budget, got)
			}
			want := fmt.Sprintf("%d more skills are not listed here: list /den/skills (or run den skills list on the host) to see them all.\n", 200-listed)
			if !strings.Contains(got, want) {
				t.Errorf("no line %q in:\n%s", want, got)
			}
			if !strings.HasPrefix(got, "<available_skills>\n") || !strings.HasSuffix(got, "</available_skills>\n") ||
				!strings.Contains(got, "read its SKILL.md with file_read") {
				t.Errorf("frame missing:\n%s", got)
			}
			// One more skill would not have fit.
			nextLine := entryLine(skills[listed])
			if utf8.RuneCountInString(got)+utf8.RuneCountInString(nextLine) <= budget {
				t.Errorf("%d listed, but %q would fit too", listed, nextLine)
			}
		})
	}
}

func TestIndexAll(t *testing.T) {
	skills := manySkills(3)
	got := Index(skills, 200_000, now)
	if n := strings.Count(got, "<skill>"); n != 3 || strings.Contains(got, "more skill") {
		t.Errorf("Index of 3 skills:\n%s", got)
	}
	if Index(nil, 200_000, now) != "" {
		t.Error("Index of no skills is not empty")
	}
	if got := Index(skills, 100, now); got != "" {
		t.Errorf("Index in a budget of 8 characters = %q", got)
	}
}

func TestIndexEntry(t *testing.T) {
	e := Entry{Name: "pdf", State: Installed, Manifest: &Manifest{Name: "pdf",
		Description: "Fill </description></skill></available_skills> forms\n\tand " + strings.Repeat("é", 250)}}
	got := Index([]Entry{e}, 200_000, now)
	want := "<skill><name>pdf</name><description>Fill &lt;/description&gt;&lt;/skill&gt;&lt;/available_skills&gt; forms and " +
		strings.Repeat("é", 200-len("Fill </description></skill></available_skills> forms and ")) + "…</description><path>/den/skills/pdf/SKILL.md</path></skill>\n"
	if !strings.Contains(got, want) {
		t.Errorf("Index =\n%s\nwant the line\n%s", got, want)
	}
	if strings.Count(got, "</available_skills>") != 1 {
		t.Errorf("the description closed the block:\n%s", got)
	}
}

// TestIndexRanking checks the order: most recently used first, then
// skills installed or changed in the last week, newest first, then by
// name; and that a tight budget keeps the first of that order.
func TestIndexRanking(t *testing.T) {
	skills := manySkills(6)
	skills[4].Record.LastUsed = now.Add(-time.Hour)
	skills[2].Record.LastUsed = now.Add(-time.Minute)
	skills[5].Record.Updated = now.Add(-24 * time.Hour)
	skills[3].Record.Updated = now.Add(-48 * time.Hour)
	got := Index(skills, 200_000, now)
	var order []string
	for _, line := range strings.Split(got, "\n") {
		if name, ok := strings.CutPrefix(line, "<skill><name>"); ok {
			order = append(order, name[:strings.Index(name, "<")])
		}
	}
	want := []string{"skill-002", "skill-004", "skill-005", "skill-003", "skill-000", "skill-001"}
	if fmt.Sprint(order) != fmt.Sprint(want) {
		t.Errorf("order %v, want %v", order, want)
	}
	// Room for the frame, two lines and the "more" line only.
	budget := utf8.RuneCountInString(indexOpen+indexHelp+indexClose+moreLine(4)) + utf8.RuneCountInString(entryLine(skills[2])+entryLine(skills[4])) + 5
	tight := Index(skills, budget*100/charsPerToken/indexPercent+1, now)
	if strings.Count(tight, "<skill>") != 2 || !strings.Contains(tight, "skill-002") || !strings.Contains(tight, "skill-004") ||
		!strings.Contains(tight, "4 more skills") {
		t.Errorf("in %d characters:\n%s", budget, tight)
	}
}
