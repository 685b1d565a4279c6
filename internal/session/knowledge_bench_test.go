package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/hostfs"
	"den.dev/den/internal/memory"
	"den.dev/den/internal/skill"
	"den.dev/den/internal/store"
)

// BenchmarkTurnKnowledge is what skills and memory add to building a
// turn's request, with 200 skills installed and 1 MB of memory (a
// year of daily logs and a long GLOBAL.md): the skills index (the
// folder listed, every skill checked against what was verified) and
// the memory (today's and yesterday's logs, GLOBAL.md and SOUL.md read
// within the budget; the search index is brought up to date when
// searched, "sync" measures that). The figure to reach: at most 5 ms.
//
// "as-root" reads the memory as den does when it runs as root: as the
// computer's root, on a thread of its own.
func BenchmarkTurnKnowledge(b *testing.B) {
	dir := b.TempDir()
	st, err := store.Open(filepath.Join(dir, "den.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	skills := filepath.Join(dir, "agents", "default", "skills")
	for i := range 200 {
		d := filepath.Join(skills, fmt.Sprintf("skill-%03d", i))
		os.MkdirAll(filepath.Join(d, "scripts"), 0o755)
		os.WriteFile(filepath.Join(d, "SKILL.md"), []byte(fmt.Sprintf("---\nname: skill-%03d\ndescription: %s\n---\n\n%s",
			i, strings.Repeat("Does one thing well; use it when asked. ", 5), strings.Repeat("Step by step.\n", 100))), 0o644)
		os.WriteFile(filepath.Join(d, "scripts", "run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o755)
	}
	mem := filepath.Join(dir, "agents", "default", "memory")
	os.MkdirAll(mem, 0o755)
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.Local)
	size := 0
	for day := 0; size < 1<<20; day++ {
		at := now.AddDate(0, 0, -day)
		var log strings.Builder
		fmt.Fprintf(&log, "# %s\n", at.Format("2006-01-02"))
		for e := range 8 {
			fmt.Fprintf(&log, "\n<!-- den: %s session=s%d message=m%d -->\nEntry %d of the day: the user mentioned the garden, the piano and a trip to Porto.\n",
				at.Add(time.Duration(e)*time.Minute).Format(time.RFC3339), day, e, e)
		}
		os.WriteFile(filepath.Join(mem, memory.LogName(at, time.Local)), []byte(log.String()), 0o644)
		size += log.Len()
	}
	global := strings.Repeat("- A lasting fact about the user and their work.\n", 400)
	os.WriteFile(filepath.Join(mem, memory.Global), []byte(global), 0o644)
	for _, as := range []struct {
		name string
		id   *hostfs.Identity
	}{{"as-den", nil}, {"as-root", &hostfs.Identity{UID: 65534, GID: 65534}}} {
		b.Run(as.name, func(b *testing.B) {
			if as.id != nil && os.Geteuid() != 0 {
				b.Skip("reading as another user needs root")
			}
			cat, err := skill.Open(skill.Options{Dir: skills})
			if err != nil {
				b.Fatal(err)
			}
			book := &memory.Book{Agent: "default", Dir: mem, Index: st, As: as.id}
			ctx := context.Background()
			turn := func() {
				idx, err := cat.Prompt("s1", 200_000, now)
				if err != nil || !strings.Contains(idx, "skill-") {
					b.Fatal(err)
				}
				p, err := book.Prompt(now, memory.PromptBudget(200_000))
				if err != nil || !strings.Contains(p, "Porto") {
					b.Fatal(err)
				}
			}
			turn()
			if _, err := book.Sync(ctx); err != nil { // the first search indexes everything
				b.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
			for b.Loop() {
				turn()
			}
		})
	}
	b.Run("sync", func(b *testing.B) {
		book := &memory.Book{Agent: "default", Dir: mem, Index: st}
		ctx := context.Background()
		if _, err := book.Sync(ctx); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := book.Sync(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
