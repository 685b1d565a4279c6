// Package idmap chooses the user and group ids an agent's computer runs
// as on the host, and moves a tree's owners from one mapping to another.
//
// As root, den gives its computers a range of 65536 subordinate ids of
// their own: the range of the "den" account in /etc/subuid and
// /etc/subgid when there is one, else a range recorded in the data dir
// (DATA/idmap.json), chosen once above every range in those files and
// every account's id. Root inside is the range's first id, an
// unprivileged host uid that owns nothing outside the computer.
//
// As an ordinary user, root inside is that user (the rights the user
// already has, never more), and the user's own subordinate ids, when
// /etc/subuid and /etc/subgid give it some and newuidmap and newgidmap
// are installed, map the other ids (written by those setuid helpers);
// otherwise only the user's own uid and gid are mapped.
//
// Files keep owners as host ids: a tree provisioned as root holds the
// inside ids as host ids (0 for root) until Shift moves them into the
// range, once, recorded by the caller.
package idmap

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/privfile"
	"den.dev/den/internal/sandbox"
)

// Size is the number of ids a computer gets as root: the 16-bit range
// every distribution's packages use.
const Size = 65536

// DefaultBase is where den starts looking for a free range as root:
// 0x70000000, above the ranges useradd hands out (100000 up to
// 600100000 by default) and systemd-nspawn's container ranges
// (524288–1879048191), below 2^31 (tools that read ids as signed).
const DefaultBase = 0x70000000

// RecordFile is the data dir's record of the range den chose as root.
const RecordFile = "idmap.json"

// Account is the account whose /etc/subuid and /etc/subgid entries den
// uses as root when they exist.
const Account = "den"

// Files are the system files idmap reads; the zero value means the
// real ones.
type Files struct {
	Subuid, Subgid, Passwd, Group string
	// LookPath finds newuidmap and newgidmap (exec.LookPath when nil).
	LookPath func(string) (string, error)
}

func (f Files) orDefault() Files {
	if f.Subuid == "" {
		f.Subuid = "/etc/subuid"
	}
	if f.Subgid == "" {
		f.Subgid = "/etc/subgid"
	}
	if f.Passwd == "" {
		f.Passwd = "/etc/passwd"
	}
	if f.Group == "" {
		f.Group = "/etc/group"
	}
	if f.LookPath == nil {
		f.LookPath = lookSbin
	}
	return f
}

// For returns the map den uses for its computers under dataDir, as the
// user den runs as.
func For(dataDir string) (sandbox.IDMap, error) {
	if os.Geteuid() == 0 {
		return ForRoot(dataDir, Files{})
	}
	u, err := user.Current()
	name := ""
	if err == nil {
		name = u.Username
	}
	return ForUser(os.Getuid(), os.Getgid(), name, Files{})
}

// record is DATA/idmap.json.
type record struct {
	UID     uint32    `json:"uid"`
	GID     uint32    `json:"gid"`
	Count   uint32    `json:"count"`
	Created time.Time `json:"created"`
}

// ForRoot returns root's map: the den account's subordinate range, else
// the recorded one, else a new range, recorded.
func ForRoot(dataDir string, f Files) (sandbox.IDMap, error) {
	f = f.orDefault()
	subuid, err := readSubIDs(f.Subuid)
	if err != nil {
		return sandbox.IDMap{}, err
	}
	subgid, err := readSubIDs(f.Subgid)
	if err != nil {
		return sandbox.IDMap{}, err
	}
	if u, ok := entryFor(subuid, Account, f.Passwd, Size); ok {
		if g, ok := entryFor(subgid, Account, f.Passwd, Size); ok {
			return rangeMap(u.start, g.start, Size, f.Subuid+" ("+Account+")"), nil
		}
	}
	path := filepath.Join(dataDir, RecordFile)
	if b, err := os.ReadFile(path); err == nil {
		var r record
		if err := json.Unmarshal(b, &r); err != nil || r.Count != Size || r.UID == 0 || r.GID == 0 {
			return sandbox.IDMap{}, fmt.Errorf("idmap: %s is damaged (%v): restore it, or the computers' files no longer match their ids", path, err)
		}
		return rangeMap(r.UID, r.GID, Size, "den's range, "+path), nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return sandbox.IDMap{}, fmt.Errorf("idmap: %w", err)
	}
	used, err := usedIDs(f, subuid, subgid)
	if err != nil {
		return sandbox.IDMap{}, err
	}
	base, ok := freeRange(used, DefaultBase)
	if !ok {
		return sandbox.IDMap{}, errors.New("idmap: no free range of 65536 ids below 2^31: give the den account one in /etc/subuid and /etc/subgid")
	}
	r := record{UID: base, GID: base, Count: Size, Created: time.Now().UTC()}
	b, _ := json.MarshalIndent(r, "", "  ")
	created, err := privfile.Create(path, append(b, '\n'))
	if err != nil {
		return sandbox.IDMap{}, fmt.Errorf("idmap: record %s: %w", path, err)
	}
	if !created {
		return ForRoot(dataDir, f) // another den recorded one first
	}
	return rangeMap(base, base, Size, "den's range, "+path), nil
}

func rangeMap(uid, gid, n uint32, source string) sandbox.IDMap {
	return sandbox.IDMap{
		UIDs:   []sandbox.IDRange{{Inside: 0, Host: uid, Count: n}},
		GIDs:   []sandbox.IDRange{{Inside: 0, Host: gid, Count: n}},
		Source: source,
	}
}

