package checkpoint_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"den.dev/den/internal/checkpoint"
	"den.dev/den/internal/sandbox/idmap"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// unprivBound is the longest one run as the throwaway user may take: a
// limit, not an expectation.
const unprivBound = 2 * time.Minute

// TestOtherUsersFilesUnprivileged: den as an ordinary user with
// subordinate ids checkpoints a computer whose other users keep files
// den's own rights do not reach (apt's 0700 folder of uid 100 inside, a
// 0600 file of uid 1000 inside, a folder den can list but not search),
// and a restore gives them back to those users exactly, as root's den
// does. As root, the test makes the tree and a throwaway user with a
// subordinate range, runs TestOtherUsersFilesInside as it to take, then
// changes and removes the files as the computer might, and runs it
// again to restore.
func TestOtherUsersFilesUnprivileged(t *testing.T) {
	u := sandboxtest.NewUser(t)
	sandboxtest.Need(t, "newuidmap", "uidmap")
	first := u.AddSubIDs(t)
	in := func(id int) int { return int(first) + id - 1 } // host id of id inside
	root := filepath.Join(u.Dir, "rootfs")
	mk := func(rel string, mode uint32, uid, gid int, content string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if content == "" {
			must(t, os.Mkdir(p, 0o700))
		} else {
			must(t, os.WriteFile(p, []byte(content), 0o600))
			must(t, unix.Setxattr(p, "user.den", []byte(rel), 0))
		}
		must(t, os.Lchown(p, uid, gid))
		must(t, unix.Chmod(p, mode))
	}
	mk("", 0o755, u.UID, u.GID, "")
	for _, d := range []string{"var", "var/cache", "var/cache/apt", "var/cache/apt/archives", "home", "srv", "usr", "usr/bin", "etc"} {
		mk(d, 0o755, u.UID, u.GID, "")
	}
	mk("var/cache/apt/archives/partial", 0o700, in(100), in(65534), "")
	mk("var/cache/apt/archives/partial/pkg.deb", 0o600, in(1000), in(1000), "a package half downloaded\n")
	mk("home/user", 0o755, in(1000), in(1000), "")
	mk("home/user/secret", 0o600, in(1000), in(1000), "the user's secret\n")
	mk("home/user/setgid", 0o2750, in(1000), in(100), "setgid, of another group\n")
	mk("srv/listed", 0o744, in(1000), in(1000), "") // den may list it, not search it
	mk("srv/listed/file", 0o644, in(1000), in(1000), "in a folder den cannot search\n")
	// Attributes that hold ids: an ACL naming user 1000 inside, and a
	// file capability of the computer's root (as dpkg sets one inside).
	must(t, unix.Setxattr(filepath.Join(root, "var/cache/apt/archives/partial/pkg.deb"), "system.posix_acl_access",
		acl(6, 0, 0, in(1000), 4), 0))
	must(t, unix.Setxattr(filepath.Join(root, "home/user/setgid"), "security.capability", fileCap(u.UID), 0))
	must(t, unix.Chmod(filepath.Join(root, "home/user/setgid"), 0o2750)) // the capability's chown cleared it
	// The same that den reads itself: what it records and what the
	// helper does must agree.
	mk("usr/bin/ping", 0o755, u.UID, u.GID, "ping\n")
	must(t, unix.Setxattr(filepath.Join(root, "usr/bin/ping"), "security.capability", fileCap(u.UID), 0))
	mk("etc/acl", 0o644, u.UID, u.GID, "an ACL\n")
	must(t, unix.Setxattr(filepath.Join(root, "etc/acl"), "system.posix_acl_access", acl(6, 4, 4, in(1000), 4), 0))
	mk("home/user/flip", 0o755, in(1000), in(1000), "read by den, then by the helper\n")
	must(t, unix.Setxattr(filepath.Join(root, "home/user/flip"), "security.capability", fileCap(u.UID), 0))
	mk("srv/shared", 0o755, in(1000), in(1000), "")
	must(t, unix.Setxattr(filepath.Join(root, "srv/shared"), "system.posix_acl_default", acl(7, 5, 5, in(1000), 7), 0))
	old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, rel := range []string{"var/cache/apt/archives/partial/pkg.deb", "home/user/secret", "home/user/setgid", "srv/listed/file", "usr/bin/ping", "etc/acl", "home/user/flip"} {
		must(t, os.Chtimes(filepath.Join(root, rel), old, old))
	}
	want := describe(t, root)

	env := []string{"DEN_TEST_CP_ROOT=" + root, "DEN_TEST_CP_STORE=" + filepath.Join(u.Home, "checkpoints")}
	runAs(t, u, "TestOtherUsersFilesInside", append(env, "DEN_TEST_CP_PHASE=take")...)

	// What a turn might do: a download finished, a secret rewritten and
	// given away, a file removed.
	must(t, os.Remove(filepath.Join(root, "var/cache/apt/archives/partial/pkg.deb")))
	must(t, os.WriteFile(filepath.Join(root, "home/user/secret"), []byte("changed\n"), 0o600))
	must(t, os.Chmod(filepath.Join(root, "home/user/secret"), 0o644))
	must(t, os.Lchown(filepath.Join(root, "home/user/secret"), u.UID, u.GID))
	must(t, os.Lchown(filepath.Join(root, "home/user/setgid"), in(1000), in(1000)))
	must(t, os.Remove(filepath.Join(root, "srv/listed/file")))
	must(t, os.WriteFile(filepath.Join(root, "var/cache/apt/archives/partial/new.deb"), []byte("new\n"), 0o600))
	must(t, os.Lchown(filepath.Join(root, "var/cache/apt/archives/partial/new.deb"), in(100), in(65534)))
	must(t, unix.Removexattr(filepath.Join(root, "usr/bin/ping"), "security.capability"))
	must(t, unix.Removexattr(filepath.Join(root, "etc/acl"), "system.posix_acl_access"))
	// Unreadable to den now: the helper reads them, and must find their
	// attributes as den recorded them.
	must(t, os.Chmod(filepath.Join(root, "home/user/flip"), 0o700))
	must(t, os.Chmod(filepath.Join(root, "srv/shared"), 0o700))

	runAs(t, u, "TestOtherUsersFilesInside", append(env, "DEN_TEST_CP_PHASE=restore")...)
	if diff := cmp.Diff(want, describe(t, root)); diff != "" {
		t.Errorf("the tree after the restore (-checkpoint +now):\n%s", diff)
	}
}

