package checkpoint_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/checkpoint"
	"den.dev/den/internal/checkpoint/checkpointtest"
	"den.dev/den/internal/sandbox/sandboxtest"
)

func describe(t *testing.T, root string) []string {
	t.Helper()
	return checkpointtest.Describe(t, root)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, content string, mode os.FileMode) {
	t.Helper()
	must(t, os.MkdirAll(filepath.Dir(p), 0o755))
	must(t, os.WriteFile(p, []byte(content), mode))
	must(t, unix.Chmod(p, uint32(mode))) // os.Chmod drops setuid bits given as numbers
}

func newStore(t *testing.T) *checkpoint.Store {
	t.Helper()
	s, err := checkpoint.Open(filepath.Join(t.TempDir(), "checkpoints"))
	must(t, err)
	return s
}

func take(t *testing.T, s *checkpoint.Store, trees ...checkpoint.Tree) checkpoint.Checkpoint {
	t.Helper()
	c, err := s.Take(context.Background(), trees, checkpoint.TakeOptions{Reason: "test"})
	must(t, err)
	return c
}

func tree(path string) checkpoint.Tree {
	return checkpoint.Tree{Name: "rootfs", Guest: "/", Path: path}
}

func needRoot(t *testing.T) {
	t.Helper()
	sandboxtest.NeedRoot(t, "owners, devices and mounts need root")
}
