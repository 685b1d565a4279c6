package skill

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/hostfs"
)

// State is what den makes of a skill folder now.
type State string

// States. Only Installed and Agent skills are used.
const (
	Installed State = "installed" // installed by den, files as installed
	Agent     State = "agent"     // made by the agent, nothing of high severity found
	Changed   State = "changed"   // installed, but its files changed since: not used until accepted
	Flagged   State = "flagged"   // made by the agent, with high findings: not used until accepted
	Disabled  State = "disabled"  // turned off, everywhere or in the session asked about
	Missing   State = "missing"   // installed, but its folder is gone
	Invalid   State = "invalid"   // not a skill den can use: see Problem
)

// An Entry is one skill as the catalog sees it now.
type Entry struct {
	Name  string
	State State
	// Problem says why a skill is Invalid, Changed or Missing.
	Problem string
	// Manifest is the skill's SKILL.md, nil when it could not be read.
	Manifest *Manifest
	// Record is what den keeps of the skill; nil only for a folder den
	// cannot record (its name is not a skill name).
	Record *Record
	// Hash is the content hash of the files now, "" when den could not
	// read them all.
	Hash string
	// Findings are the scan's findings in the files now.
	Findings []Finding
}

// Usable reports whether the skill may be offered to the model: an
// installed skill unchanged, or one the agent made without high
// findings (or accepted with them), enabled in the session the catalog
// was listed for.
func (e Entry) Usable() bool { return e.State == Installed || e.State == Agent }

// Options say where an agent's skills live.
type Options struct {
	// Dir is the skills folder on the host, DATA/agents/AGENT/skills,
	// which the agent's computer sees at /den/skills and can change.
	Dir string
	// StateDir is where den keeps the lock file (skills.lock) and the
	// pristine copies of installed skills (skills.pristine/), out of
	// the computer's reach; "" is Dir's parent.
	StateDir string
	// Owner is who files den writes in Dir must belong to: the
	// computer's root. nil leaves them den's.
	Owner *hostfs.Owner
	// Limits bound what den reads; zero fields take DefaultLimits.
	Limits Limits
}

// Files of the state folder.
const (
	LockFile    = "skills.lock"
	PristineDir = "skills.pristine"
)

// GuestDir is where the computer sees the skills folder.
const GuestDir = "/den/skills"

// maxSkills bounds the entries of the skills folder den looks at.
const maxSkills = 1000

// A Catalog is one agent's skills. Its methods are safe for concurrent
// use; changes to the lock file are serialized between processes too,
// by a lock on the pristine folder. A Catalog keeps in memory what it
// last verified of each skill, so that listing skills whose files have
// not changed reads no file; hold one per agent for as long as the
// agent runs.
type Catalog struct {
	dir      string
	lockPath string
	pristine string
	owner    *hostfs.Owner
	lim      Limits

	mu        sync.Mutex
	lock      *lockFile // the lock file as last read, never changed in place
	lockStamp lockStamp
	seen      map[string]*verified // by folder name
}

// Open returns the catalog of the skills in o.Dir, making the state
// folder and its pristine folder when missing. The skills folder itself
// is made when a skill is first installed.
func Open(o Options) (*Catalog, error) {
	if o.Dir == "" {
		return nil, errors.New("skill: no skills folder")
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("skill: %w", err)
	}
	state := o.StateDir
	if state == "" {
		state = filepath.Dir(dir)
	}
	c := &Catalog{
		dir:      dir,
		lockPath: filepath.Join(state, LockFile),
		pristine: filepath.Join(state, PristineDir),
		owner:    o.Owner,
		lim:      o.Limits.orDefault(),
		seen:     map[string]*verified{},
	}
	if err := os.MkdirAll(c.pristine, 0o700); err != nil {
		return nil, fmt.Errorf("skill: open: %w", err)
	}
	return c, nil
}

// Dir is the skills folder on the host.
func (c *Catalog) Dir() string { return c.dir }

// LockPath is the lock file's path.
func (c *Catalog) LockPath() string { return c.lockPath }

