package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestReadFileAs checks, with den as root, that the kernel checks a
// read as the identity: what it may not read is refused, what it may
// is read.
func TestReadFileAs(t *testing.T) {
	needRoot(t)
	d, root := openTree(t)
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	file := func(rel string, uid, gid int, mode os.FileMode) {
		p := filepath.Join(root, rel)
		writeFile(t, p, "content of "+rel, mode)
		chown(t, p, uid, gid)
	}
	file("other600", nobody, nobody, 0o600)
	file("other644", nobody, nobody, 0o644)
	file("mine600", otherID, otherID, 0o600)
	file("group640", nobody, otherGrp, 0o640)
	file("gid640", nobody, otherID, 0o640)
	file("root600", 0, 0, 0o600)
	file("locked/f.txt", nobody, nobody, 0o644)
	if err := os.Chmod(filepath.Join(root, "locked"), 0o700); err != nil {
		t.Fatal(err)
	}
	chown(t, filepath.Join(root, "locked"), nobody, nobody)
	symlink(t, "other644", filepath.Join(root, "link"))

	plain := &Identity{UID: otherID, GID: otherID}
	grouped := &Identity{UID: otherID, GID: otherID, Groups: []int{otherGrp, 7}}
	tests := []struct {
		name string
		rel  string
		id   *Identity
		want error // nil: read
	}{
		{"0600 of another uid", "other600", plain, fs.ErrPermission},
		{"0644 of another uid", "other644", plain, nil},
		{"in a 0700 folder of another uid", "locked/f.txt", plain, fs.ErrPermission},
		{"0600 of the identity's uid", "mine600", plain, nil},
		{"0640 of a supplementary group", "group640", grouped, nil},
		{"0640 of a group the identity lacks", "group640", plain, fs.ErrPermission},
		{"0640 of the identity's gid", "gid640", plain, nil},
		{"0600 of root", "root600", grouped, fs.ErrPermission},
		{"a symbolic link", "link", plain, ErrSymlink},
		{"nil identity: den's own rights", "other600", nil, nil},
		{"den's own ids: den's own rights", "other600", &Identity{UID: 0, GID: 0}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := d.ReadFileAs(tt.rel, 1<<20, tt.id)
			if tt.want != nil {
				if !errors.Is(err, tt.want) {
					t.Fatalf("ReadFileAs(%q) = %q, %v; want %v", tt.rel, data, err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadFileAs(%q): %v", tt.rel, err)
			}
			if want := "content of " + tt.rel; string(data) != want {
				t.Errorf("ReadFileAs(%q) = %q, want %q", tt.rel, data, want)
			}
		})
	}

	// An identity the kernel cannot take is refused before any read.
	for _, id := range []*Identity{{UID: -1, GID: 0}, {UID: otherID, GID: -2}, {UID: otherID, GID: otherID, Groups: []int{-1}}} {
		if data, err := d.ReadFileAs("other644", 1<<20, id); err == nil {
			t.Errorf("ReadFileAs as %+v = %q, want an error", id, data)
		}
	}
}

// TestReadFileAsLeavesDen checks that reading as another identity
// leaves no thread of den with its credentials: after many reads as the
// identity, at once, den still reads a 0600 file of root's on every
// thread, and every thread of the process has den's credentials again.
func TestReadFileAsLeavesDen(t *testing.T) {
	needRoot(t)
	d, root := openTree(t)
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "root600"), "root's", 0o600)
	writeFile(t, filepath.Join(root, "public"), "public", 0o644)
	before, err := unix.Getgroups()
	if err != nil {
		t.Fatal(err)
	}
	id := &Identity{UID: otherID, GID: otherID, Groups: []int{otherGrp}}

	var wg sync.WaitGroup
	errs := make(chan error, 400)
	for range 100 {
		wg.Go(func() {
			if _, err := d.ReadFileAs("public", 1<<20, id); err != nil {
				errs <- fmt.Errorf("ReadFileAs public: %w", err)
			}
			if _, err := d.ReadFileAs("root600", 1<<20, id); !errors.Is(err, fs.ErrPermission) {
				errs <- fmt.Errorf("ReadFileAs root600: %v, want a permission error", err)
			}
		})
	}
	wg.Wait()
	for range 100 {
		wg.Go(func() {
			if _, err := d.ReadFile("root600", 1<<20); err != nil {
				errs <- fmt.Errorf("ReadFile root600 as den afterwards: %w", err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if data, err := d.ReadFile("root600", 1<<20); err != nil || string(data) != "root's" {
		t.Errorf("ReadFile root600 as den afterwards = %q, %v", data, err)
	}
	if after, err := unix.Getgroups(); err != nil || !slices.Equal(after, before) {
		t.Errorf("den's groups were %v, are %v (%v)", before, after, err)
	}

	// The threads that read as id end as their goroutines return; give
	// them time to go (a hang detector, not a timing).
	want := fmt.Sprint(before)
	deadline := time.Now().Add(10 * time.Second)
	for {
		odd := oddThreads(t, want)
		if len(odd) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("threads still with other credentials 10 s on: %v", odd)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// oddThreads lists this process's threads whose fsuid, fsgid or groups
// are not root's and groups (as fmt prints a []int).
func oddThreads(t *testing.T, groups string) []string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var odd []string
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join("/proc/self/task", task.Name(), "status"))
		if err != nil {
			continue // the thread has just ended
		}
		var uid, gid, grp string
		for line := range strings.SplitSeq(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			switch k {
			case "Uid":
				uid = strings.Join(strings.Fields(v), " ")
			case "Gid":
				gid = strings.Join(strings.Fields(v), " ")
			case "Groups":
				grp = "[" + strings.Join(strings.Fields(v), " ") + "]"
			}
		}
		if uid != "0 0 0 0" || gid != "0 0 0 0" || grp != groups {
			odd = append(odd, fmt.Sprintf("task %s: Uid %s, Gid %s, Groups %s", task.Name(), uid, gid, grp))
		}
	}
	return odd
}

// TestReadFileAsIsReadFile checks the cases where ReadFileAs is
// ReadFile: no identity, den's own, or den not root (when it cannot
// change its credentials, it reads with its own rights).
func TestReadFileAsIsReadFile(t *testing.T) {
	d, root := openTree(t)
	writeFile(t, filepath.Join(root, "mine600"), "mine", 0o600)
	ids := []*Identity{nil, {UID: os.Geteuid(), GID: os.Getegid()}}
	if !isRoot() {
		ids = append(ids, &Identity{UID: otherID, GID: otherID})
	}
	for _, id := range ids {
		if data, err := d.ReadFileAs("mine600", 1<<20, id); err != nil || string(data) != "mine" {
			t.Errorf("ReadFileAs as %+v = %q, %v; want %q", id, data, err, "mine")
		}
	}
	if _, err := d.ReadFileAs("nope", 1<<20, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFileAs of a missing file: %v, want fs.ErrNotExist", err)
	}
}
