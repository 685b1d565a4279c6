package auth

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"den.dev/den/internal/privfile"
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
	t := newToken()
	if err := privfile.Replace(filepath.Join(dataDir, tokenFile), []byte(t+"\n")); err != nil {
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
// returns the token with the file's info. Of processes starting at once
// on an empty data dir, one creates the file and all read its token.
func loadFile(dataDir string) (string, os.FileInfo, error) {
	path := filepath.Join(dataDir, tokenFile)
	t, fi, err := readToken(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return t, fi, err
	}
	if _, err := privfile.Create(path, []byte(newToken()+"\n")); err != nil {
		return "", nil, fmt.Errorf("auth: create token: %w", err)
	}
	return readToken(path)
}

// readToken reads and checks the token file at path, as privfile.Read
// does: a swap of the file between check and read changes nothing. The
// returned info is the opened file's; it is returned with errors too
// when the file could be opened, so that a watcher can tell when a
// refused file has changed.
func readToken(path string) (string, os.FileInfo, error) {
	b, fi, err := privfile.Read(path, maxTokenFile)
	var refused *privfile.RefusedError
	switch {
	case errors.As(err, &refused):
		return "", fi, refusedFile(path, refused)
	case err != nil:
		return "", fi, fmt.Errorf("auth: read token: %w", err)
	}
	t := string(bytes.TrimSpace(b)) // the newline an editor or echo leaves
	if err := checkToken(t); err != nil {
		return "", fi, fmt.Errorf("auth: %s: %w; run `den token --rotate`", path, err)
	}
	return t, fi, nil
}

// refusedFile says why the token file at path is not used, and what to
// do about it.
func refusedFile(path string, err *privfile.RefusedError) error {
	switch err.Reason {
	case privfile.TooLarge:
		return fmt.Errorf("auth: %s: %w: %v; run `den token --rotate`", path, ErrInvalidToken, err)
	case privfile.Shared:
		return fmt.Errorf("auth: %s: %w: %v; run `den token --rotate` to replace it with a private one (chmod 600 would keep a token that may have leaked)", path, ErrInsecureFile, err)
	default:
		return fmt.Errorf("auth: %s: %w: %v; remove it, then run `den token --rotate`", path, ErrInsecureFile, err)
	}
}