// readLock returns the lock file, read again only when it has changed
// since the last read. Callers hold c.mu and must not change it.
func (c *Catalog) readLock() (*lockFile, error) {
	var st unix.Stat_t
	if err := unix.Stat(c.lockPath, &st); err == nil && c.lock != nil && stampOf(&st) == c.lockStamp {
		return c.lock, nil
	}
	l, stamp, err := readLock(c.lockPath)
	if err != nil {
		return nil, err
	}
	c.lock, c.lockStamp = l, stamp
	return l, nil
}

// update changes the lock file under the lock between processes: fn
// gets the file as it is now and reports whether it changed it.
// Callers hold c.mu.
func (c *Catalog) update(fn func(l *lockFile) (bool, error)) error {
	release, err := flock(c.pristine)
	if err != nil {
		return err
	}
	defer release()
	l, _, err := readLock(c.lockPath)
	if err != nil {
		return err
	}
	changed, err := fn(l)
	if err != nil || !changed {
		return err
	}
	if err := writeLock(c.lockPath, l); err != nil {
		return err
	}
	c.lock = nil // read again next time
	return nil
}

// openSkills opens the skills folder; nil when there is none yet.
func (c *Catalog) openSkills() (*hostfs.Dir, error) {
	d, err := hostfs.OpenDirNamed(c.dir, GuestDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("skill: %w", err)
	}
	return d, nil
}

// ensureSkills opens the skills folder, making it (given to the
// computer's root) when missing.
func (c *Catalog) ensureSkills() (*hostfs.Dir, error) {
	parent := filepath.Dir(c.dir)
	// As package computer makes an agent's folders.
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("skill: %w", err)
	}
	p, err := hostfs.OpenDir(parent)
	if err != nil {
		return nil, fmt.Errorf("skill: %w", err)
	}
	defer p.Close()
	d, _, err := p.Mkdir(filepath.Base(c.dir), 0o755, c.owner)
	if err != nil {
		return nil, fmt.Errorf("skill: %w", err)
	}
	d.Close()
	return c.openSkills()
}

// List returns every skill folder's entry, sorted by name, and every
// installed skill whose folder is gone, as seen from session: a skill
// disabled there is Disabled. A folder den has no record of is the
// agent's: den records it with session, now and the scan's findings
// the first time it sees it, and scans it again whenever it changes.
// Hidden entries (a name starting with ".") are not skills and are left
// out. A malformed skill is an Invalid entry, never an error; List
// fails only when the lock file cannot be read or written, or the
// skills folder cannot be listed.
func (c *Catalog) List(session string, now time.Time) ([]Entry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.list(session, now)
}

