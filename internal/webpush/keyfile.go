package webpush

import (
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"den.dev/den/internal/privfile"
)

// KeyFile is the key's file name in the folder LoadKeys is given.
const KeyFile = "vapid.key"

// maxKeyFile bounds what is read from the key file.
const maxKeyFile = 8192

// LoadKeys returns the VAPID key pair kept in dir/vapid.key, creating
// it (and dir, mode 0700) on first use. The file is created whole under
// a temporary name and linked into place, which fails when the name
// exists, so two processes starting at once end up with the same key.
// A file that is a symbolic link, not a regular file, or readable by
// group or others is refused with an error wrapping ErrInsecureKey.
func LoadKeys(dir string) (*Keys, error) {
	path := filepath.Join(dir, KeyFile)
	k, err := readKey(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	if err := createKey(path); err != nil {
		return nil, fmt.Errorf("webpush: create %s: %w", path, err)
	}
	return readKey(path)
}

// createKey writes a new key to path unless one appears meanwhile:
// another process's key is then the one.
func createKey(path string) error {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return err
	}
	_, err = privfile.Create(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	return err
}

// readKey reads and checks the key file, as privfile.Read does: a swap
// of the file between check and read changes nothing.
func readKey(path string) (*Keys, error) {
	b, _, err := privfile.Read(path, maxKeyFile)
	var refused *privfile.RefusedError
	switch {
	case errors.As(err, &refused):
		return nil, refusedFile(path, refused)
	case err != nil:
		return nil, fmt.Errorf("webpush: read key: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, fmt.Errorf("webpush: %s: no PKCS#8 PEM private key in it", path)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("webpush: %s: %w", path, err)
	}
	priv, ok := parsed.(*ecdsa.PrivateKey)
	if !ok || priv.Curve != elliptic.P256() {
		return nil, fmt.Errorf("webpush: %s: the key is not a P-256 ECDSA key", path)
	}
	return newKeys(priv)
}

// refusedFile says why the key file at path is not used, and what to do
// about it.
func refusedFile(path string, err *privfile.RefusedError) error {
	switch err.Reason {
	case privfile.TooLarge:
		return fmt.Errorf("webpush: %s: over %d bytes, not a key file", path, err.Max)
	case privfile.Shared:
		return fmt.Errorf("webpush: %s: %w: its mode %04o lets group or others read it; remove it and den makes a new key (chmod 600 would keep a key that may have leaked)", path, ErrInsecureKey, err.Mode)
	case privfile.Symlink:
		return fmt.Errorf("webpush: %s: %w: %v; remove it and den makes a new key (subscribed browsers then subscribe again)", path, ErrInsecureKey, err)
	default:
		return fmt.Errorf("webpush: %s: %w: %v; remove it and den makes a new key", path, ErrInsecureKey, err)
	}
}

func newKeys(priv *ecdsa.PrivateKey) (*Keys, error) {
	pub, err := priv.PublicKey.ECDH()
	if err != nil {
		return nil, fmt.Errorf("webpush: key: %w", err)
	}
	if pub.Curve() != ecdh.P256() {
		return nil, fmt.Errorf("webpush: key: not on P-256")
	}
	return &Keys{private: priv, public: pub.Bytes()}, nil
}
