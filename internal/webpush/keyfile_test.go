package webpush

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// TestLoadKeysCreatesPrivateFile: the first load makes the folder (0700)
// and the key file (0600, PKCS#8 PEM); the next load reads the same key.
func TestLoadKeysCreatesPrivateFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "push")
	k1, err := LoadKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, KeyFile): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, KeyFile))
	if !bytes.HasPrefix(b, []byte("-----BEGIN PRIVATE KEY-----\n")) {
		t.Errorf("the key file is not PKCS#8 PEM:\n%s", b)
	}
	k2, err := LoadKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(k1.PublicKey(), k2.PublicKey()) || len(k1.PublicKey()) != 65 || k1.PublicKey()[0] != 4 {
		t.Errorf("a second load gave another key, or not an uncompressed point")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the folder holds %d files, want only the key", len(ents))
	}
}

// TestLoadKeysAtOnce: processes that start together agree on one key.
func TestLoadKeysAtOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "push")
	keys := make([][]byte, 8)
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() {
			k, err := LoadKeys(dir)
			if err != nil {
				t.Error(err)
				return
			}
			keys[i] = k.PublicKey()
		})
	}
	wg.Wait()
	for _, k := range keys[1:] {
		if !bytes.Equal(k, keys[0]) {
			t.Fatal("loads at the same time made different keys")
		}
	}
}

// TestLoadKeysRefusesInsecureFiles: a symbolic link (even to a good
// key), a key readable by others, a folder or a named pipe in its place
// are refused with ErrInsecureKey, and left as they are.
func TestLoadKeysRefusesInsecureFiles(t *testing.T) {
	good := t.TempDir()
	if _, err := LoadKeys(good); err != nil {
		t.Fatal(err)
	}
	for name, mk := range map[string]func(path string) error{
		"symlink": func(path string) error { return os.Symlink(filepath.Join(good, KeyFile), path) },
		"mode 0644": func(path string) error {
			b, _ := os.ReadFile(filepath.Join(good, KeyFile))
			if err := os.WriteFile(path, b, 0o600); err != nil {
				return err
			}
			return os.Chmod(path, 0o644)
		},
		"mode 0640": func(path string) error {
			b, _ := os.ReadFile(filepath.Join(good, KeyFile))
			if err := os.WriteFile(path, b, 0o600); err != nil {
				return err
			}
			return os.Chmod(path, 0o640)
		},
		"directory": func(path string) error { return os.Mkdir(path, 0o700) },
		"fifo":      func(path string) error { return syscall.Mkfifo(path, 0o600) },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, KeyFile)
			if err := mk(path); err != nil {
				t.Fatal(err)
			}
			before, _ := os.Lstat(path)
			_, err := LoadKeys(dir)
			if !errors.Is(err, ErrInsecureKey) {
				t.Fatalf("%v, want ErrInsecureKey", err)
			}
			t.Log(err)
			after, _ := os.Lstat(path)
			if before.Mode() != after.Mode() || before.ModTime() != after.ModTime() {
				t.Error("the refused file was changed")
			}
		})
	}
}

func TestLoadKeysRefusesOtherKeys(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, KeyFile), []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKeys(dir); err == nil {
		t.Error("a file without a key was accepted")
	}
}
