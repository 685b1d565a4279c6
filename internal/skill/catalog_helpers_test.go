package skill

import (
	"path/filepath"
	"testing"
)

// newCatalog opens a catalog in a temporary agent folder: skills in
// AGENT/skills, state in AGENT.
func newCatalog(t testing.TB, lim Limits) *Catalog {
	t.Helper()
	agent := filepath.Join(t.TempDir(), "agents", "default")
	c, err := Open(Options{Dir: filepath.Join(agent, "skills"), Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// install fetches and installs the skill in src.
func install(t testing.TB, c *Catalog, src string) *Bundle {
	t.Helper()
	b := fetchOne(t, src, FetchOptions{})
	if err := c.Install(b, InstallOptions{}, now); err != nil {
		t.Fatal(err)
	}
	return b
}

// list lists c from session s1, failing the test on an error.
func list(t testing.TB, c *Catalog) map[string]Entry {
	t.Helper()
	entries, err := c.List("s1", now)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]Entry{}
	for _, e := range entries {
		out[e.Name] = e
	}
	return out
}
