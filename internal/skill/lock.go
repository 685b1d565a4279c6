package skill

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// Origin is who put a skill in the skills folder.
type Origin string

// Origins.
const (
	OriginInstalled Origin = "installed" // den, from a source the user named
	OriginAgent     Origin = "agent"     // the agent, from inside its computer
)

// A Record is what den keeps of one skill, outside the computer's reach.
type Record struct {
	Origin Origin `json:"origin"`
	// Session is, for a skill the agent made, the session in which den
	// first saw it.
	Session string  `json:"session,omitempty"`
	Source  *Source `json:"source,omitempty"`
	// Commit is the git commit an installed skill came from.
	Commit string `json:"commit,omitempty"`
	// Hash is the content hash of the files as installed or accepted;
	// for a skill the agent made, of the files when den last scanned
	// them.
	Hash string `json:"hash"`
	// Accepted is, for a skill the agent made, the content hash the user
	// accepted despite its findings.
	Accepted string `json:"accepted,omitempty"`
	// Installed is when den installed the skill or first saw it;
	// Updated when it last installed, accepted or rescanned it.
	Installed time.Time `json:"installed"`
	Updated   time.Time `json:"updated"`
	Enabled   bool      `json:"enabled"`
	// DisabledSessions are sessions the skill is disabled in.
	DisabledSessions []string `json:"disabled_sessions,omitempty"`
	// Findings are the scan's findings in the files with Hash.
	Findings []Finding `json:"findings,omitempty"`
	LastUsed time.Time `json:"last_used,omitzero"`
	Uses     int       `json:"uses,omitempty"`
}

// DisabledIn reports whether the skill is disabled, everywhere or in
// session.
func (r *Record) DisabledIn(session string) bool {
	return !r.Enabled || (session != "" && slices.Contains(r.DisabledSessions, session))
}

func (r *Record) clone() *Record {
	c := *r
	if r.Source != nil {
		s := *r.Source
		c.Source = &s
	}
	c.DisabledSessions = slices.Clone(r.DisabledSessions)
	c.Findings = slices.Clone(r.Findings)
	return &c
}

// lockVersion is the version of the lock file's format.
const lockVersion = 1

// lockFile is the lock file: every skill den has recorded, by name.
type lockFile struct {
	Version int                `json:"version"`
	Skills  map[string]*Record `json:"skills"`
}

// lockStamp tells one version of the lock file from another.
type lockStamp struct {
	ino   uint64
	size  int64
	mtime unix.Timespec
	ctime unix.Timespec
}

func stampOf(st *unix.Stat_t) lockStamp {
	return lockStamp{ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim}
}

// readLock reads the lock file at path; a missing one is empty.
func readLock(path string) (*lockFile, lockStamp, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &lockFile{Version: lockVersion, Skills: map[string]*Record{}}, lockStamp{}, nil
	}
	if err != nil {
		return nil, lockStamp{}, fmt.Errorf("skill: read %s: %w", path, err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, lockStamp{}, fmt.Errorf("skill: read %s: %w", path, err)
	}
	var l lockFile
	if err := json.NewDecoder(f).Decode(&l); err != nil {
		return nil, lockStamp{}, fmt.Errorf("skill: read %s: %w", path, err)
	}
	if l.Version != lockVersion {
		return nil, lockStamp{}, fmt.Errorf("skill: read %s: format version %d, den reads version %d", path, l.Version, lockVersion)
	}
	if l.Skills == nil {
		l.Skills = map[string]*Record{}
	}
	return &l, stampOf(&st), nil
}

// writeLock writes l to path atomically (a new file, synced, renamed
// into place), mode 0600.
func writeLock(path string, l *lockFile) error {
	data, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return fmt.Errorf("skill: write %s: %w", path, err)
	}
	data = append(data, '\n')
	tmp := path + ".tmp-" + rand.Text()
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("skill: write %s: %w", path, err)
	}
	_, werr := f.Write(data)
	serr := f.Sync()
	cerr := f.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("skill: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("skill: write %s: %w", path, err)
	}
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// flock holds an exclusive lock on the folder at path until release is
// called: it serializes changes to the lock file between dens.
func flock(path string) (release func(), err error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("skill: lock %s: %w", path, err)
	}
	for {
		err = unix.Flock(fd, unix.LOCK_EX)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("skill: lock %s: %w", path, err)
	}
	return func() { unix.Close(fd) }, nil
}
