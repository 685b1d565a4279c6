package egress

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"path/filepath"
	"sync"
	"time"

	"den.dev/den/internal/privfile"
)

// CA is a computer's own certificate authority: den terminates TLS with
// certificates it signs, towards the hosts a secret is bound to (and to
// say in words why a connection was refused), and the computer trusts
// it (den installs it in the computer's trust store). Its key never
// leaves den's data dir.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

const (
	caLife   = 10 * 365 * 24 * time.Hour
	leafLife = 7 * 24 * time.Hour
)

// LoadCA loads the CA kept in dir (ca.key, mode 0600, and ca.pem), made
// there with name in its subject if there is none.
func LoadCA(dir, name string) (*CA, error) {
	keyPath, certPath := filepath.Join(dir, "ca.key"), filepath.Join(dir, "ca.pem")
	keyPEM, _, err := privfile.Read(keyPath, 64<<10)
	if errors.Is(err, fs.ErrNotExist) {
		if err := makeCA(keyPath, certPath, name); err != nil {
			return nil, fmt.Errorf("egress: make the CA in %s: %w", dir, err)
		}
		keyPEM, _, err = privfile.Read(keyPath, 64<<10)
	}
	if err != nil {
		return nil, fmt.Errorf("egress: CA key: %w", err)
	}
	certPEM, _, err := privfile.Read(certPath, 64<<10)
	if err != nil {
		return nil, fmt.Errorf("egress: CA certificate: %w", err)
	}
	kb, _ := pem.Decode(keyPEM)
	cb, _ := pem.Decode(certPEM)
	if kb == nil || cb == nil {
		return nil, fmt.Errorf("egress: the CA in %s is not PEM", dir)
	}
	key, err := x509.ParseECPrivateKey(kb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("egress: CA key: %w", err)
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return nil, fmt.Errorf("egress: CA certificate: %w", err)
	}
	return &CA{cert: cert, key: key, pem: pem.EncodeToMemory(cb), leaves: map[string]*tls.Certificate{}}, nil
}

func makeCA(keyPath, certPath, name string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"den"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caLife),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return err
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	// The certificate first: a CA whose key is there is complete.
	if err := privfile.Replace(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})); err != nil {
		return err
	}
	created, err := privfile.Create(keyPath, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}))
	if err == nil && !created {
		// Another den made one at the same moment: its certificate
		// must be the one beside its key. Make it again from that key.
		return errors.New("another den made this CA at the same time: try again")
	}
	return err
}

// SPKIHash is the base64 SHA-256 of the CA's public key, as Chromium's
// --ignore-certificate-errors-spki-list takes it.
func (ca *CA) SPKIHash() string {
	sum := sha256.Sum256(ca.cert.RawSubjectPublicKeyInfo)
	return base64.StdEncoding.EncodeToString(sum[:])
}

// PEM is the CA's certificate, for the computer's trust store.
func (ca *CA) PEM() []byte { return ca.pem }

// Fingerprint is the SHA-256 of the CA's certificate, for people.
func (ca *CA) Fingerprint() string {
	sum := sha256.Sum256(ca.cert.Raw)
	return fmt.Sprintf("%X", sum[:])
}

// leaf is a certificate for host signed by the CA, made once and kept
// until close to its end.
func (ca *CA) leaf(host string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.leaves[host]; ok && time.Until(c.Leaf.NotAfter) > time.Hour {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		DNSNames:     []string{host},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(leafLife),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: key, Leaf: leaf}
	if len(ca.leaves) > 1024 {
		clear(ca.leaves)
	}
	ca.leaves[host] = c
	return c, nil
}
