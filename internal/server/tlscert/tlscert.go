package tlscert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"den.dev/den/internal/privfile"
)

const (
	certFile = "cert.pem"
	keyFile  = "key.pem"

	// maxLifetime is the longest validity Apple's clients accept for a TLS
	// server certificate: "TLS server certificates must have a validity
	// period of 825 days or fewer (as expressed in the NotBefore and
	// NotAfter fields of the certificate)" — "Requirements for trusted
	// certificates in iOS 13 and macOS 10.15",
	// https://support.apple.com/en-us/103769 (formerly HT210176). The
	// 398-day limit of September 2020 ("About upcoming limits on trusted
	// certificates", HT211025) covers only certificates from roots Apple
	// ships, not ones the user chose to trust, as here.
	maxLifetime = 825 * 24 * time.Hour

	// lifetime keeps a day in hand below maxLifetime: RFC 5280 counts both
	// NotBefore and NotAfter as inside the period, so exactly 825 days
	// would be 825 days and a second.
	lifetime = maxLifetime - 24*time.Hour

	// renewBefore is how much validity a stored certificate must have
	// left to be reused, so that a phone never meets an expired one while
	// den runs on between restarts.
	renewBefore = 30 * 24 * time.Hour

	// backdate moves NotBefore back to allow for a phone whose clock runs
	// behind this machine's.
	backdate = time.Hour

	// maxPEM bounds what is read from either file; ours are under 2 KiB.
	maxPEM = 64 << 10
)

// Info describes the certificate LoadOrCreate returns, for den serve to
// print so that the user can compare it with what the phone shows.
type Info struct {
	// Created is true when LoadOrCreate made a new certificate, false
	// when it reused the stored one.
	Created bool

	// Fingerprint is the SHA-256 of the certificate's DER form as
	// browsers show it: upper-case hex bytes joined by colons.
	Fingerprint string

	NotBefore, NotAfter time.Time

	// SANs are the certificate's subject alternative names: DNS names
	// first, then IP addresses, in the certificate's order.
	SANs []string

	// CertFile and KeyFile are the paths of cert.pem and key.pem.
	CertFile, KeyFile string
}

// LoadOrCreate returns the certificate kept in dir, making it first when
// dir has none or the stored one will not do: it must name every host
// (DNS names and IP addresses, matched exactly, never by wildcard), have
// more than 30 days left at now, be valid already at now, and meet the
// rules phones apply (server-auth usage, at most 825 days long). hosts
// must not be empty; HostNames gives the usual set.
//
// A new certificate has an ECDSA P-256 key, a random 128-bit serial,
// 824 days of validity from an hour before now, key usage
// DigitalSignature, extended key usage ServerAuth, and is not a CA.
//
// Errors: ErrHost or ErrNoHosts for bad hosts; ErrKeySymlink or
// ErrKeyExposed for a key.pem den will not use; ErrCorrupt for a file
// that does not parse. None of these replaces a file.
func LoadOrCreate(dir string, hosts []string, now time.Time) (tls.Certificate, Info, error) {
	names, ips, err := parseHosts(hosts)
	if err != nil {
		return tls.Certificate{}, Info{}, err
	}
	if err := privateDir(dir); err != nil {
		return tls.Certificate{}, Info{}, err
	}
	certPath, keyPath := filepath.Join(dir, certFile), filepath.Join(dir, keyFile)
	cert, found, err := load(certPath, keyPath)
	if err != nil {
		return tls.Certificate{}, Info{}, err
	}
	created := false
	if !found || !usable(cert.Leaf, names, ips, now) {
		cert, err = create(dir, names, ips, now)
		if err != nil {
			return tls.Certificate{}, Info{}, err
		}
		created = true
	}
	return cert, describe(cert.Leaf, created, certPath, keyPath), nil
}

// Fingerprint returns the SHA-256 of a DER certificate in the form
// browsers show: upper-case hex bytes joined by colons.
func Fingerprint(der []byte) string {
	sum := sha256.Sum256(der)
	parts := make([]string, len(sum))
	for i, b := range sum {
		parts[i] = strings.ToUpper(hex.EncodeToString([]byte{b}))
	}
	return strings.Join(parts, ":")
}

// privateDir makes dir (mode 0700) or, when it exists, narrows its mode
// to 0700.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("tlscert: make %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("tlscert: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("tlscert: %s is not a folder", dir)
	}
	if fi.Mode().Perm() != 0o700 {
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("tlscert: make %s private: %w", dir, err)
		}
	}
	return nil
}

// load reads the stored pair. found is false, with no error, when either
// file is missing or the key does not match the certificate.
func load(certPath, keyPath string) (cert tls.Certificate, found bool, err error) {
	keyPEM, err := readKey(keyPath)
	var tooLarge *privfile.RefusedError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return tls.Certificate{}, false, nil
	case errors.As(err, &tooLarge):
		return tls.Certificate{}, false, corrupt(keyPath, err, certPath, keyPath)
	case err != nil:
		return tls.Certificate{}, false, err
	}
	certPEM, err := readLimited(certPath)
	if errors.Is(err, fs.ErrNotExist) {
		return tls.Certificate{}, false, nil
	}
	if err != nil {
		return tls.Certificate{}, false, fmt.Errorf("tlscert: read %s: %w", certPath, err)
	}
	leaf, err := parseCert(certPEM)
	if err != nil {
		return tls.Certificate{}, false, corrupt(certPath, err, certPath, keyPath)
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return tls.Certificate{}, false, corrupt(keyPath, err, certPath, keyPath)
	}
	pub, ok := leaf.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(key.Public()) {
		return tls.Certificate{}, false, nil
	}
	return tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: key, Leaf: leaf}, true, nil
}

