package skill

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// An ImportResult is what Import did with one folder.
type ImportResult struct {
	Dir       string // the skill's folder, or the folder Import was given
	Name      string // the skill's name, "" when it has none den could read
	Installed bool
	// Reason says why the folder was skipped.
	Reason   string
	Findings []Finding
}

// ImportOptions say what an import may do.
type ImportOptions struct {
	// Force replaces skills of the same name and installs skills with
	// high findings, as InstallOptions' Replace and AllowHigh do.
	Force  bool
	Limits Limits
}

// Import installs, as from a folder, every skill in each of dirs: dir
// itself when it holds a SKILL.md, else each folder in it (following
// links to them, for these are the user's own folders; hidden ones left
// out). Each skill is fetched, scanned and installed on its own: one
// that fails is reported with the reason and skipped. A dir that does
// not exist is reported as such.
func (c *Catalog) Import(ctx context.Context, dirs []string, o ImportOptions, now time.Time) []ImportResult {
	var out []ImportResult
	for _, dir := range dirs {
		folders, err := skillFolders(dir)
		if err != nil {
			out = append(out, ImportResult{Dir: dir, Reason: err.Error()})
			continue
		}
		for _, f := range folders {
			out = append(out, c.importOne(ctx, f, o, now))
		}
	}
	return out
}

// skillFolders lists the folders Import takes skills from in dir.
func skillFolders(dir string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err == nil {
		return []string{dir}, nil
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("no such folder")
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (c *Catalog) importOne(ctx context.Context, dir string, o ImportOptions, now time.Time) ImportResult {
	r := ImportResult{Dir: dir}
	if _, err := os.Stat(filepath.Join(dir, ManifestFile)); err != nil {
		r.Reason = fmt.Sprintf("no %s in it", ManifestFile)
		return r
	}
	bundles, err := Fetch(ctx, dir, FetchOptions{Limits: o.Limits})
	if err != nil {
		r.Reason = strings.TrimPrefix(err.Error(), "skill: ")
		return r
	}
	b := bundles[0]
	r.Name, r.Findings = b.Name(), b.Findings
	if err := c.Install(b, InstallOptions{Replace: o.Force, AllowHigh: o.Force}, now); err != nil {
		r.Reason = strings.TrimPrefix(err.Error(), "skill: ")
		return r
	}
	r.Installed = true
	return r
}
