package auth

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

const (
	// envToken names the variable that sets the token instead of the file.
	envToken = "DEN_TOKEN"
	// tokenFile is the token's file name in the data dir.
	tokenFile = "token"
	// minToken is the shortest token accepted, from either source.
	minToken = 16
	// maxTokenFile bounds what is read from the token file.
	maxTokenFile = 4096
)

// LoadToken returns den's token: DEN_TOKEN from env if it is set (nothing
// is written then), else the content of dataDir/token, which is created
// on first use (dataDir too, with mode 0700, if missing). env is
// os.Getenv when nil. A token file that is a symbolic link or that group
// or others may read is refused rather than used or replaced.
func LoadToken(dataDir string, env func(string) string) (string, error) {
	if env == nil {
		env = os.Getenv
	}
	if t := env(envToken); t != "" {
		if err := checkToken(t); err != nil {
			return "", fmt.Errorf("auth: %s: %w; set it to at least %d printable ASCII characters, or unset it to use the token file", envToken, err, minToken)
		}
		return t, nil
	}
	t, _, err := loadFile(dataDir)
	return t, err
}

// Rotate writes a new token to dataDir/token, replacing the old one
// atomically, and returns it. Every cookie session ends with the old
// token, in this process and in a running daemon, which notices the new
// file. DEN_TOKEN is not consulted: a daemon that runs with it set keeps
// its token.
func Rotate(dataDir string) (string, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("auth: rotate token: %w", err)
	}
	t := newToken()
	tmp, err := writeTemp(dataDir, t)
	if err != nil {
		return "", fmt.Errorf("auth: rotate token: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dataDir, tokenFile)); err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("auth: rotate token: %w", err)
	}
	if err := syncDir(dataDir); err != nil {
		return "", fmt.Errorf("auth: rotate token: %w", err)
	}
	return t, nil
}

// newToken is 32 random bytes, base64url-encoded without padding: 43
// characters that need no escaping in a header, cookie or URL.
func newToken() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand crashes the program instead)
	return base64.RawURLEncoding.EncodeToString(b)
}

// checkToken refuses tokens too short to resist guessing and tokens that
// cannot travel in an Authorization header unharmed.
func checkToken(t string) error {
	if len(t) < minToken {
		return fmt.Errorf("%w: it has %d characters, fewer than %d", ErrInvalidToken, len(t), minToken)
	}
	for i := 0; i < len(t); i++ {
		if t[i] <= ' ' || t[i] >= 0x7f {
			return fmt.Errorf("%w: character %d is a space, a control character or not ASCII", ErrInvalidToken, i+1)
		}
	}
	return nil
}

// loadFile reads dataDir/token, creating it if it does not exist, and
// returns the token with the file's info.
func loadFile(dataDir string) (string, os.FileInfo, error) {
	path := filepath.Join(dataDir, tokenFile)
	t, fi, err := readToken(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return t, fi, err
	}
	if err := create(dataDir); err != nil {
		return "", nil, fmt.Errorf("auth: create token: %w", err)
	}
	return readToken(path)
}

// create writes a new token file unless one appears meanwhile: the temp
// file is hard-linked to the name, which fails if the name exists, so
// two processes starting at once agree on one token. Where hard links
// are not allowed (Android's app storage) it falls back to a rename.
func create(dataDir string) error {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return err
	}
	tmp, err := writeTemp(dataDir, newToken())
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	err = os.Link(tmp, filepath.Join(dataDir, tokenFile))
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil
	case err != nil:
		if err := os.Rename(tmp, filepath.Join(dataDir, tokenFile)); err != nil {
			return err
		}
	}
	return syncDir(dataDir)
}

// writeTemp writes t to a new file in dir, created with O_EXCL and mode
// 0600 by os.CreateTemp, and flushed to disk; it returns the file's
// path.
func writeTemp(dir, t string) (string, error) {
	f, err := os.CreateTemp(dir, ".token-*")
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(t + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// syncDir makes a rename or link in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// readToken reads and checks the token file at path. It opens without
// following a symbolic link and without blocking on a named pipe, then
// checks the opened file itself, so a swap between check and read
// changes nothing. The returned info is the opened file's; it is
// returned with errors too when the file could be opened, so that a
// watcher can tell when a refused file has changed.
func readToken(path string) (string, os.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return "", nil, fmt.Errorf("auth: %s: %w: it is a symbolic link; remove it, then run `den token --rotate`", path, ErrInsecureFile)
	}
	if err != nil {
		return "", nil, fmt.Errorf("auth: read token: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", nil, fmt.Errorf("auth: read token: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return "", fi, fmt.Errorf("auth: %s: %w: it is not a regular file; remove it, then run `den token --rotate`", path, ErrInsecureFile)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fi, fmt.Errorf("auth: %s: %w: its mode %04o lets group or others at it; run `den token --rotate` to replace it with a private one (chmod 600 would keep a token that may have leaked)", path, ErrInsecureFile, perm)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenFile+1))
	if err != nil {
		return "", fi, fmt.Errorf("auth: read token: %w", err)
	}
	if len(b) > maxTokenFile {
		return "", fi, fmt.Errorf("auth: %s: %w: the file is over %d bytes; run `den token --rotate`", path, ErrInvalidToken, maxTokenFile)
	}
	t := string(bytes.TrimSpace(b)) // the newline an editor or echo leaves
	if err := checkToken(t); err != nil {
		return "", fi, fmt.Errorf("auth: %s: %w; run `den token --rotate`", path, err)
	}
	return t, fi, nil
}
