package hostfs

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSwapRace has a goroutine swap, under one name, a real entry and a
// symbolic link to an outside secret (RENAME_EXCHANGE, as fast as it
// can), while ReadFile reads through that name 2,000 times: it must
// never return the secret, and every failure must be ErrSymlink.
func TestSwapRace(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, root, out string) // makes root/x and root/y
		rel   string
	}{
		{"last component", func(t *testing.T, root, out string) {
			writeFile(t, filepath.Join(root, "x"), "public", 0o644)
			symlink(t, filepath.Join(out, "secret.txt"), filepath.Join(root, "y"))
		}, "x"},
		{"middle component", func(t *testing.T, root, out string) {
			writeFile(t, filepath.Join(root, "x/secret.txt"), "public", 0o644)
			symlink(t, out, filepath.Join(root, "y"))
		}, "x/secret.txt"},
	}
	for _, tt := range tests {
		for _, r := range resolvers() {
			t.Run(tt.name+"/"+r.name, func(t *testing.T) {
				d, root := openTree(t)
				out := outside(t)
				tt.setup(t, root, out)
				x, y := filepath.Join(root, "x"), filepath.Join(root, "y")

				stop := make(chan struct{})
				var wg sync.WaitGroup
				wg.Go(func() {
					for {
						select {
						case <-stop:
							return
						default:
						}
						if err := unix.Renameat2(unix.AT_FDCWD, x, unix.AT_FDCWD, y, unix.RENAME_EXCHANGE); err != nil {
							t.Errorf("swap: %v", err)
							return
						}
					}
				})
				var read, refused int
				for range 2000 {
					data, err := d.readFile(tt.rel, 1<<20, r.resolve)
					switch {
					case err == nil && string(data) == "public":
						read++
					case err == nil:
						t.Fatalf("ReadFile(%q) returned %q: it followed the link", tt.rel, data)
					case errors.Is(err, ErrSymlink):
						refused++
					default:
						t.Fatalf("ReadFile(%q): %v, want the file or ErrSymlink", tt.rel, err)
					}
				}
				close(stop)
				wg.Wait()
				t.Logf("%d reads of the real file, %d refused links", read, refused)
				unchanged(t, filepath.Join(out, "secret.txt"), secret)
				if _, err := os.Lstat(x); err != nil {
					t.Error(err)
				}
			})
		}
	}
}
