package backup

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox/rootfs"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// fileCap is a file capability of revision 3 holding cap_net_raw (13)
// permitted and effective for the root with host id root, or of
// revision 2 (for any root) when root is 0.
func fileCap(root uint32) []byte {
	b := make([]byte, capSize2)
	binary.LittleEndian.PutUint32(b, capRevision2|capFlagsEffective)
	binary.LittleEndian.PutUint32(b[4:], 1<<13)
	if root == 0 {
		return b
	}
	b = append(b, 0, 0, 0, 0)
	binary.LittleEndian.PutUint32(b, capRevision3|capFlagsEffective)
	binary.LittleEndian.PutUint32(b[20:], root)
	return b
}

// pax reads the PAX records of each entry of an archive.
func pax(t *testing.T, b []byte) map[string]map[string]string {
	t.Helper()
	_, raw := entries(t, b)
	out := map[string]map[string]string{}
	tr := tar.NewReader(bytes.NewReader(raw))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = h.PAXRecords
	}
}

func getXattr(t *testing.T, p, name string) string {
	t.Helper()
	b := make([]byte, 4096)
	n, err := unix.Lgetxattr(p, name, b)
	if err != nil {
		return "(" + err.Error() + ")"
	}
	return string(b[:n])
}

// TestXattrsRoundTrip: the extended attributes of a computer's files,
// of a session's folder and of the agent's memory survive a backup and
// a restore: user.* always; as root, trusted.* (on a symbolic link
// too) and the file capability the computer's root gave a program,
// which the archive records as the computer sees it and the restore
// gives to the root of the computer on this machine. A capability for
// a root the computer does not have is left out with a warning; one on
// den's own files is not carried.
func TestXattrsRoundTrip(t *testing.T) {
	f := newFixture(t)
	sandboxtest.NeedUserXattrs(t, f.data)
	set := func(rel, name string, v []byte) {
		t.Helper()
		if err := unix.Lsetxattr(filepath.Join(f.data, rel), name, v, 0); err != nil {
			t.Fatalf("%s %s: %v", rel, name, err)
		}
	}
	sess := "agents/default/sessions/" + f.session + "/workspace"
	user := map[string]string{
		"agents/default/rootfs/root/notes.txt": "xyz",
		"agents/default/rootfs/root":           "a folder",
		sess + "/report.md":                    "xyz",
		sess:                                   "the workspace",
		"agents/default/memory/GLOBAL.md":      "binary \x00\xff",
	}
	for rel, v := range user {
		set(rel, "user.den_test", []byte(v))
	}
	root := os.Geteuid() == 0
	const oldRoot = 0x50000000 // the computer's root on the machine the backup was made on
	if root {
		// The computer's files belong to ids of its own, starting at
		// oldRoot; its root gave busybox cap_net_raw (setcap, inside).
		info, err := rootfs.ReadInfo(filepath.Join(f.data, "agents/default/computer.json"))
		if err != nil {
			t.Fatal(err)
		}
		info.Owner = &rootfs.Owner{UID: oldRoot, GID: oldRoot}
		if err := rootfs.WriteInfo(filepath.Join(f.data, "agents/default/computer.json"), info); err != nil {
			t.Fatal(err)
		}
		if err := os.Lchown(filepath.Join(f.data, "agents/default/rootfs/bin/busybox"), oldRoot, oldRoot); err != nil {
			t.Fatal(err)
		}
		set("agents/default/rootfs/bin/busybox", capabilityXattr, fileCap(oldRoot)) // after chown, which drops it
		set("agents/default/rootfs/usr/bin/su", capabilityXattr, fileCap(12345))    // for no root of the computer's
		set("agents/default/skills.pristine/tidy/SKILL.md", capabilityXattr, fileCap(0))
		set("agents/default/rootfs/bin/sh", "trusted.den_test", []byte("on a link"))
		set("agents/default/rootfs/root/notes.txt", "trusted.den_test", []byte("root's"))
	}

	b, s := create(t, f, Options{})
	records := pax(t, b)
	for rel, v := range user {
		if got := records["data/"+rel][xattrRecord+"user.den_test"]; got != v {
			t.Errorf("the archive: data/%s user.den_test = %q, want %q", rel, got, v)
		}
	}
	if root {
		if got := records["data/agents/default/rootfs/bin/busybox"][xattrRecord+capabilityXattr]; got != string(fileCap(0)) {
			t.Errorf("the archive: bin/busybox's capability %x, want %x (revision 2: for the computer's root)", got, fileCap(0))
		}
		for _, rel := range []string{"agents/default/rootfs/usr/bin/su", "agents/default/skills.pristine/tidy/SKILL.md"} {
			if got, ok := records["data/"+rel][xattrRecord+capabilityXattr]; ok {
				t.Errorf("the archive: %s has the capability %x", rel, got)
			}
		}
		if !strings.Contains(strings.Join(s.Warnings, "\n"), "usr/bin/su: its file capability holds for no root of its computer") {
			t.Errorf("no warning about usr/bin/su's capability: %q", s.Warnings)
		}
	}

	to := fixture{data: filepath.Join(t.TempDir(), "den"), config: filepath.Join(t.TempDir(), "config.toml")}
	rs, err := Restore(context.Background(), bytes.NewReader(b), RestoreOptions{DataDir: to.data, ConfigPath: to.config})
	if err != nil {
		t.Fatal(err)
	}
	if len(rs.Warnings) != 0 {
		t.Errorf("restore warned: %q", rs.Warnings)
	}
	for rel, v := range user {
		if got := getXattr(t, filepath.Join(to.data, rel), "user.den_test"); got != v {
			t.Errorf("restored %s: user.den_test = %q, want %q", rel, got, v)
		}
	}
	if !root {
		return
	}
	for rel, v := range map[string]string{"agents/default/rootfs/bin/sh": "on a link", "agents/default/rootfs/root/notes.txt": "root's"} {
		if got := getXattr(t, filepath.Join(to.data, rel), "trusted.den_test"); got != v {
			t.Errorf("restored %s: trusted.den_test = %q, want %q", rel, got, v)
		}
	}
	info, err := rootfs.ReadInfo(filepath.Join(to.data, "agents/default/computer.json"))
	if err != nil || info.Owner == nil || info.Owner.UID == oldRoot {
		t.Fatalf("the restored computer.json: %+v %v", info, err)
	}
	if got := getXattr(t, filepath.Join(to.data, "agents/default/rootfs/bin/busybox"), capabilityXattr); got != string(fileCap(info.Owner.UID)) {
		t.Errorf("restored bin/busybox's capability %x, want %x: for the restored computer's root, host uid %d", got, fileCap(info.Owner.UID), info.Owner.UID)
	}
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(to.data, "agents/default/rootfs/bin/busybox"), &st); err != nil || st.Uid != info.Owner.UID {
		t.Errorf("restored bin/busybox: owner %d (%v), want %d", st.Uid, err, info.Owner.UID)
	}
}