func corrupt(path string, detail error, certPath, keyPath string) error {
	return fmt.Errorf("tlscert: %s %w (%v); delete %s and %s to make a new certificate",
		path, ErrCorrupt, detail, certPath, keyPath)
}

// readKey reads key.pem after checking that it is a regular file, not a
// symbolic link, of mode 0600 or narrower and owned by den's user. The
// checks are made before the open too, so that a key den may not open
// (another user's) is called exposed rather than unreadable; the file is
// then read with privfile.Read, which checks the opened file again, so a
// swap between the check and the open is caught. A key over maxPEM bytes
// is privfile's *RefusedError (TooLarge), for load to call corrupt.
func readKey(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("tlscert: %w", err)
	}
	if err := privateFile(path, fi); err != nil {
		return nil, err
	}
	data, open, err := privfile.Read(path, maxPEM)
	var refused *privfile.RefusedError
	switch {
	case errors.As(err, &refused) && refused.Reason == privfile.TooLarge:
		return nil, err
	case errors.As(err, &refused) && refused.Reason == privfile.Symlink:
		return nil, fmt.Errorf("tlscert: %s %w", path, ErrKeySymlink)
	case errors.As(err, &refused):
		return nil, fmt.Errorf("tlscert: %s %w", path, ErrKeyExposed)
	case err != nil && open != nil: // opened, then the read failed
		return nil, fmt.Errorf("tlscert: read %s: %w", path, err)
	case err != nil:
		return nil, fmt.Errorf("tlscert: %w", err)
	}
	if !os.SameFile(fi, open) {
		return nil, fmt.Errorf("tlscert: %s %w", path, ErrKeyExposed)
	}
	if err := privateFile(path, open); err != nil {
		return nil, err
	}
	return data, nil
}

// privateFile checks fi, the key file's own metadata (not a link's
// target's).
func privateFile(path string, fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("tlscert: %s %w", path, ErrKeySymlink)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("tlscert: %s %w", path, ErrKeyExposed)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Geteuid() {
		return fmt.Errorf("tlscert: %s %w", path, ErrKeyExposed)
	}
	return nil
}

func readLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxPEM))
}

// parseCert returns the first CERTIFICATE block of data, parsed.
func parseCert(data []byte) (*x509.Certificate, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no CERTIFICATE block")
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}

// parseKey returns the first private key block of data, parsed: PKCS #8
// as den writes it, or SEC 1 ("EC PRIVATE KEY").
func parseKey(data []byte) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no PRIVATE KEY block")
		}
		var key any
		var err error
		switch block.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, err
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("a %T cannot sign", key)
		}
		return signer, nil
	}
}

// usable reports whether a stored certificate may be served for names
// and ips at now.
func usable(leaf *x509.Certificate, names []string, ips []netip.Addr, now time.Time) bool {
	if now.Before(leaf.NotBefore) || leaf.NotAfter.Sub(now) <= renewBefore {
		return false
	}
	if leaf.NotAfter.Sub(leaf.NotBefore) > maxLifetime || !slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
		return false
	}
	for _, n := range names {
		if !slices.ContainsFunc(leaf.DNSNames, func(d string) bool { return strings.EqualFold(d, n) }) {
			return false
		}
	}
	for _, ip := range ips {
		if !slices.ContainsFunc(leaf.IPAddresses, func(c net.IP) bool {
			a, ok := netip.AddrFromSlice(c)
			return ok && a.Unmap() == ip
		}) {
			return false
		}
	}
	return true
}

// create makes a new key and certificate and stores them in dir, the key
// first (see the package doc on interrupted writes).
func create(dir string, names []string, ips []netip.Addr, now time.Time) (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlscert: generate key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return tls.Certificate{}, err
	}
	notBefore := now.Add(-backdate).UTC().Truncate(time.Second)
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{Organization: []string{"den"}, CommonName: "den"},
		NotBefore:             notBefore,
		NotAfter:              notBefore.Add(lifetime),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  false,
		DNSNames:              names,
	}
	for _, ip := range ips {
		tmpl.IPAddresses = append(tmpl.IPAddresses, net.IP(ip.AsSlice()))
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlscert: create certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlscert: parse new certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("tlscert: encode key: %w", err)
	}
	if err := writeAtomic(dir, keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return tls.Certificate{}, err
	}
	if err := writeAtomic(dir, certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		return tls.Certificate{}, err
	}
	if err := syncDir(dir); err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}

// randomSerial returns a uniformly random positive serial below 2^128.
func randomSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	for {
		n, err := rand.Int(rand.Reader, limit)
		if err != nil {
			return nil, fmt.Errorf("tlscert: serial: %w", err)
		}
		if n.Sign() > 0 {
			return n, nil
		}
	}
}

func describe(leaf *x509.Certificate, created bool, certPath, keyPath string) Info {
	sans := slices.Clone(leaf.DNSNames)
	for _, ip := range leaf.IPAddresses {
		sans = append(sans, ip.String())
	}
	return Info{
		Created:     created,
		Fingerprint: Fingerprint(leaf.Raw),
		NotBefore:   leaf.NotBefore,
		NotAfter:    leaf.NotAfter,
		SANs:        sans,
		CertFile:    certPath,
		KeyFile:     keyPath,
	}
}
