package skill

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"den.dev/den/internal/hostfs"
)

// InstallOptions say what an install may do.
type InstallOptions struct {
	// Replace installs over a skill of the same name (installed, or
	// the agent's); without it that is ErrExists.
	Replace bool
	// AllowHigh installs a skill despite high findings; without it
	// that is ErrFlagged.
	AllowHigh bool
}

// Install installs b: a pristine copy of its files in the state folder,
// its record in the lock file, and its files in the skills folder,
// given to the computer's root. Replacing a skill keeps its use counts
// and whether it is enabled. On an error the skills folder may lack
// the skill, which List then reports Missing and Restore brings back.
func (c *Catalog) Install(b *Bundle, o InstallOptions, now time.Time) error {
	name := b.Name()
	if err := ValidName(name); err != nil {
		return fmt.Errorf("skill: install: %w", err)
	}
	if h := CountHigh(b.Findings); h > 0 && !o.AllowHigh {
		return fmt.Errorf("skill: install %s: it %w (%d): den skills install --force installs it anyway", name, ErrFlagged, h)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	d, err := c.ensureSkills()
	if err != nil {
		return err
	}
	defer d.Close()
	err = c.update(func(l *lockFile) (bool, error) {
		old := l.Skills[name]
		if !o.Replace {
			if old != nil {
				return false, fmt.Errorf("skill: install %s: a skill of that name %w (%s): replace it with --force, or update it", name, ErrExists, old.Origin)
			}
			if _, err := d.Lstat(name); err == nil {
				return false, fmt.Errorf("skill: install %s: %s/%s %w: replace it with --force", name, GuestDir, name, ErrExists)
			}
		}
		if err := c.writePristine(name, b.Files); err != nil {
			return false, err
		}
		r := &Record{Origin: OriginInstalled, Source: &b.Source, Commit: b.Commit, Hash: b.Hash,
			Installed: now, Updated: now, Enabled: true, Findings: b.Findings}
		if old != nil {
			r.Enabled, r.DisabledSessions, r.LastUsed, r.Uses = old.Enabled, old.DisabledSessions, old.LastUsed, old.Uses
			if old.Origin == OriginInstalled {
				r.Installed = old.Installed
			}
		}
		l.Skills[name] = r
		return true, nil
	})
	if err != nil {
		return err
	}
	delete(c.seen, name)
	return c.place(d, name, b.Files)
}

// place puts files in the skills folder d as the skill name, in place
// of whatever is there.
func (c *Catalog) place(d *hostfs.Dir, name string, files []File) error {
	if err := removeTree(d, name); err != nil {
		return fmt.Errorf("skill: %s: %w", name, err)
	}
	if err := writeTree(d, name, files, c.owner, false); err != nil {
		return fmt.Errorf("skill: %s: %w", name, err)
	}
	return nil
}

// CountHigh counts the findings of high severity: those that keep a
// skill from being offered until a person allows it.
func CountHigh(findings []Finding) int {
	n := 0
	for _, f := range findings {
		if f.Severity >= High {
			n++
		}
	}
	return n
}

// writePristine replaces the pristine copy of name with files: written
// beside it under a temporary name, then renamed into place.
func (c *Catalog) writePristine(name string, files []File) error {
	p, err := hostfs.OpenDir(c.pristine)
	if err != nil {
		return fmt.Errorf("skill: %w", err)
	}
	defer p.Close()
	tmp := ".new-" + name + "-" + rand.Text()
	if err := writeTree(p, tmp, files, nil, true); err != nil {
		os.RemoveAll(filepath.Join(c.pristine, tmp))
		return fmt.Errorf("skill: keep a pristine copy of %s: %w", name, err)
	}
	old := filepath.Join(c.pristine, ".old-"+name+"-"+rand.Text())
	dst := filepath.Join(c.pristine, name)
	if err := os.Rename(dst, old); err != nil && !errors.Is(err, fs.ErrNotExist) {
		os.RemoveAll(filepath.Join(c.pristine, tmp))
		return fmt.Errorf("skill: keep a pristine copy of %s: %w", name, err)
	}
	if err := os.Rename(filepath.Join(c.pristine, tmp), dst); err != nil {
		return fmt.Errorf("skill: keep a pristine copy of %s: %w", name, err)
	}
	os.RemoveAll(old)
	return nil
}

// readPristine reads the pristine copy of name.
func (c *Catalog) readPristine(name string) ([]File, error) {
	d, err := hostfs.OpenDir(filepath.Join(c.pristine, name))
	if err != nil {
		return nil, fmt.Errorf("skill: pristine copy of %s: %w", name, err)
	}
	defer d.Close()
	files, err := readTree(d, c.lim)
	if err != nil {
		return nil, fmt.Errorf("skill: pristine copy of %s: %w", name, err)
	}
	return files, nil
}

// record returns name's record as the lock file has it now.
func (c *Catalog) record(name string) (*Record, error) {
	l, err := c.readLock()
	if err != nil {
		return nil, err
	}
	r := l.Skills[name]
	if r == nil {
		return nil, fmt.Errorf("skill: %s %w: den has no record of it", name, ErrNotFound)
	}
	return r.clone(), nil
}

// Remove removes the skill name: its folder in the skills folder, its
// pristine copy and its record.
func (c *Catalog) Remove(name string) error {
	if err := ValidName(name); err != nil {
		return fmt.Errorf("skill: remove: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	d, err := c.openSkills()
	if err != nil {
		return err
	}
	found := false
	if d != nil {
		defer d.Close()
		if _, err := d.Lstat(name); err == nil {
			found = true
			if err := removeTree(d, name); err != nil {
				return fmt.Errorf("skill: remove %s: %w", name, err)
			}
		}
	}
	err = c.update(func(l *lockFile) (bool, error) {
		if l.Skills[name] == nil {
			return false, nil
		}
		found = true
		delete(l.Skills, name)
		return true, nil
	})
	if err != nil {
		return err
	}
	if err := os.RemoveAll(filepath.Join(c.pristine, name)); err != nil {
		return fmt.Errorf("skill: remove %s: %w", name, err)
	}
	delete(c.seen, name)
	if !found {
		return fmt.Errorf("skill: remove %s: %w", name, ErrNotFound)
	}
	return nil
}

// SetEnabled enables or disables the skill name: everywhere when
// session is "", else in that session only. Enabling it everywhere
// also enables it in every session it was disabled in.
func (c *Catalog) SetEnabled(name, session string, enabled bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.update(func(l *lockFile) (bool, error) {
		r := l.Skills[name]
		if r == nil {
			return false, fmt.Errorf("skill: %s %w: den has no record of it (den skills list shows the skills)", name, ErrNotFound)
		}
		switch {
		case session == "" && enabled:
			r.Enabled, r.DisabledSessions = true, nil
		case session == "":
			r.Enabled = false
		case enabled:
			r.DisabledSessions = slices.DeleteFunc(r.DisabledSessions, func(s string) bool { return s == session })
		case !slices.Contains(r.DisabledSessions, session):
			r.DisabledSessions = append(r.DisabledSessions, session)
		}
		return true, nil
	})
}

// MarkUsed records a use of the skill name at now: the model read its
// SKILL.md, or the user called it by name. Uses rank skills in the
// index. A skill den has no record of is ErrNotFound.
func (c *Catalog) MarkUsed(name string, now time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.update(func(l *lockFile) (bool, error) {
		r := l.Skills[name]
		if r == nil {
			return false, fmt.Errorf("skill: %s %w", name, ErrNotFound)
		}
		r.Uses++
		r.LastUsed = now
		return true, nil
	})
}

// current reads the skill name's files in the skills folder now.
func (c *Catalog) current(name string) ([]File, error) {
	sub, err := c.openSkill(name)
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	files, err := readTree(sub, c.lim)
	if err != nil {
		return nil, fmt.Errorf("skill: %s/%s: %w", GuestDir, name, err)
	}
	return files, nil
}

// Accept trusts the skill name's files as they are now. For an
// installed skill that changed, they become its pristine copy and its
// recorded hash; for one the agent made with high findings, their hash
// is recorded as accepted, and the skill is used until it changes
// again. Files den refuses to read (a link, say) cannot be accepted:
// Restore or remove them first.
func (c *Catalog) Accept(name string, now time.Time) (Entry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, err := c.record(name)
	if err != nil {
		return Entry{}, err
	}
	files, err := c.current(name)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: den skills restore puts back the installed files", err)
	}
	hash := Hash(files)
	if _, problem := manifestOf(name, files, c.lim); problem != "" {
		return Entry{}, fmt.Errorf("skill: accept %s: %s", name, problem)
	}
	switch {
	case rec.Origin == OriginInstalled && hash == rec.Hash:
		return Entry{}, fmt.Errorf("skill: accept %s: it has not changed since it was installed: accepting %w", name, ErrState)
	case rec.Origin == OriginAgent && rec.Accepted == hash:
		return Entry{}, fmt.Errorf("skill: accept %s: it is already accepted as it is: accepting %w", name, ErrState)
	}
	findings := Scan(files)
	if rec.Origin == OriginInstalled {
		if err := c.writePristine(name, files); err != nil {
			return Entry{}, err
		}
	}
	err = c.update(func(l *lockFile) (bool, error) {
		r := l.Skills[name]
		if r == nil || r.Origin != rec.Origin {
			return false, fmt.Errorf("skill: accept %s: its record changed meanwhile; try again", name)
		}
		r.Hash, r.Findings, r.Updated = hash, findings, now
		if r.Origin == OriginAgent {
			r.Accepted = hash
		}
		return true, nil
	})
	if err != nil {
		return Entry{}, err
	}
	delete(c.seen, name)
	return c.entry(name, "", now)
}

// Restore puts the pristine copy of the installed skill name back in
// the skills folder, in place of whatever is there.
func (c *Catalog) Restore(name string, now time.Time) (Entry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, err := c.record(name)
	if err != nil {
		return Entry{}, err
	}
	if rec.Origin != OriginInstalled {
		return Entry{}, fmt.Errorf("skill: restore %s: the agent made it, so den has no pristine copy: restoring %w", name, ErrState)
	}
	files, err := c.readPristine(name)
	if err != nil {
		return Entry{}, err
	}
	if h := Hash(files); h != rec.Hash {
		return Entry{}, fmt.Errorf("skill: restore %s: the pristine copy's hash is %s, not the recorded %s: reinstall it", name, h, rec.Hash)
	}
	d, err := c.ensureSkills()
	if err != nil {
		return Entry{}, err
	}
	defer d.Close()
	delete(c.seen, name)
	if err := c.place(d, name, files); err != nil {
		return Entry{}, err
	}
	return c.entry(name, "", now)
}

// Get returns the entry of the skill name, as List would from session.
func (c *Catalog) Get(name, session string, now time.Time) (Entry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.entry(name, session, now)
}

func (c *Catalog) entry(name, session string, now time.Time) (Entry, error) {
	entries, err := c.list(session, now)
	if err != nil {
		return Entry{}, err
	}
	for _, e := range entries {
		if e.Name == name {
			return e, nil
		}
	}
	return Entry{}, fmt.Errorf("skill: %s %w", name, ErrNotFound)
}

// Diff compares the installed skill name's pristine files with those in
// the skills folder now. Entries den refuses to read (a planted link,
// say) are reported as such.
func (c *Catalog) Diff(name string) ([]FileDiff, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rec, err := c.record(name)
	if err != nil {
		return nil, err
	}
	if rec.Origin != OriginInstalled {
		return nil, fmt.Errorf("skill: diff %s: the agent made it, so den has no pristine copy to compare with: a diff %w", name, ErrState)
	}
	old, err := c.readPristine(name)
	if err != nil {
		return nil, err
	}
	d, err := c.openSkills()
	if err != nil {
		return nil, err
	}
	if d == nil {
		return Compare(old, nil), nil
	}
	defer d.Close()
	e, err := d.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return Compare(old, nil), nil
	}
	if err != nil {
		return nil, fmt.Errorf("skill: diff %s: %w", name, err)
	}
	if !e.Mode.IsDir() {
		n := node{mode: e.Mode, target: e.Target}
		return append(Compare(old, nil), FileDiff{Path: ".", Change: Planted, Note: "the skill's folder is " + kindOf(n) + ", which den neither reads nor follows"}), nil
	}
	sub, err := d.Sub(name)
	if err != nil {
		return nil, fmt.Errorf("skill: diff %s: %w", name, err)
	}
	defer sub.Close()
	nodes, err := walk(sub, c.lim, nil)
	if err != nil {
		return nil, fmt.Errorf("skill: diff %s: %w", name, err)
	}
	var regular []node
	var odd []FileDiff
	for _, n := range nodes {
		switch {
		case n.mode.IsRegular() || n.mode.IsDir():
			regular = append(regular, n)
		default:
			odd = append(odd, FileDiff{Path: n.path, Change: Planted, Note: "is " + kindOf(n) + ", which den neither reads nor follows"})
		}
	}
	now, err := read(sub, regular, c.lim)
	if err != nil {
		return nil, fmt.Errorf("skill: diff %s: %w", name, err)
	}
	out := append(Compare(old, now), odd...)
	slices.SortFunc(out, func(a, b FileDiff) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// An Update is what updating an installed skill from its source would
// change.
type Update struct {
	Name    string
	Current *Record
	Bundle  *Bundle    // the skill as its source has it now
	Diff    []FileDiff // from the installed files to the source's
}

// Same reports whether the source has the files installed.
func (u *Update) Same() bool { return u.Bundle.Hash == u.Current.Hash }

// CheckUpdate fetches the installed skill name again from its source
// (the same folder inside it, and the same git ref: a branch's newest
// commit) and compares it with the installed files. Nothing changes
// until the caller installs u.Bundle with Replace. o's Path, Ref and
// All are ignored.
func (c *Catalog) CheckUpdate(ctx context.Context, name string, o FetchOptions) (*Update, error) {
	c.mu.Lock()
	rec, err := c.record(name)
	var old []File
	if err == nil && rec.Origin == OriginInstalled {
		old, err = c.readPristine(name)
	}
	c.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if rec.Origin != OriginInstalled || rec.Source == nil {
		return nil, fmt.Errorf("skill: update %s: the agent made it, so it has no source to update from: updating %w", name, ErrState)
	}
	o.Path, o.Ref, o.All = rec.Source.Path, rec.Source.Ref, false
	bundles, err := Fetch(ctx, rec.Source.Location, o)
	if err != nil {
		return nil, err
	}
	b := bundles[0]
	if b.Name() != name {
		return nil, fmt.Errorf("skill: update %s: %s now holds a skill named %s: %w", name, rec.Source, b.Name(), ErrNotFound)
	}
	return &Update{Name: name, Current: rec, Bundle: b, Diff: Compare(old, b.Files)}, nil
}

// A FileInfo describes one entry of a skill's folder, as a walk finds
// it: not read, not followed.
type FileInfo struct {
	Path   string      `json:"path"`
	Size   int64       `json:"size"`
	Mode   fs.FileMode `json:"mode"`
	Target string      `json:"target,omitempty"` // a symbolic link's text
}

// Files describes the entries of the skill name's folder now, folders
// left out: its files, and anything else planted there.
func (c *Catalog) Files(name string) ([]FileInfo, error) {
	if err := ValidName(name); err != nil {
		return nil, fmt.Errorf("skill: %w", err)
	}
	sub, err := c.openSkill(name)
	if err != nil {
		return nil, err
	}
	defer sub.Close()
	nodes, err := walk(sub, c.lim, nil)
	if err != nil {
		return nil, fmt.Errorf("skill: %s/%s: %w", GuestDir, name, err)
	}
	var out []FileInfo
	for _, n := range nodes {
		if !n.mode.IsDir() {
			out = append(out, FileInfo{Path: n.path, Size: n.size, Mode: n.mode, Target: n.target})
		}
	}
	return out, nil
}

// openSkill opens the folder of the skill name in the skills folder.
func (c *Catalog) openSkill(name string) (*hostfs.Dir, error) {
	d, err := c.openSkills()
	if err != nil {
		return nil, err
	}
	if d == nil {
		return nil, fmt.Errorf("skill: %s/%s %w", GuestDir, name, ErrNotFound)
	}
	defer d.Close()
	sub, err := d.Sub(name)
	if err != nil {
		return nil, fmt.Errorf("skill: %w", err)
	}
	return sub, nil
}
