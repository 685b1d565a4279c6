package sandbox

import (
	"fmt"
	"strings"
)

// IDRange maps Count consecutive ids from Inside (as the computer sees
// them) to Host (as the host sees them).
type IDRange struct {
	Inside, Host, Count uint32
}

// IDMap is how the user and group ids of a computer map to the host's:
// what root inside is on the host, and every other id it may hold. No
// range may map to host id 0: root inside is never root on the host.
type IDMap struct {
	UIDs, GIDs []IDRange
	// Helper says the maps are written by newuidmap and newgidmap, the
	// setuid helpers that let an ordinary user map the subordinate ids
	// /etc/subuid and /etc/subgid give it; otherwise den writes them.
	Helper bool
	// Source says where the ranges came from, for den doctor:
	// "den range (DATA/idmap.json)", "/etc/subuid (den)", "own uid", …
	Source string
}

// Root returns the host uid and gid of root inside the computer.
func (m IDMap) Root() (uid, gid int, ok bool) {
	u, uok := toHost(m.UIDs, 0)
	g, gok := toHost(m.GIDs, 0)
	return int(u), int(g), uok && gok
}

// HostUID maps an id inside to the host's; ok is false when it is not
// mapped.
func (m IDMap) HostUID(inside uint32) (uint32, bool) { return toHost(m.UIDs, inside) }

// HostGID is HostUID for groups.
func (m IDMap) HostGID(inside uint32) (uint32, bool) { return toHost(m.GIDs, inside) }

// InsideUID maps a host uid to the id the computer sees; ok is false
// when it is not mapped (the computer sees the overflow id, nobody).
func (m IDMap) InsideUID(host uint32) (uint32, bool) { return toInside(m.UIDs, host) }

// InsideGID is InsideUID for groups.
func (m IDMap) InsideGID(host uint32) (uint32, bool) { return toInside(m.GIDs, host) }

// Validate checks that the map is usable and safe: root inside is
// mapped, no range reaches host id 0, and ranges do not overlap.
func (m IDMap) Validate() error {
	for _, kind := range []struct {
		name string
		rs   []IDRange
	}{{"uid", m.UIDs}, {"gid", m.GIDs}} {
		if len(kind.rs) == 0 {
			return fmt.Errorf("sandbox: id map: no %s ranges", kind.name)
		}
		if _, ok := toHost(kind.rs, 0); !ok {
			return fmt.Errorf("sandbox: id map: root's %s is not mapped", kind.name)
		}
		for i, r := range kind.rs {
			if r.Count == 0 || uint64(r.Inside)+uint64(r.Count) > 1<<32-1 || uint64(r.Host)+uint64(r.Count) > 1<<32-1 {
				return fmt.Errorf("sandbox: id map: bad %s range %d %d %d", kind.name, r.Inside, r.Host, r.Count)
			}
			if r.Host == 0 {
				return fmt.Errorf("sandbox: id map: %s %d inside would be host %s 0 (root)", kind.name, r.Inside, kind.name)
			}
			for _, o := range kind.rs[i+1:] {
				if overlap(r.Inside, r.Count, o.Inside, o.Count) || overlap(r.Host, r.Count, o.Host, o.Count) {
					return fmt.Errorf("sandbox: id map: %s ranges overlap", kind.name)
				}
			}
		}
	}
	return nil
}

// Lines renders ranges as /proc/PID/uid_map expects them.
func Lines(rs []IDRange) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%d %d %d\n", r.Inside, r.Host, r.Count)
	}
	return b.String()
}

// String describes the map in one line for den doctor, such as
// "root → host uid 1879048192 (65536 ids: 1879048192–1879113727)".
func (m IDMap) String() string {
	uid, gid, ok := m.Root()
	if !ok {
		return "no mapping"
	}
	var n uint64
	for _, r := range m.UIDs {
		n += uint64(r.Count)
	}
	s := fmt.Sprintf("root inside is host uid %d, gid %d; %d ids mapped", uid, gid, n)
	if len(m.UIDs) == 1 && m.UIDs[0].Count > 1 {
		r := m.UIDs[0]
		s = fmt.Sprintf("root inside is host uid %d, gid %d; ids 0–%d inside are host %d–%d", uid, gid, r.Count-1, r.Host, r.Host+r.Count-1)
	}
	if m.Source != "" {
		s += " (" + m.Source + ")"
	}
	return s
}

func toHost(rs []IDRange, inside uint32) (uint32, bool) {
	for _, r := range rs {
		if inside >= r.Inside && inside-r.Inside < r.Count {
			return r.Host + (inside - r.Inside), true
		}
	}
	return 0, false
}

func toInside(rs []IDRange, host uint32) (uint32, bool) {
	for _, r := range rs {
		if host >= r.Host && host-r.Host < r.Count {
			return r.Inside + (host - r.Host), true
		}
	}
	return 0, false
}

func overlap(a, n, b, m uint32) bool {
	return uint64(a) < uint64(b)+uint64(m) && uint64(b) < uint64(a)+uint64(n)
}
