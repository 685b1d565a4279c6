package idmap

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"den.dev/den/internal/sandbox"
)

func files(t *testing.T, subuid, subgid, passwd string) Files {
	t.Helper()
	d := t.TempDir()
	w := func(name, s string) string {
		p := filepath.Join(d, name)
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	return Files{Subuid: w("subuid", subuid), Subgid: w("subgid", subgid), Passwd: w("passwd", passwd), Group: w("group", "root:x:0:\n"),
		LookPath: func(name string) (string, error) { return "/usr/bin/" + name, nil }}
}

func TestForRootUsesTheDenAccount(t *testing.T) {
	f := files(t, "alice:100000:65536\nden:300000:65536\n", "den:400000:65536\n", "root:x:0:0::/root:/bin/sh\n")
	m, err := ForRoot(t.TempDir(), f)
	if err != nil {
		t.Fatal(err)
	}
	if uid, gid, _ := m.Root(); uid != 300000 || gid != 400000 {
		t.Errorf("root is %d:%d, want the den account's 300000:400000", uid, gid)
	}
}

func TestForRootChoosesAFreeRangeOnce(t *testing.T) {
	// Someone already has the first candidate range.
	f := files(t, "bob:1879048192:65536\n", "", "root:x:0:0::/root:/bin/sh\nweird:x:1879113800:1::/:/bin/sh\n")
	data := t.TempDir()
	m, err := ForRoot(data, f)
	if err != nil {
		t.Fatal(err)
	}
	uid, gid, _ := m.Root()
	if uid != DefaultBase+2*Size || gid != uid {
		t.Errorf("chose %d, want %d (the first block clear of bob's range and of uid 1879113800)", uid, DefaultBase+2*Size)
	}
	if err := m.Validate(); err != nil {
		t.Error(err)
	}
	// Recorded: a later change to the system files does not move it.
	f2 := files(t, "", "", "")
	again, err := ForRoot(data, f2)
	if err != nil {
		t.Fatal(err)
	}
	if u, _, _ := again.Root(); u != uid {
		t.Errorf("the range moved from %d to %d", uid, u)
	}
	os.WriteFile(filepath.Join(data, RecordFile), []byte("{not json"), 0o600)
	if _, err := ForRoot(data, f2); err == nil {
		t.Error("a damaged record was accepted")
	}
}

func TestForUser(t *testing.T) {
	f := files(t, "carol:200000:65536\n", "1000:300000:70000\n", "carol:x:1000:1000::/home/carol:/bin/sh\n")
	m, err := ForUser(1000, 1000, "carol", f)
	if err != nil {
		t.Fatal(err)
	}
	if !m.Helper || len(m.UIDs) != 2 || m.UIDs[1] != (sandbox.IDRange{Inside: 1, Host: 200000, Count: Size - 1}) || m.GIDs[1].Host != 300000 {
		t.Errorf("with subordinate ids: %+v", m)
	}
	if uid, _, _ := m.Root(); uid != 1000 {
		t.Errorf("root inside is %d, not the user", uid)
	}
	f.LookPath = func(string) (string, error) { return "", errors.New("no") }
	if m, _ := ForUser(1000, 1000, "carol", f); m.Helper || len(m.UIDs) != 1 {
		t.Errorf("without newuidmap: %+v", m)
	}
	if m, _ := ForUser(1001, 1001, "dave", files(t, "carol:200000:65536\n", "", "")); m.Helper || m.UIDs[0].Host != 1001 {
		t.Errorf("without ranges: %+v", m)
	}
}

func TestValidateRefusesHostRoot(t *testing.T) {
	if err := Identity.Validate(); err == nil {
		t.Error("a map whose root is host root was accepted")
	}
}

func TestShift(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("changing owners needs root")
	}
	d := t.TempDir()
	os.WriteFile(filepath.Join(d, "suid"), []byte("x"), 0o755)
	syscall.Chmod(filepath.Join(d, "suid"), 0o4755)
	os.Mkdir(filepath.Join(d, "mail"), 0o755)
	syscall.Chmod(filepath.Join(d, "mail"), 0o2775)
	os.Lchown(filepath.Join(d, "mail"), 0, 8)
	outside := filepath.Join(t.TempDir(), "outside")
	os.WriteFile(outside, []byte("x"), 0o644)
	os.Symlink(outside, filepath.Join(d, "link"))
	to := sandbox.IDMap{UIDs: []sandbox.IDRange{{Inside: 0, Host: 500000, Count: Size}}, GIDs: []sandbox.IDRange{{Inside: 0, Host: 600000, Count: Size}}}
	n, err := Shift(d, Identity, to, nil)
	if err != nil || n != 4 {
		t.Fatalf("Shift: %d %v", n, err)
	}
	st := func(p string) *syscall.Stat_t {
		var s syscall.Stat_t
		syscall.Lstat(p, &s)
		return &s
	}
	if s := st(filepath.Join(d, "suid")); s.Uid != 500000 || s.Mode&0o7777 != 0o4755 {
		t.Errorf("suid: %d %o", s.Uid, s.Mode&0o7777)
	}
	if s := st(filepath.Join(d, "mail")); s.Gid != 600008 || s.Mode&0o7777 != 0o2775 {
		t.Errorf("mail: %d %o", s.Gid, s.Mode&0o7777)
	}
	if s := st(outside); s.Uid != 0 {
		t.Error("a symlink was followed out of the tree")
	}
	if n, _ := Shift(d, Identity, to, nil); n != 0 {
		t.Errorf("a second shift changed %d entries", n)
	}
}
