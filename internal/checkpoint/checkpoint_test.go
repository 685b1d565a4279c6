package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"den.dev/den/internal/checkpoint"
)

// populate makes a tree with one of everything a computer can hold.
func populate(t *testing.T, root string) {
	t.Helper()
	write(t, filepath.Join(root, "etc/passwd"), "root:x:0:0\n", 0o644)
	write(t, filepath.Join(root, "etc/shadow"), "root:*:1\n", 0o600)
	write(t, filepath.Join(root, "usr/bin/su"), "#!/bin/sh\n", 0o4755)
	write(t, filepath.Join(root, "usr/bin/wall"), "wall\n", 0o2755)
	write(t, filepath.Join(root, "usr/bin/perl"), "perl binary\n", 0o755)
	must(t, os.Link(filepath.Join(root, "usr/bin/perl"), filepath.Join(root, "usr/bin/perl5.36")))
	must(t, os.MkdirAll(filepath.Join(root, "usr/lib"), 0o755))
	must(t, os.Link(filepath.Join(root, "usr/bin/perl"), filepath.Join(root, "usr/lib/perl-again")))
	must(t, os.Symlink("/etc/passwd", filepath.Join(root, "usr/lib/abs-link")))
	must(t, os.Symlink("../bin/su", filepath.Join(root, "usr/lib/rel-link")))
	must(t, os.Symlink("/nowhere/at/all", filepath.Join(root, "dangling")))
	must(t, unix.Mkfifo(filepath.Join(root, "fifo"), 0o640))
	write(t, filepath.Join(root, "empty"), "", 0o644)
	must(t, os.MkdirAll(filepath.Join(root, "tmp"), 0o755))
	must(t, unix.Chmod(filepath.Join(root, "tmp"), 0o1777))
	must(t, os.MkdirAll(filepath.Join(root, "ro/inner"), 0o755))
	write(t, filepath.Join(root, "ro/inner/file"), "in a read-only folder\n", 0o444)
	must(t, os.Chmod(filepath.Join(root, "ro/inner"), 0o555))
	must(t, os.Chmod(filepath.Join(root, "ro"), 0o500))
	must(t, unix.Setxattr(filepath.Join(root, "etc/passwd"), "user.den", []byte("tagged"), 0))
	// A sparse file: 4 GiB long, 3 bytes of data in the middle.
	f, err := os.Create(filepath.Join(root, "sparse"))
	must(t, err)
	_, err = f.WriteAt([]byte("mid"), 2<<30)
	must(t, err)
	must(t, f.Truncate(4<<30))
	f.Close()
	if os.Geteuid() == 0 {
		must(t, unix.Mknod(filepath.Join(root, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
		must(t, unix.Mknod(filepath.Join(root, "sock"), unix.S_IFSOCK|0o755, 0))
		must(t, os.Lchown(filepath.Join(root, "etc/shadow"), 0, 42))
		must(t, os.Lchown(filepath.Join(root, "usr/lib/abs-link"), 1234, 5678))
		must(t, os.Lchown(filepath.Join(root, "usr/bin/wall"), 0, 5))
		must(t, unix.Chmod(filepath.Join(root, "usr/bin/wall"), 0o2755))
		must(t, unix.Setxattr(filepath.Join(root, "usr/bin/perl"), "trusted.den", []byte{0, 1, 2}, 0))
	}
	// Times, set last (folders' too: making entries moves them).
	old := time.Date(2020, 1, 2, 3, 4, 5, 123456789, time.UTC)
	filepath.Walk(root, func(p string, _ os.FileInfo, _ error) error {
		ts := []unix.Timespec{unix.NsecToTimespec(old.UnixNano()), unix.NsecToTimespec(old.UnixNano())}
		unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW)
		return nil
	})
}

// vandalize changes everything populate made, as a turn might.
func vandalize(t *testing.T, root string) {
	t.Helper()
	must(t, os.Chmod(filepath.Join(root, "ro"), 0o755))
	must(t, os.Chmod(filepath.Join(root, "ro/inner"), 0o755))
	must(t, os.WriteFile(filepath.Join(root, "etc/passwd"), []byte("root:x:0:0\nevil:x:0:0\n"), 0o644))
	must(t, os.Remove(filepath.Join(root, "etc/shadow")))
	must(t, os.Chmod(filepath.Join(root, "usr/bin/su"), 0o755))
	must(t, os.Remove(filepath.Join(root, "usr/bin/perl5.36")))
	must(t, os.Remove(filepath.Join(root, "usr/lib/perl-again")))
	must(t, os.WriteFile(filepath.Join(root, "usr/lib/perl-again"), []byte("perl binary\n"), 0o755))
	must(t, os.Remove(filepath.Join(root, "usr/lib/rel-link")))
	must(t, os.Symlink("/etc/shadow", filepath.Join(root, "usr/lib/rel-link")))
	must(t, os.Remove(filepath.Join(root, "fifo")))
	must(t, os.Mkdir(filepath.Join(root, "fifo"), 0o755))
	must(t, os.RemoveAll(filepath.Join(root, "ro/inner")))
	must(t, os.WriteFile(filepath.Join(root, "ro/inner"), []byte("now a file"), 0o644))
	write(t, filepath.Join(root, "new/deep/file"), "added", 0o644)
	must(t, os.RemoveAll(filepath.Join(root, "tmp")))
	must(t, os.Symlink("/", filepath.Join(root, "tmp")))
	must(t, unix.Setxattr(filepath.Join(root, "empty"), "user.added", []byte("x"), 0))
	must(t, unix.Removexattr(filepath.Join(root, "etc/passwd"), "user.den"))
	now := time.Now()
	must(t, os.Chtimes(filepath.Join(root, "usr/bin/wall"), now, now))
	f, err := os.OpenFile(filepath.Join(root, "sparse"), os.O_WRONLY, 0)
	must(t, err)
	_, err = f.WriteAt([]byte("MID"), 2<<30)
	must(t, err)
	f.Close()
	if os.Geteuid() == 0 {
		must(t, os.Remove(filepath.Join(root, "null")))
		must(t, os.Lchown(filepath.Join(root, "usr/lib/abs-link"), 0, 0))
		must(t, os.Lchown(filepath.Join(root, "usr/bin/perl"), 99, 99))
	}
}

func TestRestoreIsExact(t *testing.T) {
	s := newStore(t)
	root := t.TempDir()
	populate(t, root)
	want := describe(t, root)
	cp := take(t, s, tree(root))
	vandalize(t, root)
	if diff := cmp.Diff(want, describe(t, root)); diff == "" {
		t.Fatal("vandalize changed nothing")
	}
	res, err := s.Restore(context.Background(), cp.ID, []checkpoint.Tree{tree(root)}, checkpoint.RestoreOptions{Save: &checkpoint.TakeOptions{}})
	must(t, err)
	if diff := cmp.Diff(want, describe(t, root)); diff != "" {
		t.Errorf("restored tree differs (-want +got):\n%s", diff)
	}
	if res.Undone.Added == 0 || res.Undone.Removed == 0 || res.Undone.Changed == 0 {
		t.Errorf("undone: %+v", res.Undone)
	}
	if res.Saved.ID == 0 {
		t.Fatal("the state before the restore was not kept")
	}
	// The sparse file is sparse again.
	var st unix.Stat_t
	must(t, unix.Stat(filepath.Join(root, "sparse"), &st))
	if st.Blocks*512 > 1<<20 {
		t.Errorf("sparse file takes %d bytes after the restore", st.Blocks*512)
	}
	// And the restore is undone in turn.
	vandalized := res.Saved.ID
	_, err = s.Restore(context.Background(), vandalized, []checkpoint.Tree{tree(root)}, checkpoint.RestoreOptions{})
	must(t, err)
	again := describe(t, root)
	if cmp.Equal(want, again) {
		t.Error("restoring the saved state changed nothing")
	}
	if !strings.Contains(strings.Join(again, "\n"), "evil:x") && !bytesContain(t, filepath.Join(root, "etc/passwd"), "evil") {
		t.Error("the saved state is not the vandalized one")
	}
}

func bytesContain(t *testing.T, p, s string) bool {
	b, err := os.ReadFile(p)
	must(t, err)
	return bytes.Contains(b, []byte(s))
}

func TestIncremental(t *testing.T) {
	s := newStore(t)
	root := t.TempDir()
	populate(t, root)
	// Changes older than a checkpoint's racy window are trusted.
	time.Sleep(100 * time.Millisecond)
	first := take(t, s, tree(root))
	if first.Read == 0 || first.Added == 0 {
		t.Fatalf("first checkpoint: %+v", first)
	}
	second := take(t, s, tree(root))
	if second.Read != 0 || second.Added != 0 {
		t.Errorf("nothing changed, yet the checkpoint read %d files and added %d bytes", second.Read, second.Added)
	}
	write(t, filepath.Join(root, "usr/bin/tool"), "new tool", 0o755)
	time.Sleep(100 * time.Millisecond)
	third := take(t, s, tree(root))
	if third.Read != 1 {
		t.Errorf("one file added, yet the checkpoint read %d", third.Read)
	}
	if r1, _ := first.Root("rootfs"); r1.Entry.Hash != mustRoot(t, second).Entry.Hash {
		t.Error("an unchanged tree has a new listing")
	}
	// In place, same size, same second: the change time still shows it.
	must(t, os.WriteFile(filepath.Join(root, "usr/bin/tool"), []byte("NEW TOOL"), 0o755))
	fourth := take(t, s, tree(root))
	d, err := s.Diff(context.Background(), third.ID, fourth.ID)
	must(t, err)
	if len(d.Changes) != 1 || d.Changes[0].Path != "/usr/bin/tool" || d.Changes[0].What[0] != "content" {
		t.Errorf("diff: %+v", d.Changes)
	}
}

func mustRoot(t *testing.T, c checkpoint.Checkpoint) checkpoint.Root {
	r, ok := c.Root("rootfs")
	if !ok {
		t.Fatal("no rootfs tree")
	}
	return r
}

func TestDiff(t *testing.T) {
	s := newStore(t)
	root := t.TempDir()
	populate(t, root)
	write(t, filepath.Join(root, "var/lib/dpkg/status"), dpkgStatus("sl", "5.02-1"), 0o644)
	cp := take(t, s, tree(root))
	vandalize(t, root)
	write(t, filepath.Join(root, "var/lib/dpkg/status"), dpkgStatus("sl", "5.02-1")+"\n"+dpkgStatus("cowsay", "3.03")+"\n"+dpkgStatus("gone", "1")[:0], 0o644)
	d, err := s.DiffLive(context.Background(), cp.ID, []checkpoint.Tree{tree(root)})
	must(t, err)
	got := map[string]string{}
	for _, c := range d.Changes {
		got[c.Path] = c.Op + " " + c.Kind + " " + strings.Join(c.What, ",")
	}
	want := map[string]string{
		"/etc/passwd":          "changed file content,xattrs",
		"/etc/shadow":          "removed file ",
		"/usr/bin/su":          "changed file mode",
		"/ro":                  "changed folder mode",
		"/usr/lib/perl-again":  "changed file time",
		"/usr/bin/perl5.36":    "removed file ",
		"/usr/lib/rel-link":    "changed symlink target",
		"/fifo":                "changed folder type",
		"/ro/inner":            "changed file type",
		"/new":                 "added folder ",
		"/tmp":                 "changed symlink type",
		"/empty":               "changed file xattrs",
		"/usr/bin/wall":        "changed file time",
		"/sparse":              "changed file content",
		"/var/lib/dpkg/status": "changed file content",
	}
	if os.Geteuid() == 0 {
		want["/null"] = "removed char device "
		want["/usr/lib/abs-link"] = "changed symlink owner"
		want["/usr/bin/perl"] = "changed file owner"
		// A copy of perl, no longer a link to it: without perl's
		// extended attribute.
		want["/usr/lib/perl-again"] = "changed file xattrs"
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	for _, c := range d.Changes {
		if c.Path == "/new" && c.Entries != 2 {
			t.Errorf("added folder /new holds %d entries, want 2", c.Entries)
		}
	}
	if diff := cmp.Diff([]checkpoint.PackageChange{{Name: "cowsay", Op: "installed", To: "3.03"}}, d.Packages); diff != "" {
		t.Errorf("packages (-want +got):\n%s", diff)
	}
}

func dpkgStatus(name, version string) string {
	return "Package: " + name + "\nStatus: install ok installed\nArchitecture: amd64\nVersion: " + version + "\nDescription: x\n continued\n"
}

// A tree whose folders the computer swapped for symlinks to the host:
// the restore removes the symlinks and writes inside the tree, never
// through them.
func TestRestoreNeverFollowsSymlinks(t *testing.T) {
	s := newStore(t)
	root := t.TempDir()
	outside := t.TempDir()
	write(t, filepath.Join(outside, "precious"), "host file", 0o644)
	write(t, filepath.Join(root, "etc/precious"), "computer file", 0o644)
	write(t, filepath.Join(root, "etc/sub/x"), "x", 0o644)
	write(t, filepath.Join(root, "file"), "f", 0o644)
	cp := take(t, s, tree(root))
	must(t, os.RemoveAll(filepath.Join(root, "etc")))
	must(t, os.Symlink(outside, filepath.Join(root, "etc")))
	must(t, os.Remove(filepath.Join(root, "file")))
	must(t, os.Symlink(filepath.Join(outside, "precious"), filepath.Join(root, "file")))
	// Checkpointing the planted tree records the links, not what they
	// point to.
	planted := take(t, s, tree(root))
	d, err := s.Diff(context.Background(), cp.ID, planted.ID)
	must(t, err)
	for _, c := range d.Changes {
		if strings.Contains(c.Path, "precious") && c.Path != "/etc/precious" {
			t.Errorf("followed a link: %+v", c)
		}
	}
	_, err = s.Restore(context.Background(), cp.ID, []checkpoint.Tree{tree(root)}, checkpoint.RestoreOptions{})
	must(t, err)
	if b, _ := os.ReadFile(filepath.Join(outside, "precious")); string(b) != "host file" {
		t.Errorf("the host's file was written through a link: %q", b)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("the restore wrote in the host's folder: %v", ents)
	}
	for p, want := range map[string]string{"etc/precious": "computer file", "etc/sub/x": "x", "file": "f"} {
		fi, err := os.Lstat(filepath.Join(root, p))
		if err != nil || !fi.Mode().IsRegular() {
			t.Errorf("%s not restored as a file: %v %v", p, fi, err)
			continue
		}
		if b, _ := os.ReadFile(filepath.Join(root, p)); string(b) != want {
			t.Errorf("%s = %q", p, b)
		}
	}
}

// A damaged checkpoint is found before anything changes.
func TestRestoreDamagedChangesNothing(t *testing.T) {
	s := newStore(t)
	root := t.TempDir()
	write(t, filepath.Join(root, "a"), "content of a", 0o644)
	write(t, filepath.Join(root, "b"), "content of b", 0o644)
	cp := take(t, s, tree(root))
	must(t, os.Remove(filepath.Join(root, "a")))
	write(t, filepath.Join(root, "c"), "new", 0o644)
	before := describe(t, root)
	// Corrupt every stored file.
	filepath.Walk(filepath.Join(s.Dir(), "objects"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); bytes.HasPrefix(b, []byte("content")) {
				os.WriteFile(p, []byte("rotten"), 0o600)
			}
		}
		return nil
	})
	_, err := s.Restore(context.Background(), cp.ID, []checkpoint.Tree{tree(root)}, checkpoint.RestoreOptions{})
	if !errors.Is(err, checkpoint.ErrDamaged) {
		t.Fatalf("restore of a damaged checkpoint: %v", err)
	}
	if diff := cmp.Diff(before, describe(t, root)); diff != "" {
		t.Errorf("a failed restore changed the tree:\n%s", diff)
	}
}

func TestLimitAndPrune(t *testing.T) {
	s := newStore(t)
	root := t.TempDir()
	write(t, filepath.Join(root, "big"), strings.Repeat("x", 3<<20), 0o644)
	ctx := context.Background()
	if _, err := s.Take(ctx, []checkpoint.Tree{tree(root)}, checkpoint.TakeOptions{Limit: 1 << 20}); !errors.Is(err, checkpoint.ErrTooLarge) {
		t.Fatalf("a take over its limit: %v", err)
	}
	if list, _ := s.List(); len(list) != 0 || s.Size() != 0 {
		t.Fatalf("a failed take left %d checkpoints, %d bytes", len(list), s.Size())
	}
	var ids []int
	for i := range 5 {
		write(t, filepath.Join(root, "big"), strings.Repeat(string(rune('a'+i)), 3<<20), 0o644)
		ids = append(ids, take(t, s, tree(root)).ID)
	}
	if s.Size() < 15<<20 {
		t.Fatalf("five 3 MiB versions take %d bytes", s.Size())
	}
	removed, err := s.Prune(ctx, 3, 0)
	must(t, err)
	if diff := cmp.Diff(ids[:2], removed); diff != "" {
		t.Errorf("kept 3 of 5: removed (-want +got):\n%s", diff)
	}
	removed, err = s.Prune(ctx, 0, 7<<20)
	must(t, err)
	if diff := cmp.Diff(ids[2:3], removed); diff != "" {
		t.Errorf("budget of 7 MiB: removed (-want +got):\n%s", diff)
	}
	if s.Size() > 7<<20 {
		t.Errorf("store holds %d bytes, over its budget", s.Size())
	}
	list, _ := s.List()
	if len(list) != 2 {
		t.Fatalf("%d checkpoints left", len(list))
	}
	// What is left restores.
	_, err = s.Restore(ctx, list[0].ID, []checkpoint.Tree{tree(root)}, checkpoint.RestoreOptions{})
	must(t, err)
	if b, _ := os.ReadFile(filepath.Join(root, "big")); b[0] != 'd' {
		t.Errorf("restored %q", b[:1])
	}
}

// Skip paths and mounts beneath a tree are neither recorded nor
// touched.
func TestSkipAndMounts(t *testing.T) {
	needRoot(t)
	s := newStore(t)
	root := t.TempDir()
	user := t.TempDir()
	write(t, filepath.Join(user, "notes.txt"), "the user's", 0o644)
	must(t, os.MkdirAll(filepath.Join(root, "mnt/notes"), 0o755))
	must(t, os.MkdirAll(filepath.Join(root, "srv/mounted"), 0o755))
	write(t, filepath.Join(root, "mnt/notes/under"), "beneath a mount point", 0o644)
	must(t, unix.Mount(user, filepath.Join(root, "srv/mounted"), "", unix.MS_BIND, ""))
	t.Cleanup(func() { unix.Unmount(filepath.Join(root, "srv/mounted"), unix.MNT_DETACH) })
	tr := tree(root)
	tr.Skip = []string{"mnt/notes"}
	cp := take(t, s, tr)
	// Everything goes, the mount and skip path included.
	must(t, os.RemoveAll(filepath.Join(root, "mnt/notes/under")))
	write(t, filepath.Join(root, "mnt/notes/added"), "x", 0o644)
	write(t, filepath.Join(root, "srv/mounted/added"), "x", 0o644)
	res, err := s.Restore(context.Background(), cp.ID, []checkpoint.Tree{tr}, checkpoint.RestoreOptions{})
	must(t, err)
	for _, p := range []string{"mnt/notes/added", "srv/mounted/added", "srv/mounted/notes.txt"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err != nil {
			t.Errorf("%s touched by the restore: %v", p, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "mnt/notes/under")); err == nil {
		t.Error("a skipped path was restored")
	}
	_ = res
}
