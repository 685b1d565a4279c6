package auth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestLoadTokenCreatesPrivateFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	tok, err := LoadToken(dir, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) != 43 {
		t.Errorf("token has %d characters, want 43 (32 bytes, base64url)", len(tok))
	}
	if err := checkToken(tok); err != nil {
		t.Error(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700 | os.ModeDir, filepath.Join(dir, tokenFile): 0o600} {
		fi, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode(), want)
		}
	}
	again, err := LoadToken(dir, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if again != tok {
		t.Error("a second LoadToken returned another token")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("data dir holds %v, want only the token file", entries)
	}
}

// TestLoadTokenConcurrentFirstUse starts several "processes" on an
// empty data dir at once: they must all end up with the one token in the
// file.
func TestLoadTokenConcurrentFirstUse(t *testing.T) {
	for range 20 {
		dir := t.TempDir()
		toks := make([]string, 8)
		var wg sync.WaitGroup
		for i := range toks {
			wg.Go(func() {
				var err error
				if toks[i], err = LoadToken(dir, noEnv); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		file, err := LoadToken(dir, noEnv)
		if err != nil {
			t.Fatal(err)
		}
		for i, tok := range toks {
			if tok != file {
				t.Fatalf("loader %d got a token that is not the file's", i)
			}
		}
	}
}

func TestLoadTokenEnvWins(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	const want = "a-token-from-the-environment"
	tok, err := LoadToken(dir, env(want))
	if err != nil {
		t.Fatal(err)
	}
	if tok != want {
		t.Errorf("LoadToken = %q, want DEN_TOKEN's", tok)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadToken with DEN_TOKEN wrote to the data dir (stat: %v)", err)
	}
}

func TestLoadTokenRefuses(t *testing.T) {
	const good = "0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, dir string) // makes dir/token
		env     string
		want    error
		message []string // in the error, besides never the token
	}{{
		name: "symlink",
		setup: func(t *testing.T, dir string) {
			target := filepath.Join(t.TempDir(), "elsewhere")
			writeToken(t, target, good, 0o600)
			if err := os.Symlink(target, filepath.Join(dir, tokenFile)); err != nil {
				t.Fatal(err)
			}
		},
		want:    ErrInsecureFile,
		message: []string{"symbolic link", "den token --rotate"},
	}, {
		name:    "group readable",
		setup:   func(t *testing.T, dir string) { writeToken(t, filepath.Join(dir, tokenFile), good, 0o640) },
		want:    ErrInsecureFile,
		message: []string{"0640", "den token --rotate"},
	}, {
		name:    "world readable",
		setup:   func(t *testing.T, dir string) { writeToken(t, filepath.Join(dir, tokenFile), good, 0o604) },
		want:    ErrInsecureFile,
		message: []string{"0604"},
	}, {
		name: "directory",
		setup: func(t *testing.T, dir string) {
			if err := os.Mkdir(filepath.Join(dir, tokenFile), 0o700); err != nil {
				t.Fatal(err)
			}
		},
		want:    ErrInsecureFile,
		message: []string{"not a regular file"},
	}, {
		name:    "short in file",
		setup:   func(t *testing.T, dir string) { writeToken(t, filepath.Join(dir, tokenFile), "0123456789abcde", 0o600) },
		want:    ErrInvalidToken,
		message: []string{"15 characters", "den token --rotate"},
	}, {
		name:    "short in env",
		env:     "0123456789abcde",
		want:    ErrInvalidToken,
		message: []string{"DEN_TOKEN", "15 characters"},
	}, {
		name:    "space in env",
		env:     "0123456789 abcdef0123",
		want:    ErrInvalidToken,
		message: []string{"DEN_TOKEN", "character 11"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.setup != nil {
				tc.setup(t, dir)
			}
			_, err := LoadToken(dir, env(tc.env))
			if !errors.Is(err, tc.want) {
				t.Fatalf("LoadToken: %v, want %v", err, tc.want)
			}
			if tc.setup != nil && !strings.Contains(err.Error(), filepath.Join(dir, tokenFile)) {
				t.Errorf("error %q does not name the file", err)
			}
			for _, m := range tc.message {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not say %q", err, m)
				}
			}
			for _, secret := range []string{good, "0123456789abcde", tc.env} {
				if secret != "" && strings.Contains(err.Error(), secret) {
					t.Errorf("error %q contains the token", err)
				}
			}
			if _, err := New(Options{DataDir: dir, Env: env(tc.env)}); !errors.Is(err, tc.want) {
				t.Errorf("New: %v, want %v", err, tc.want)
			}
		})
	}
}

func TestRotate(t *testing.T) {
	dir := t.TempDir()
	old, err := LoadToken(dir, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Rotate(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tok == old {
		t.Fatal("Rotate kept the token")
	}
	if got, err := LoadToken(dir, noEnv); err != nil || got != tok {
		t.Errorf("LoadToken after Rotate = %v, want the rotated token", err)
	}
	fi, err := os.Lstat(filepath.Join(dir, tokenFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode() != 0o600 {
		t.Errorf("rotated token file has mode %v, want 0600", fi.Mode())
	}
}

// writeToken writes a token file the way a person or another program
// might: in place, with the given mode.
func writeToken(t *testing.T, path, tok string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(tok+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}
