package skill

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// now is the tests' present.
var now = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)

// skillMD is a SKILL.md naming name.
func skillMD(name, description string) string {
	return "---\nname: " + name + "\ndescription: " + description + "\n---\n# " + name + "\n\nRead scripts/run.sh.\n"
}

// writeFiles writes files (path → content) beneath dir; a path ending
// in ".sh" is executable.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(full, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(full, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// simpleSkill writes a small skill named name in a folder of its own
// and returns the folder.
func simpleSkill(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	writeFiles(t, dir, map[string]string{
		"SKILL.md":           skillMD(name, "Does "+name+" things."),
		"scripts/run.sh":     "#!/bin/sh\necho " + name + "\n",
		"references/note.md": "# Notes\n\nNothing to see.\n",
	})
	return dir
}

// fetchOne fetches the one skill of src.
func fetchOne(t testing.TB, src string, o FetchOptions) *Bundle {
	t.Helper()
	bundles, err := Fetch(context.Background(), src, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(bundles) != 1 {
		t.Fatalf("Fetch %s: %d skills", src, len(bundles))
	}
	return bundles[0]
}