func (c *Catalog) list(session string, now time.Time) ([]Entry, error) {
	lock, err := c.readLock()
	if err != nil {
		return nil, err
	}
	d, err := c.openSkills()
	if err != nil {
		return nil, err
	}
	var folders []hostfs.Entry
	if d != nil {
		defer d.Close()
		var more bool
		folders, more, err = d.List(maxSkills)
		if err != nil {
			return nil, fmt.Errorf("skill: %w", err)
		}
		if more {
			return nil, fmt.Errorf("skill: %s %w: more than %d entries", GuestDir, ErrTooLarge, maxSkills)
		}
	}
	start := time.Now()
	var entries []Entry
	var changes []func(*lockFile) bool
	present := map[string]bool{}
	for _, f := range folders {
		if strings.HasPrefix(f.Name, ".") {
			continue
		}
		present[f.Name] = true
		rec := lock.Skills[f.Name]
		v := c.verify(d, f, rec, start)
		e, change := judge(f.Name, rec, v, session, now)
		entries = append(entries, e)
		if change != nil {
			changes = append(changes, change)
		}
	}
	for name, rec := range lock.Skills {
		if present[name] {
			continue
		}
		if rec.Origin == OriginAgent {
			// The agent removed its own skill: forget it.
			changes = append(changes, func(l *lockFile) bool {
				if r := l.Skills[name]; r != nil && r.Origin == OriginAgent {
					delete(l.Skills, name)
					return true
				}
				return false
			})
			continue
		}
		e := Entry{Name: name, State: Missing, Record: rec.clone(), Findings: slices.Clone(rec.Findings),
			Problem: "its folder is gone from " + GuestDir + "; den skills restore puts it back"}
		entries = append(entries, e)
	}
	for name := range c.seen {
		if !present[name] {
			delete(c.seen, name)
		}
	}
	if len(changes) > 0 {
		err := c.update(func(l *lockFile) (bool, error) {
			changed := false
			for _, fn := range changes {
				changed = fn(l) || changed
			}
			return changed, nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return entries, nil
}

// judge makes the entry of a skill folder from what verify found and
// its record, and returns the change to the lock file it calls for, if
// any.
func judge(name string, rec *Record, v *verified, session string, now time.Time) (Entry, func(*lockFile) bool) {
	e := Entry{Name: name, Manifest: v.manifest, Hash: v.hash, Findings: v.findings}
	if rec != nil {
		e.Record = rec.clone()
	}
	if v.badName {
		e.State, e.Problem = Invalid, v.problem
		return e, nil
	}
	var change func(*lockFile) bool
	switch {
	case rec == nil:
		// New to den: the agent's, first seen in this session.
		r := &Record{Origin: OriginAgent, Session: session, Hash: v.hash, Installed: now, Updated: now, Enabled: true, Findings: v.findings}
		e.Record = r.clone()
		change = func(l *lockFile) bool {
			if l.Skills[name] != nil {
				return false
			}
			l.Skills[name] = r
			return true
		}
	case rec.Origin == OriginAgent && rec.Hash != v.hash:
		// The agent changed its skill: keep the new scan.
		e.Record.Hash, e.Record.Findings, e.Record.Updated = v.hash, v.findings, now
		hash, findings := v.hash, v.findings
		change = func(l *lockFile) bool {
			r := l.Skills[name]
			if r == nil || r.Origin != OriginAgent || r.Hash == hash {
				return false
			}
			r.Hash, r.Findings, r.Updated = hash, findings, now
			return true
		}
	}
	if rec != nil && v.hash == rec.Hash {
		// As recorded: the recorded scan's findings.
		e.Findings = slices.Clone(rec.Findings)
	}
	installed := e.Record.Origin == OriginInstalled
	switch {
	case installed && v.problem != "":
		e.State, e.Problem = Changed, v.problem
	case installed && v.hash != e.Record.Hash:
		e.State, e.Problem = Changed, "its files differ from those installed: den skills diff shows how"
	case v.problem != "" || v.invalid != "":
		e.State, e.Problem = Invalid, cmp.Or(v.problem, v.invalid)
	case !installed && Highest(e.Findings) >= High && e.Record.Accepted != v.hash:
		e.State, e.Problem = Flagged, "the scan found something of high severity: den skills show lists it, den skills accept allows it"
	case e.Record.DisabledIn(session):
		e.State = Disabled
	case installed:
		e.State = Installed
	default:
		e.State = Agent
	}
	return e, change
}

// verified is what den last found in one skill folder.
type verified struct {
	root  node   // the folder itself, as the skills folder's listing showed it
	nodes []node // as walked before reading; nil when unreadable
	// stable is whether every node's change time was far enough in the
	// past for the nodes to vouch for the content (see verify).
	stable   bool
	hash     string
	manifest *Manifest
	findings []Finding // of the files with hash, when scanned
	scanned  bool
	badName  bool   // the folder's name is not a skill name
	problem  string // why den could not read every file
	invalid  string // why the files are not a valid skill
}

// racyWindow is how recent a change time must be for den not to trust
// it: the kernel keeps file times at the granularity of its clock tick
// (at most 10 ms), so a file written again within the same tick as its
// last change keeps the same change time. A node changed that recently
// may change again unseen; den reads such a skill again next time
// rather than trust its stamps (git's "racily clean" entries).
const racyWindow = 100 * time.Millisecond

// verify finds what is in the skill folder f of d now. When the folder
// and every file and folder in it are as they were the last time (same
// inode, size, change and modification times, and mode) and those times
// were stable then, it reads nothing and returns what it found then.
// Comparing the entries den knows of is enough: an entry added to,
// removed from or renamed in a folder changes the folder's times.
// Otherwise it walks the folder, reads the files, hashes them, parses
// SKILL.md and, when the hash is not the recorded one, scans them.
func (c *Catalog) verify(d *hostfs.Dir, f hostfs.Entry, rec *Record, start time.Time) *verified {
	if err := ValidName(f.Name); err != nil {
		return &verified{badName: true, problem: fmt.Sprintf("the folder's %v", err)}
	}
	if !f.Mode.IsDir() {
		return &verified{problem: fmt.Sprintf("%s/%s is %s, not a folder", GuestDir, f.Name, kindOf(node{mode: f.Mode, target: f.Target}))}
	}
	root := node{path: ".", mode: f.Mode, size: f.Size, inode: f.Inode, ctime: f.ChangeTime, mtime: f.ModTime}
	sub, err := d.Sub(f.Name)
	if err != nil {
		return &verified{problem: err.Error()}
	}
	defer sub.Close()
	if old := c.seen[f.Name]; old != nil && old.stable && old.root.sameAs(root) && unchanged(sub, old.nodes) {
		if !old.scanned && (rec == nil || rec.Hash != old.hash) {
			// Verified against a record that has changed since.
			c.scan(old, sub)
		}
		return old
	}
	nodes, err := walk(sub, c.lim, nil)
	if err != nil {
		return &verified{problem: fmt.Sprintf("%s/%s: %v", GuestDir, f.Name, err)}
	}
	if err := irregular(nodes); err != nil {
		return &verified{nodes: nodes, problem: fmt.Sprintf("%s/%s: %v", GuestDir, f.Name, err)}
	}
	v := &verified{root: root, nodes: nodes, stable: !root.ctime.After(start.Add(-racyWindow))}
	for _, n := range nodes {
		if n.ctime.After(start.Add(-racyWindow)) {
			v.stable = false
		}
	}
	files, err := read(sub, nodes, c.lim)
	if err != nil {
		v.problem = fmt.Sprintf("%s/%s: %v", GuestDir, f.Name, err)
		return v
	}
	v.hash = Hash(files)
	v.manifest, v.invalid = manifestOf(f.Name, files, c.lim)
	if rec == nil || rec.Hash != v.hash {
		v.findings, v.scanned = Scan(files), true
	}
	c.seen[f.Name] = v
	return v
}

// scan reads and scans a skill verified before without a scan.
func (c *Catalog) scan(v *verified, sub *hostfs.Dir) {
	files, err := read(sub, v.nodes, c.lim)
	if err != nil {
		return
	}
	v.findings, v.scanned = Scan(files), true
}

// manifestOf parses name's SKILL.md among files, and checks that it
// names the folder it is in.
func manifestOf(name string, files []File, lim Limits) (*Manifest, string) {
	i := slices.IndexFunc(files, func(f File) bool { return f.Path == ManifestFile })
	if i < 0 {
		return nil, fmt.Sprintf("%s/%s has no %s", GuestDir, name, ManifestFile)
	}
	m, err := Parse(files[i].Data, lim.ManifestSize)
	if err != nil {
		return nil, fmt.Sprintf("%s/%s/%v", GuestDir, name, err)
	}
	if m.Name != name {
		return &m, fmt.Sprintf("%s/%s/%s names the skill %q: a skill's folder must bear its name", GuestDir, name, ManifestFile, m.Name)
	}
	return &m, ""
}

// unchanged reports whether every one of nodes is still in d as it
// was, by Lstat: one fstatat for an entry at the top, an openat2 of its
// folder more for one deeper.
func unchanged(d *hostfs.Dir, nodes []node) bool {
	for _, n := range nodes {
		e, err := d.Lstat(n.path)
		if err != nil {
			return false
		}
		now := node{path: n.path, mode: e.Mode, size: e.Size, inode: e.Inode, ctime: e.ChangeTime, mtime: e.ModTime, target: e.Target}
		if !now.sameAs(n) {
			return false
		}
	}
	return true
}

// ManifestOf returns the name of the skill whose SKILL.md is at p, a
// path in the computer: /den/skills/NAME/SKILL.md. The agent loop calls
// MarkUsed with it when the model reads that file. ok is false for any
// other path.
func ManifestOf(p string) (name string, ok bool) {
	p = path.Clean(p)
	rest, found := strings.CutPrefix(p, GuestDir+"/")
	if !found {
		return "", false
	}
	name, file, found := strings.Cut(rest, "/")
	if !found || file != ManifestFile || ValidName(name) != nil {
		return "", false
	}
	return name, true
}
