package checkpoint

import (
	"encoding/binary"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The helper's namespace of an ordinary user (uid 1000) with the
// subordinate range 100000–165534.
var userNS = &nsIDs{
	uids: []IDRange{{Inside: 0, Host: 1000, Count: 1}, {Inside: 1, Host: 100000, Count: 65535}},
	gids: []IDRange{{Inside: 0, Host: 1000, Count: 1}, {Inside: 1, Host: 100000, Count: 65535}},
}

func aclOf(user, group uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range [][3]uint32{{0x01, 6, ^uint32(0)}, {0x02, 4, user}, {0x04, 4, ^uint32(0)}, {0x08, 4, group}, {0x10, 4, ^uint32(0)}, {0x20, 0, ^uint32(0)}} {
		b = binary.LittleEndian.AppendUint16(b, uint16(e[0]))
		b = binary.LittleEndian.AppendUint16(b, uint16(e[1]))
		b = binary.LittleEndian.AppendUint32(b, e[2])
	}
	return b
}

func capOf(rev uint32, root uint32) []byte {
	b := binary.LittleEndian.AppendUint32(nil, rev|1)
	b = binary.LittleEndian.AppendUint32(b, 1<<13)
	b = append(b, make([]byte, 12)...)
	if rev == capRev3 {
		b = binary.LittleEndian.AppendUint32(b, root)
	}
	return b
}

// TestXattrIDs: the ids inside ACLs and file capabilities move between
// the helper's namespace and the host's as the kernel would show them
// to each, and what cannot be given inside is said so.
func TestXattrIDs(t *testing.T) {
	for _, c := range []struct {
		name         string
		inside, host []byte // as the helper reads it, as den (on the host) reads it
	}{
		{"system.posix_acl_access", aclOf(1000, 0), aclOf(100999, 1000)},
		{"system.posix_acl_default", aclOf(0, 99), aclOf(1000, 100098)},
		// Root inside's capability reads as revision 2 inside, as
		// revision 3 with den's uid outside.
		{"security.capability", capOf(capRev2, 0), capOf(capRev3, 1000)},
		{"security.capability", capOf(capRev3, 5), capOf(capRev3, 100004)},
		{"user.other", []byte{1, 2, 3}, []byte{1, 2, 3}},
	} {
		got := userNS.xattrsToHost([]Xattr{{Name: c.name, Value: append([]byte(nil), c.inside...)}})
		if diff := cmp.Diff([]Xattr{{Name: c.name, Value: c.host}}, got); diff != "" {
			t.Errorf("%s to the host (-want +got):\n%s", c.name, diff)
		}
		back, left := userNS.xattrsInside([]Xattr{{Name: c.name, Value: c.host}})
		if diff := cmp.Diff([]Xattr{{Name: c.name, Value: c.inside}}, back); diff != "" || left != nil {
			t.Errorf("%s into the namespace (-want +got), left %q:\n%s", c.name, left, diff)
		}
	}
	// Ids the namespace does not hold: host root's capability, an ACL
	// naming another user of the host.
	for _, x := range []Xattr{{"security.capability", capOf(capRev2, 0)}, {"system.posix_acl_access", aclOf(7, 1000)}} {
		out, left := userNS.xattrsInside([]Xattr{x})
		if len(out) != 0 || len(left) != 1 {
			t.Errorf("%s of ids the namespace lacks: kept %v, left %q", x.Name, out, left)
		}
	}
	// Outside any namespace, nothing moves.
	var none *nsIDs
	x := []Xattr{{"system.posix_acl_access", aclOf(7, 8)}}
	if got := none.xattrsToHost(x); !cmp.Equal(got, x) {
		t.Errorf("without a namespace: %v", got)
	}
	e := Entry{UID: 5, GID: 6}
	userNS.toHost(&e)
	if e.UID != 100004 || e.GID != 100005 {
		t.Errorf("owner 5:6 inside is host %d:%d, want 100004:100005", e.UID, e.GID)
	}
	if u, g, ok := userNS.inside(1000, 100005); !ok || u != 0 || g != 6 {
		t.Errorf("host 1000:100005 inside: %d:%d %v", u, g, ok)
	}
	if _, _, ok := userNS.inside(0, 0); ok {
		t.Error("host root maps inside")
	}
}
