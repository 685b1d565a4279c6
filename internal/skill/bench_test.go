package skill

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchCatalog installs n skills of three files each (SKILL.md with a
// long description, a script, a reference) and lets their change times
// age past the racy window, as they would between turns.
func benchCatalog(b *testing.B, n int) *Catalog {
	b.Helper()
	c := newCatalog(b, Limits{})
	src := b.TempDir()
	for i := range n {
		name := fmt.Sprintf("skill-%03d", i)
		dir := filepath.Join(src, name)
		writeFiles(b, dir, map[string]string{
			"SKILL.md":           skillMD(name, strings.Repeat("Does a particular thing well; use it when asked. ", 6)) + strings.Repeat("Step by step.\n", 100),
			"scripts/run.sh":     "#!/bin/sh\necho " + name + "\n",
			"references/note.md": strings.Repeat("Reference material.\n", 50),
		})
		if err := c.Install(fetchOne(b, dir, FetchOptions{}), InstallOptions{}, now); err != nil {
			b.Fatal(err)
		}
	}
	time.Sleep(racyWindow + 50*time.Millisecond)
	return c
}

// BenchmarkPrompt is the skills part of one turn with 200 skills
// installed: list the skills folder, check every skill's files against
// what the catalog verified before (no file read when nothing
// changed), and render the index.
func BenchmarkPrompt(b *testing.B) {
	c := benchCatalog(b, 200)
	if _, err := c.Prompt("s1", 200_000, now); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		idx, err := c.Prompt("s1", 200_000, now)
		if err != nil || !strings.Contains(idx, "skill-000") {
			b.Fatal(err, idx)
		}
	}
}

// BenchmarkPromptCold is BenchmarkPrompt for a catalog that has seen
// nothing yet: every skill is read and hashed.
func BenchmarkPromptCold(b *testing.B) {
	c := benchCatalog(b, 200)
	b.ReportAllocs()
	for b.Loop() {
		fresh, err := Open(Options{Dir: c.Dir()})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := fresh.Prompt("s1", 200_000, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIndex is the rendering alone, for 200 skills.
func BenchmarkIndex(b *testing.B) {
	skills := manySkills(200)
	b.ReportAllocs()
	for b.Loop() {
		Index(skills, 200_000, now)
	}
}