// acl is a POSIX ACL as the kernel takes it: the owner's, the group's
// and others' permissions, and one named user's.
func acl(owner, group, other uint16, user int, userPerm uint16) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 2)
	for _, e := range []struct {
		tag, perm uint16
		id        uint32
	}{{0x01, owner, ^uint32(0)}, {0x02, userPerm, uint32(user)}, {0x04, group, ^uint32(0)}, {0x10, userPerm | group, ^uint32(0)}, {0x20, other, ^uint32(0)}} {
		b = binary.LittleEndian.AppendUint16(b, e.tag)
		b = binary.LittleEndian.AppendUint16(b, e.perm)
		b = binary.LittleEndian.AppendUint32(b, e.id)
	}
	return b
}

// fileCap is a file capability (CAP_NET_RAW, permitted and effective)
// of the namespace whose root is host uid root (revision 3).
func fileCap(root int) []byte {
	b := binary.LittleEndian.AppendUint32(nil, 0x03000001)
	b = binary.LittleEndian.AppendUint32(b, 1<<13)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, 0)
	b = binary.LittleEndian.AppendUint32(b, 0)
	return binary.LittleEndian.AppendUint32(b, uint32(root))
}

// TestOtherUsersFilesInside is run by TestOtherUsersFilesUnprivileged
// as the throwaway user.
func TestOtherUsersFilesInside(t *testing.T) {
	phase := os.Getenv("DEN_TEST_CP_PHASE")
	if phase == "" {
		t.Skip("run by TestOtherUsersFilesUnprivileged as a throwaway user")
	}
	ids := sandboxtest.IDs(t)
	if !ids.Helper {
		t.Fatalf("den's map for a user with subordinate ids: %+v", ids)
	}
	h := &checkpoint.Helper{}
	for _, r := range ids.UIDs {
		h.UIDs = append(h.UIDs, checkpoint.IDRange(r))
	}
	for _, r := range ids.GIDs {
		h.GIDs = append(h.GIDs, checkpoint.IDRange(r))
	}
	var err error
	if h.NewUIDMap, err = idmap.LookHelper("newuidmap"); err != nil {
		t.Fatal(err)
	}
	if h.NewGIDMap, err = idmap.LookHelper("newgidmap"); err != nil {
		t.Fatal(err)
	}
	root, dir := os.Getenv("DEN_TEST_CP_ROOT"), os.Getenv("DEN_TEST_CP_STORE")
	trees := []checkpoint.Tree{tree(root)}
	ctx := context.Background()

	// den's own rights do not reach them.
	if _, err := os.ReadDir(filepath.Join(root, "var/cache/apt/archives/partial")); err == nil {
		t.Fatal("den reads the 0700 folder of another user: the test proves nothing")
	}
	mine, err := checkpoint.Open(dir + "-alone")
	must(t, err)
	if _, err := mine.Take(ctx, trees, checkpoint.TakeOptions{}); err == nil || !strings.Contains(err.Error(), "den cannot read") {
		t.Errorf("a take without the helper: %v, want den cannot read", err)
	}

	s, err := checkpoint.OpenWith(dir, checkpoint.Options{Helper: h})
	must(t, err)
	switch phase {
	case "take":
		time.Sleep(60 * time.Millisecond) // past the racy window of the files just made
		c1, err := s.Take(ctx, trees, checkpoint.TakeOptions{Reason: "test"})
		if err != nil {
			t.Fatalf("take: %v", err)
		}
		if c1.Entries != 20 || c1.Read != 7 {
			t.Errorf("the first take recorded %d entries and read %d files, want 20 and 7", c1.Entries, c1.Read)
		}
		// Nothing changed: the helper's entries compare equal to the
		// last ones (their owners as the host's), and nothing is read.
		time.Sleep(60 * time.Millisecond)
		c2, err := s.Take(ctx, trees, checkpoint.TakeOptions{Reason: "test"})
		if err != nil {
			t.Fatalf("second take: %v", err)
		}
		if c2.Read != 0 || c2.Added != 0 || c2.Roots[0].Entry.Hash != c1.Roots[0].Entry.Hash {
			t.Errorf("an unchanged tree read %d files and added %d bytes (listing %s, was %s)", c2.Read, c2.Added, c2.Roots[0].Entry.Hash, c1.Roots[0].Entry.Hash)
		}
		t.Logf("takes with the helper: %v, then %v unchanged", c1.Took, c2.Took)
		d, err := s.Diff(ctx, c1.ID, c2.ID)
		must(t, err)
		if len(d.Changes) != 0 {
			t.Errorf("between two takes of an unchanged tree: %+v", d.Changes)
		}
	case "restore":
		d, err := s.DiffLive(ctx, 1, trees)
		must(t, err)
		var got []string
		for _, c := range d.Changes {
			got = append(got, c.Op+" "+c.Path+" "+strings.Join(c.What, ","))
		}
		want := []string{
			"changed /etc/acl xattrs",
			"changed /home/user/flip mode",
			"changed /home/user/secret content,mode,owner",
			"changed /home/user/setgid mode,owner,xattrs", // chown cleared setgid and the capability
			"removed /srv/listed/file ",
			"changed /srv/shared mode",
			"changed /usr/bin/ping xattrs",
			"added /var/cache/apt/archives/partial/new.deb ",
			"removed /var/cache/apt/archives/partial/pkg.deb ",
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the diff (-want +got):\n%s", diff)
		}
		res, err := s.Restore(ctx, 1, trees, checkpoint.RestoreOptions{Save: &checkpoint.TakeOptions{}})
		if err != nil {
			t.Fatalf("restore: %v", err)
		}
		if len(res.Left) > 0 || res.Saved.ID == 0 {
			t.Errorf("restore left %q, saved #%d", res.Left, res.Saved.ID)
		}
		// The store is den's own.
		filepathWalk(t, dir, func(p string, st *unix.Stat_t) {
			if int(st.Uid) != os.Getuid() || st.Mode&0o077 != 0 {
				t.Errorf("%s: owner %d, mode %o: not den's alone", p, st.Uid, st.Mode&0o7777)
			}
		})
	}
}