// ForUser returns an ordinary user's map: root inside is the user; its
// subordinate ids, if it has some and the helpers are installed, are
// ids 1 and up.
func ForUser(uid, gid int, name string, f Files) (sandbox.IDMap, error) {
	f = f.orDefault()
	m := sandbox.IDMap{
		UIDs:   []sandbox.IDRange{{Inside: 0, Host: uint32(uid), Count: 1}},
		GIDs:   []sandbox.IDRange{{Inside: 0, Host: uint32(gid), Count: 1}},
		Source: "your own uid and gid only (no subordinate ids in /etc/subuid and /etc/subgid)",
	}
	subuid, err := readSubIDs(f.Subuid)
	if err != nil {
		return m, nil // unreadable: as without
	}
	subgid, err := readSubIDs(f.Subgid)
	if err != nil {
		return m, nil
	}
	u, uok := entryForUser(subuid, name, uid)
	g, gok := entryForUser(subgid, name, uid)
	if !uok || !gok {
		return m, nil
	}
	_, errU := f.LookPath("newuidmap")
	_, errG := f.LookPath("newgidmap")
	if errU != nil || errG != nil {
		m.Source = "your own uid and gid only (install uidmap for newuidmap and newgidmap to use your subordinate ids)"
		return m, nil
	}
	n := min(u.count, g.count, Size-1)
	m.UIDs = append(m.UIDs, sandbox.IDRange{Inside: 1, Host: u.start, Count: n})
	m.GIDs = append(m.GIDs, sandbox.IDRange{Inside: 1, Host: g.start, Count: n})
	m.Helper = true
	m.Source = "your uid, and subordinate ids from " + f.Subuid + " through newuidmap"
	if m.Validate() != nil {
		return sandbox.IDMap{
			UIDs:   m.UIDs[:1],
			GIDs:   m.GIDs[:1],
			Source: "your own uid and gid only (your subordinate ids overlap them)",
		}, nil
	}
	return m, nil
}

// subID is one line of /etc/subuid.
type subID struct {
	owner        string
	start, count uint32
}

func readSubIDs(path string) ([]subID, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("idmap: %w", err)
	}
	defer f.Close()
	var out []subID
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Split(strings.TrimSpace(sc.Text()), ":")
		if len(p) != 3 || strings.HasPrefix(p[0], "#") {
			continue
		}
		start, err1 := strconv.ParseUint(p[1], 10, 32)
		count, err2 := strconv.ParseUint(p[2], 10, 32)
		if err1 != nil || err2 != nil || count == 0 || start+count > 1<<32-1 {
			continue
		}
		out = append(out, subID{owner: p[0], start: uint32(start), count: uint32(count)})
	}
	return out, sc.Err()
}

// entryFor finds the first range of at least n ids owned by account
// (by name, or by its uid in passwd).
func entryFor(ids []subID, account, passwd string, n uint32) (subID, bool) {
	uid := lookupUID(passwd, account)
	for _, e := range ids {
		if (e.owner == account || (uid != "" && e.owner == uid)) && e.count >= n && e.start != 0 {
			return e, true
		}
	}
	return subID{}, false
}

func entryForUser(ids []subID, name string, uid int) (subID, bool) {
	for _, e := range ids {
		if (e.owner == name && name != "") || e.owner == strconv.Itoa(uid) {
			if e.start != 0 {
				return e, true
			}
		}
	}
	return subID{}, false
}

func lookupUID(passwd, name string) string {
	b, err := os.ReadFile(passwd)
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(b)) {
		if p := strings.Split(line, ":"); len(p) > 2 && p[0] == name {
			return p[2]
		}
	}
	return ""
}

// span is a half-open range of ids in use.
type span struct{ lo, hi uint64 }

// usedIDs lists every id range the system files hand out: subordinate
// ranges and the accounts' and groups' own ids.
func usedIDs(f Files, subuid, subgid []subID) ([]span, error) {
	var out []span
	for _, e := range append(append([]subID(nil), subuid...), subgid...) {
		out = append(out, span{uint64(e.start), uint64(e.start) + uint64(e.count)})
	}
	for _, p := range []string{f.Passwd, f.Group} {
		b, err := os.ReadFile(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("idmap: %w", err)
		}
		for line := range strings.Lines(string(b)) {
			if fs := strings.Split(line, ":"); len(fs) > 2 {
				if id, err := strconv.ParseUint(fs[2], 10, 32); err == nil {
					out = append(out, span{id, id + 1})
				}
			}
		}
	}
	return out, nil
}

// freeRange finds the lowest Size-aligned range at or above from that
// overlaps nothing in used, below 2^31.
func freeRange(used []span, from uint32) (uint32, bool) {
	sort.Slice(used, func(i, j int) bool { return used[i].lo < used[j].lo })
	for base := uint64(from); base+Size <= 1<<31; base += Size {
		free := true
		for _, s := range used {
			if s.lo < base+Size && base < s.hi {
				free = false
				break
			}
		}
		if free {
			return uint32(base), true
		}
	}
	return 0, false
}

func lookSbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range []string{"/usr/bin", "/usr/sbin", "/bin", "/sbin"} {
		p := filepath.Join(d, name)
		if unix.Access(p, unix.X_OK) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

// LookHelper finds newuidmap or newgidmap.
func LookHelper(name string) (string, error) { return lookSbin(name) }
