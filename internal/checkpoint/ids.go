package checkpoint

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// IDRange maps Count consecutive ids from Inside (as the computer sees
// them) to Host (as the host sees them).
type IDRange struct {
	Inside, Host, Count uint32
}

// nsIDs is the id map of the user namespace the helper runs in (see
// Helper): the ids it sees are the computer's, a checkpoint records
// the host's. A nil *nsIDs maps every id to itself (den outside any
// namespace).
type nsIDs struct {
	uids, gids []IDRange
}

// ownIDs reads the map of the user namespace this process runs in.
func ownIDs() (*nsIDs, error) {
	u, err := readIDMap("/proc/self/uid_map")
	if err != nil {
		return nil, err
	}
	g, err := readIDMap("/proc/self/gid_map")
	if err != nil {
		return nil, err
	}
	if len(u) == 0 || len(g) == 0 {
		return nil, errors.New("checkpoint: helper: its user namespace has no id map")
	}
	return &nsIDs{uids: u, gids: g}, nil
}

func readIDMap(path string) ([]IDRange, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: helper: %w", err)
	}
	defer f.Close()
	var out []IDRange
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Fields(sc.Text())
		if len(p) != 3 {
			continue
		}
		var n [3]uint64
		for i := range p {
			if n[i], err = strconv.ParseUint(p[i], 10, 32); err != nil {
				return nil, fmt.Errorf("checkpoint: helper: %s: %q", path, sc.Text())
			}
		}
		out = append(out, IDRange{Inside: uint32(n[0]), Host: uint32(n[1]), Count: uint32(n[2])})
	}
	return out, sc.Err()
}

// toHost gives an entry stat'ed in the namespace its host owner. An
// owner the namespace does not map shows as the overflow id (nobody),
// which the map does hold: only host root could have made such a file
// in the computer, and den records it as nobody's.
func (m *nsIDs) toHost(e *Entry) {
	if m == nil {
		return
	}
	e.UID, _ = mapID(m.uids, e.UID, true)
	e.GID, _ = mapID(m.gids, e.GID, true)
}

// inside gives the ids a chown in the namespace takes for host ids;
// ok is false when the namespace does not map them.
func (m *nsIDs) inside(uid, gid uint32) (iu, ig uint32, ok bool) {
	if m == nil {
		return uid, gid, true
	}
	iu, uok := mapID(m.uids, uid, false)
	ig, gok := mapID(m.gids, gid, false)
	return iu, ig, uok && gok
}

// mapID maps id inside to host (toHost) or back.
func mapID(rs []IDRange, id uint32, toHost bool) (uint32, bool) {
	for _, r := range rs {
		from, to := r.Host, r.Inside
		if toHost {
			from, to = r.Inside, r.Host
		}
		if id >= from && id-from < r.Count {
			return to + (id - from), true
		}
	}
	return id, false
}

// Extended attributes that hold ids: the kernel gives and takes them
// in the ids of the reader's namespace, so the helper moves them
// between the computer's ids and the host's, and what a checkpoint
// records is the same whoever read it.
const (
	xattrACLAccess  = "system.posix_acl_access"
	xattrACLDefault = "system.posix_acl_default"
	xattrCaps       = "security.capability"
)

// xattrsToHost rewrites the ids in attributes read in the namespace as
// the host's.
func (m *nsIDs) xattrsToHost(xs []Xattr) []Xattr {
	if m == nil {
		return xs
	}
	for i := range xs {
		if v, ok := m.xattrValue(xs[i].Name, xs[i].Value, true); ok {
			xs[i].Value = v
		}
	}
	return xs
}

// xattrsInside rewrites recorded attributes as the namespace reads and
// writes them; an attribute whose ids it does not map is left out, and
// named in left.
func (m *nsIDs) xattrsInside(xs []Xattr) (out []Xattr, left []string) {
	if m == nil {
		return xs, nil
	}
	out = make([]Xattr, 0, len(xs))
	for _, x := range xs {
		v, ok := m.xattrValue(x.Name, x.Value, false)
		if !ok {
			left = append(left, x.Name)
			continue
		}
		out = append(out, Xattr{Name: x.Name, Value: v})
	}
	return out, left
}

// ACL entries: tag, permissions (2 bytes each), id (4 bytes), after a
// 4-byte version.
const (
	aclUser  = 0x02
	aclGroup = 0x08
)

// File capabilities: revision 2 (20 bytes) belongs to root of the
// namespace that reads it; revision 3 (24 bytes) ends with the uid of
// the root it belongs to.
const (
	capRev2    = 0x02000000
	capRev3    = 0x03000000
	capRevMask = 0xFF000000
	capSize2   = 20
	capSize3   = 24
)

// xattrValue moves one attribute's ids to the host's (toHost) or into
// the namespace; ok is false when an id does not map (a value it does
// not know is kept as it is).
func (m *nsIDs) xattrValue(name string, v []byte, toHost bool) ([]byte, bool) {
	switch name {
	case xattrACLAccess, xattrACLDefault:
		if len(v) < 4 || (len(v)-4)%8 != 0 {
			return v, true
		}
		out := append([]byte(nil), v...)
		for off := 4; off < len(out); off += 8 {
			rs := m.uids
			switch binary.LittleEndian.Uint16(out[off:]) {
			case aclUser:
			case aclGroup:
				rs = m.gids
			default:
				continue
			}
			id, ok := mapID(rs, binary.LittleEndian.Uint32(out[off+4:]), toHost)
			if !ok {
				return nil, false
			}
			binary.LittleEndian.PutUint32(out[off+4:], id)
		}
		return out, true
	case xattrCaps:
		if len(v) < 4 {
			return v, true
		}
		magic := binary.LittleEndian.Uint32(v)
		switch {
		case toHost && len(v) == capSize2 && magic&capRevMask == capRev2:
			// The namespace's root's: the host uid that is root inside.
			// (Host root's reads the same; only host root could have
			// set one in the computer.)
			root, _ := mapID(m.uids, 0, true)
			out := make([]byte, capSize3)
			copy(out, v)
			binary.LittleEndian.PutUint32(out, magic&^capRevMask|capRev3)
			binary.LittleEndian.PutUint32(out[capSize2:], root)
			return out, true
		case len(v) == capSize3 && magic&capRevMask == capRev3:
			root, ok := mapID(m.uids, binary.LittleEndian.Uint32(v[capSize2:]), toHost)
			if !ok {
				return nil, false
			}
			if !toHost && root == 0 {
				// Root inside's: written as revision 2, which the
				// kernel records as the namespace root's.
				out := append([]byte(nil), v[:capSize2]...)
				binary.LittleEndian.PutUint32(out, magic&^capRevMask|capRev2)
				return out, true
			}
			out := append([]byte(nil), v...)
			binary.LittleEndian.PutUint32(out[capSize2:], root)
			return out, true
		case !toHost && magic&capRevMask == capRev2:
			// Host root's: the namespace cannot give it.
			return nil, false
		}
	}
	return v, true
}