// TestRestoreXattrsRefused: an extended attribute the system refuses
// (user.* on symbolic links and FIFOs) is warned of once, and the
// restore goes on; one a backup does not carry (system.*), or a file
// capability den cannot read, is refused.
func TestRestoreXattrsRefused(t *testing.T) {
	m := Manifest{Format: Format, Schema: 1, Owners: "inside", Agents: []string{"a"}}
	withX := func(h tar.Header, kv ...string) hostileEntry {
		h.PAXRecords = map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			h.PAXRecords[xattrRecord+kv[i]] = kv[i+1]
		}
		h.ModTime = time.Now()
		return hostileEntry{h: h}
	}
	dir := withX(tar.Header{Name: "data/agents/a/rootfs/", Typeflag: tar.TypeDir, Mode: 0o755})
	file := hostileEntry{h: tar.Header{Name: "data/agents/a/rootfs/f", Typeflag: tar.TypeReg, Mode: 0o644, PAXRecords: map[string]string{xattrRecord + "user.den_test": "kept"}}, body: "f"}
	b := hostile(t, m, []hostileEntry{dir, file,
		withX(tar.Header{Name: "data/agents/a/rootfs/l1", Typeflag: tar.TypeSymlink, Linkname: "f"}, "user.den_test", "x"),
		withX(tar.Header{Name: "data/agents/a/rootfs/l2", Typeflag: tar.TypeSymlink, Linkname: "f"}, "user.den_test", "x"),
		withX(tar.Header{Name: "data/agents/a/rootfs/p", Typeflag: tar.TypeFifo, Mode: 0o600}, "user.den_test", "x"),
	}, true)
	data := t.TempDir()
	sandboxtest.NeedUserXattrs(t, data)
	var warned []string
	s, err := Restore(context.Background(), bytes.NewReader(b), RestoreOptions{DataDir: data, ConfigPath: filepath.Join(t.TempDir(), "c.toml"), Warn: func(m string) { warned = append(warned, m) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "user.den_test") || len(s.Warnings) != 1 {
		t.Errorf("warned %q, summary %q; want user.den_test once", warned, s.Warnings)
	}
	if got := getXattr(t, filepath.Join(data, "agents/a/rootfs/f"), "user.den_test"); got != "kept" {
		t.Errorf("f: user.den_test = %q", got)
	}

	for name, e := range map[string]hostileEntry{
		"an access control list": withX(tar.Header{Name: "data/agents/a/rootfs/g", Typeflag: tar.TypeDir, Mode: 0o755}, "system.posix_acl_access", "\x02\x00\x00\x00"),
		"a damaged capability":   withX(tar.Header{Name: "data/agents/a/rootfs/g", Typeflag: tar.TypeDir, Mode: 0o755}, capabilityXattr, "short"),
	} {
		b := hostile(t, m, []hostileEntry{dir, e}, true)
		if _, err := Restore(context.Background(), bytes.NewReader(b), RestoreOptions{DataDir: t.TempDir(), ConfigPath: filepath.Join(t.TempDir(), "c.toml")}); !errors.Is(err, ErrUnsafe) {
			t.Errorf("%s: %v, want ErrUnsafe", name, err)
		}
		if _, err := Verify(context.Background(), bytes.NewReader(b), VerifyOptions{}); !errors.Is(err, ErrUnsafe) {
			t.Errorf("verify, %s: %v, want ErrUnsafe", name, err)
		}
	}
}

// TestCapabilityForms: a file capability keeps its sets and effective
// flag through the forms a backup and a restore give it.
func TestCapabilityForms(t *testing.T) {
	for _, root := range []uint32{0, 1, 0x70000000} {
		for _, from := range [][]byte{fileCap(0), fileCap(7)} {
			got := capFor(string(from), root)
			if r, ok := capRoot(got); !ok || r != root {
				t.Errorf("capFor(%x, %d) = %x: root %d %v", from, root, got, r, ok)
			}
			if got[4:20] != string(from[4:20]) || got[0]&capFlagsEffective == 0 {
				t.Errorf("capFor(%x, %d) = %x: sets or flag lost", from, root, got)
			}
		}
	}
	v1 := make([]byte, capSize1)
	binary.LittleEndian.PutUint32(v1, capRevision1|capFlagsEffective)
	binary.LittleEndian.PutUint32(v1[4:], 1<<13)
	if got := capFor(string(v1), 0); got != string(fileCap(0)) {
		t.Errorf("revision 1 for any root: %x, want %x", got, fileCap(0))
	}
}
