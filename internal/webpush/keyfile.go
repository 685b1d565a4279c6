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
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
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
	if err := createKey(dir); err != nil {
		return nil, fmt.Errorf("webpush: create %s: %w", path, err)
	}
	return readKey(path)
}

// createKey writes a new key to dir/vapid.key unless one appears
// meanwhile. Where hard links are not allowed (Android's app storage)
// it falls back to a rename.
func createKey(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".vapid-*") // O_EXCL, mode 0600
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	err = pem.Encode(f, &pem.Block{Type: "PRIVATE KEY", Bytes: der})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	err = os.Link(tmp, filepath.Join(dir, KeyFile))
	switch {
	case errors.Is(err, fs.ErrExist):
		return nil // another process was first: its key is the one
	case err != nil:
		if err := os.Rename(tmp, filepath.Join(dir, KeyFile)); err != nil {
			return err
		}
	}
	return syncDir(dir)
}

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

// readKey reads and checks the key file. It opens without following a
// symbolic link and without blocking on a named pipe, then checks the
// opened file itself, so that a swap between check and read changes
// nothing.
func readKey(path string) (*Keys, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("webpush: %s: %w: it is a symbolic link; remove it and den makes a new key (subscribed browsers then subscribe again)", path, ErrInsecureKey)
	}
	if err != nil {
		return nil, fmt.Errorf("webpush: read key: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("webpush: read key: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("webpush: %s: %w: it is not a regular file; remove it and den makes a new key", path, ErrInsecureKey)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("webpush: %s: %w: its mode %04o lets group or others read it; remove it and den makes a new key (chmod 600 would keep a key that may have leaked)", path, ErrInsecureKey, perm)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("webpush: read key: %w", err)
	}
	if len(b) > maxKeyFile {
		return nil, fmt.Errorf("webpush: %s: over %d bytes, not a key file", path, maxKeyFile)
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