func filepathWalk(t *testing.T, dir string, f func(string, *unix.Stat_t)) {
	t.Helper()
	must(t, filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		var st unix.Stat_t
		if err := unix.Lstat(p, &st); err != nil {
			return err
		}
		f(p, &st)
		return nil
	}))
}

// runAs runs this test binary's test name as u, with env added, and
// fails unless it passed without skipping anything.
func runAs(t *testing.T, u *sandboxtest.User, name string, env ...string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(u.Dir, "checkpoint.test")
	if _, err := os.Stat(bin); err != nil {
		bin = u.Install(t, self, "checkpoint.test")
	}
	ctx, cancel := context.WithTimeout(context.Background(), unprivBound)
	defer cancel()
	cmd := u.Command(ctx, bin, "-test.run", "^"+name+"$", "-test.v", "-test.count=1")
	cmd.Env = append(cmd.Env, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s as %s: still running after %v, killed\n%s", name, u.Name, unprivBound, out.String())
	case err != nil:
		t.Fatalf("%s as %s (uid %d): %v\n%s", name, u.Name, u.UID, err, out.String())
	case !strings.HasSuffix(out.String(), "\nPASS\n") || !strings.Contains(out.String(), "--- PASS: "+name+" "):
		t.Fatalf("%s as %s did not report PASS:\n%s", name, u.Name, out.String())
	case strings.Contains(out.String(), "--- SKIP"):
		t.Fatalf("%s as %s skipped tests:\n%s", name, u.Name, out.String())
	}
	t.Logf("%s as %s (uid %d):\n%s", name, u.Name, u.UID, out.String())
}
