package tlscert

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	hosts = []string{"localhost", "den.example", "127.0.0.1", "::1", "192.168.1.20"}
	t0    = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

func mustCreate(t *testing.T, dir string, hosts []string, now time.Time) (tls.Certificate, Info) {
	t.Helper()
	cert, info, err := LoadOrCreate(dir, hosts, now)
	if err != nil {
		t.Fatalf("LoadOrCreate: %v", err)
	}
	return cert, info
}

func TestNewCertificate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	cert, info := mustCreate(t, dir, hosts, t0)
	leaf := cert.Leaf
	if !info.Created {
		t.Error("Created = false for an empty folder")
	}
	sum := sha256.Sum256(leaf.Raw)
	if got := strings.ReplaceAll(info.Fingerprint, ":", ""); !strings.EqualFold(got, fmt.Sprintf("%x", sum)) {
		t.Errorf("Fingerprint %s is not the SHA-256 of the certificate", info.Fingerprint)
	}
	if len(info.Fingerprint) != 32*3-1 || info.Fingerprint != strings.ToUpper(info.Fingerprint) {
		t.Errorf("Fingerprint %q: want 32 upper-case hex bytes joined by colons", info.Fingerprint)
	}
	if diff := cmp.Diff([]string{"localhost", "den.example", "127.0.0.1", "::1", "192.168.1.20"}, info.SANs); diff != "" {
		t.Errorf("SANs (-want +got):\n%s", diff)
	}
	if !info.NotAfter.Equal(leaf.NotAfter) || info.CertFile != filepath.Join(dir, "cert.pem") || info.KeyFile != filepath.Join(dir, "key.pem") {
		t.Errorf("Info = %+v, does not describe the certificate", info)
	}

	pub, ok := leaf.PublicKey.(*ecdsa.PublicKey)
	if !ok || pub.Curve != elliptic.P256() {
		t.Errorf("public key %T, want ECDSA P-256", leaf.PublicKey)
	}
	if leaf.SerialNumber.Sign() <= 0 || leaf.SerialNumber.BitLen() > 128 {
		t.Errorf("serial %v: want positive, at most 128 bits", leaf.SerialNumber)
	}
	if d := leaf.NotAfter.Sub(leaf.NotBefore); d > 825*24*time.Hour {
		t.Errorf("validity %v exceeds Apple's 825 days", d)
	}
	if leaf.NotBefore.After(t0) || leaf.NotAfter.Sub(t0) < 800*24*time.Hour {
		t.Errorf("validity %v to %v does not start before %v and run ~825 days", leaf.NotBefore, leaf.NotAfter, t0)
	}
	if leaf.KeyUsage != x509.KeyUsageDigitalSignature {
		t.Errorf("KeyUsage = %v, want DigitalSignature only", leaf.KeyUsage)
	}
	if !slices.Equal(leaf.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}) {
		t.Errorf("ExtKeyUsage = %v, want ServerAuth", leaf.ExtKeyUsage)
	}
	if !leaf.BasicConstraintsValid || leaf.IsCA {
		t.Errorf("BasicConstraintsValid=%v IsCA=%v, want true, false", leaf.BasicConstraintsValid, leaf.IsCA)
	}
	if _, err := tls.X509KeyPair(readFile(t, info.CertFile), readFile(t, info.KeyFile)); err != nil {
		t.Errorf("stored files are not a key pair: %v", err)
	}
}

// TestVerifiesForEachSAN proves each host is really named: a pool holding
// only the certificate verifies it for every SAN and for nothing else.
func TestVerifiesForEachSAN(t *testing.T) {
	cert, info := mustCreate(t, t.TempDir(), hosts, t0)
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	for _, h := range info.SANs {
		opts := x509.VerifyOptions{DNSName: h, Roots: pool, CurrentTime: t0}
		if _, err := cert.Leaf.Verify(opts); err != nil {
			t.Errorf("Verify for %s: %v", h, err)
		}
	}
	for _, h := range []string{"other.example", "10.0.0.1", "::2", "sub.den.example"} {
		opts := x509.VerifyOptions{DNSName: h, Roots: pool, CurrentTime: t0}
		if _, err := cert.Leaf.Verify(opts); err == nil {
			t.Errorf("Verify for %s, which the certificate does not name, succeeded", h)
		}
	}
}

func TestHandshake(t *testing.T) {
	cert, info := mustCreate(t, t.TempDir(), hosts, time.Now())
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// A failed handshake on the client's side fails this write.
			io.WriteString(c, "ok")
			c.Close()
		}
	})
	defer wg.Wait()
	defer ln.Close()

	pin := func(want string) *tls.Config {
		return &tls.Config{
			// Verification is the pin, in VerifyConnection.
			InsecureSkipVerify: true,
			VerifyConnection: func(cs tls.ConnectionState) error {
				if got := Fingerprint(cs.PeerCertificates[0].Raw); got != want {
					return fmt.Errorf("fingerprint %s, want %s", got, want)
				}
				return nil
			},
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	other := "00" + info.Fingerprint[2:]
	if other == info.Fingerprint {
		other = "01" + info.Fingerprint[2:]
	}
	tests := []struct {
		name string
		conf *tls.Config
		ok   bool
	}{
		{"pinned fingerprint", pin(info.Fingerprint), true},
		{"wrong pin", pin(other), false},
		{"trusted, localhost", &tls.Config{RootCAs: pool, ServerName: "localhost"}, true},
		{"trusted, unnamed host", &tls.Config{RootCAs: pool, ServerName: "evil.example"}, false},
		{"system roots", &tls.Config{ServerName: "localhost"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tls.Dial("tcp", ln.Addr().String(), tt.conf)
			if err == nil {
				var got []byte
				got, err = io.ReadAll(c)
				c.Close()
				if err == nil && string(got) != "ok" {
					err = fmt.Errorf("read %q", got)
				}
			}
			if tt.ok && err != nil {
				t.Errorf("handshake failed: %v", err)
			}
			if !tt.ok && err == nil {
				t.Error("handshake succeeded, want failure")
			}
		})
	}
}

func TestReuse(t *testing.T) {
	dir := t.TempDir()
	_, first := mustCreate(t, dir, hosts, t0)
	for _, hs := range [][]string{hosts, {"192.168.1.20", "DEN.example.", "localhost"}, {"[::1]"}} {
		_, again := mustCreate(t, dir, hs, t0.Add(24*time.Hour))
		if again.Created || again.Fingerprint != first.Fingerprint {
			t.Errorf("hosts %q: Created=%v fingerprint %s, want the stored %s reused", hs, again.Created, again.Fingerprint, first.Fingerprint)
		}
	}
}

func TestNewHostReplaces(t *testing.T) {
	dir := t.TempDir()
	_, first := mustCreate(t, dir, hosts, t0)
	more := append(slices.Clone(hosts), "10.1.2.3")
	_, second := mustCreate(t, dir, more, t0)
	if !second.Created || second.Fingerprint == first.Fingerprint {
		t.Fatalf("new host: Created=%v, same fingerprint=%v; want a new certificate", second.Created, second.Fingerprint == first.Fingerprint)
	}
	if !slices.Contains(second.SANs, "10.1.2.3") {
		t.Errorf("SANs %v lack the new host", second.SANs)
	}
	_, third := mustCreate(t, dir, more, t0)
	if third.Created || third.Fingerprint != second.Fingerprint {
		t.Errorf("the replacement was not reused: Created=%v", third.Created)
	}
}

func TestExpiry(t *testing.T) {
	day := 24 * time.Hour
	tests := []struct {
		name  string
		later time.Duration // after t0, the creation time
		renew bool
	}{
		{"a day later", day, false},
		{"31 days left", lifetime - backdate - 31*day, false},
		{"29 days left", lifetime - backdate - 29*day, true},
		{"expired", lifetime + day, true},
		{"clock before NotBefore", -2 * backdate, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			_, first := mustCreate(t, dir, hosts, t0)
			now := t0.Add(tt.later)
			_, again := mustCreate(t, dir, hosts, now)
			if again.Created != tt.renew || (again.Fingerprint != first.Fingerprint) != tt.renew {
				t.Errorf("at %v: Created=%v, fingerprint changed=%v; want %v", now, again.Created, again.Fingerprint != first.Fingerprint, tt.renew)
			}
			if tt.renew && (again.NotAfter.Sub(now) <= renewBefore || now.Before(again.NotBefore)) {
				t.Errorf("renewed certificate (%v to %v) is not valid long enough at %v", again.NotBefore, again.NotAfter, now)
			}
		})
	}
}

func TestModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, info := mustCreate(t, dir, hosts, t0)
	for path, want := range map[string]os.FileMode{dir: 0o700, info.KeyFile: 0o600, info.CertFile: 0o644} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), want)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("folder holds %d entries, want cert.pem and key.pem only (no temporary files left)", len(entries))
	}
}

// TestUntrustedKeyRefused proves a key den did not make private is
// neither used nor replaced.
func TestUntrustedKeyRefused(t *testing.T) {
	tests := []struct {
		name  string
		spoil func(t *testing.T, key string)
		want  error
	}{
		{"symlink", func(t *testing.T, key string) {
			moved := filepath.Join(t.TempDir(), "real-key.pem")
			if err := os.Rename(key, moved); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(moved, key); err != nil {
				t.Fatal(err)
			}
		}, ErrKeySymlink},
		{"group-readable", func(t *testing.T, key string) { chmod(t, key, 0o640) }, ErrKeyExposed},
		{"other-readable", func(t *testing.T, key string) { chmod(t, key, 0o604) }, ErrKeyExposed},
		{"folder", func(t *testing.T, key string) {
			if err := os.Remove(key); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(key, 0o700); err != nil {
				t.Fatal(err)
			}
		}, ErrKeyExposed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			_, info := mustCreate(t, dir, hosts, t0)
			tt.spoil(t, info.KeyFile)
			before, _ := os.Lstat(info.KeyFile)
			_, _, err := LoadOrCreate(dir, append(slices.Clone(hosts), "new.example"), t0)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), info.KeyFile) {
				t.Errorf("error %q does not name the key file", err)
			}
			after, _ := os.Lstat(info.KeyFile)
			if !os.SameFile(before, after) || before.Mode() != after.Mode() {
				t.Error("the refused key file was replaced")
			}
		})
	}
}

// TestKeyTooLarge proves a key.pem over 64 KiB is refused as corrupt,
// even when a good key starts it, and stays as it was: den's keys are
// under 2 KiB, so more is not a key den made.
func TestKeyTooLarge(t *testing.T) {
	dir := t.TempDir()
	_, info := mustCreate(t, dir, hosts, t0)
	data := append(readFile(t, info.KeyFile), bytes.Repeat([]byte{'\n'}, maxPEM)...)
	if err := os.WriteFile(info.KeyFile, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := LoadOrCreate(dir, hosts, t0)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), info.KeyFile) {
		t.Fatalf("err = %v, want ErrCorrupt naming %s", err, info.KeyFile)
	}
	if !bytes.Equal(readFile(t, info.KeyFile), data) {
		t.Error("the refused key file was replaced")
	}
}

// TestCorrupt proves a file that does not parse is an error that says what
// to delete, and stays as it was; a mismatched pair, which an interrupted
// write leaves, is replaced.
func TestCorrupt(t *testing.T) {
	tests := []struct {
		name string
		file string
		data string
	}{
		{"cert not PEM", "cert.pem", "garbage"},
		{"cert wrong block", "cert.pem", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"},
		{"cert bad DER", "cert.pem", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"},
		{"key not PEM", "key.pem", "garbage"},
		{"key bad DER", "key.pem", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"},
		{"empty key", "key.pem", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			mustCreate(t, dir, hosts, t0)
			path := filepath.Join(dir, tt.file)
			if err := os.WriteFile(path, []byte(tt.data), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := LoadOrCreate(dir, hosts, t0)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "delete") {
				t.Errorf("error %q does not name %s and say to delete it", err, path)
			}
			if got := readFile(t, path); string(got) != tt.data {
				t.Error("the corrupt file was replaced")
			}
		})
	}

	t.Run("mismatched pair", func(t *testing.T) {
		dir, other := t.TempDir(), t.TempDir()
		_, first := mustCreate(t, dir, hosts, t0)
		mustCreate(t, other, hosts, t0)
		if err := os.WriteFile(first.KeyFile, readFile(t, filepath.Join(other, "key.pem")), 0o600); err != nil {
			t.Fatal(err)
		}
		cert, again := mustCreate(t, dir, hosts, t0)
		if !again.Created || again.Fingerprint == first.Fingerprint {
			t.Fatalf("mismatched pair: Created=%v; want a new certificate", again.Created)
		}
		if _, err := tls.X509KeyPair(readFile(t, again.CertFile), readFile(t, again.KeyFile)); err != nil {
			t.Errorf("replacement files are not a pair: %v", err)
		}
		if !bytes.Equal(cert.Certificate[0], cert.Leaf.Raw) {
			t.Error("returned certificate and leaf differ")
		}
	})

	t.Run("missing cert", func(t *testing.T) {
		dir := t.TempDir()
		_, first := mustCreate(t, dir, hosts, t0)
		if err := os.Remove(first.CertFile); err != nil {
			t.Fatal(err)
		}
		_, again := mustCreate(t, dir, hosts, t0)
		if !again.Created {
			t.Error("missing cert.pem: Created = false")
		}
	})
}

func TestHosts(t *testing.T) {
	tests := []struct {
		in    []string
		names []string
		ips   []string
		err   error
	}{
		{in: []string{"Den.Example.", "den.example", "[::1]", "::ffff:10.0.0.1", "10.0.0.1"},
			names: []string{"den.example"}, ips: []string{"::1", "10.0.0.1"}},
		{in: []string{"my_host.lan"}, names: []string{"my_host.lan"}},
		{in: nil, err: ErrNoHosts},
		{in: []string{"localhost", ""}, err: ErrHost},
		{in: []string{"fe80::1%eth0"}, err: ErrHost},
		{in: []string{"bad name"}, err: ErrHost},
		{in: []string{"-x.example"}, err: ErrHost},
		{in: []string{"*.example"}, err: ErrHost},
		{in: []string{"a..b"}, err: ErrHost},
		{in: []string{strings.Repeat("a", 64) + ".example"}, err: ErrHost},
	}
	for _, tt := range tests {
		names, ips, err := parseHosts(tt.in)
		if !errors.Is(err, tt.err) {
			t.Errorf("parseHosts(%q) err = %v, want %v", tt.in, err, tt.err)
			continue
		}
		var got []string
		for _, ip := range ips {
			got = append(got, ip.String())
		}
		if !slices.Equal(names, tt.names) || !slices.Equal(got, tt.ips) {
			t.Errorf("parseHosts(%q) = %q, %q; want %q, %q", tt.in, names, got, tt.names, tt.ips)
		}
	}
}

func TestKeepAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"192.168.1.20": true, "10.0.0.1": true, "2001:db8::1": true, "fd00::1": true,
		"127.0.0.1": false, "::1": false, "169.254.1.1": false, "fe80::1": false,
		"224.0.0.1": false, "ff02::1": false, "0.0.0.0": false, "::": false,
	} {
		if got := keepAddr(netip.MustParseAddr(addr)); got != want {
			t.Errorf("keepAddr(%s) = %v, want %v", addr, got, want)
		}
	}
}

func TestHostNames(t *testing.T) {
	got := HostNames()
	if !slices.Equal(got[:3], []string{"localhost", "127.0.0.1", "::1"}) {
		t.Errorf("HostNames() = %q, want localhost, 127.0.0.1, ::1 first", got)
	}
	if h, err := os.Hostname(); err == nil {
		if name, ok := dnsName(h); ok {
			short, _, _ := strings.Cut(name, ".")
			if !slices.Contains(got, name) || !slices.Contains(got, short+".local") {
				t.Errorf("HostNames() = %q, lacks %s or %s.local", got, name, short)
			}
		}
	}
	if len(dedupe(got)) != len(got) {
		t.Errorf("HostNames() = %q has duplicates", got)
	}
	for _, h := range got[3:] {
		if ip, err := netip.ParseAddr(h); err == nil && !keepAddr(ip) {
			t.Errorf("HostNames() includes %s, a loopback, link-local or non-unicast address", h)
		}
	}
	ifaceAddrs(t, got)
	cert, info := mustCreate(t, t.TempDir(), got, time.Now())
	if len(info.SANs) != len(got) {
		t.Errorf("certificate names %q, want all of %q", info.SANs, got)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert.Leaf)
	for _, h := range got {
		if _, err := cert.Leaf.Verify(x509.VerifyOptions{DNSName: h, Roots: pool}); err != nil {
			t.Errorf("Verify for %s: %v", h, err)
		}
	}
}

// ifaceAddrs checks that every address HostNames should have taken from
// the interfaces is in got.
func ifaceAddrs(t *testing.T, got []string) {
	t.Helper()
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			ipnet, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, _ := netip.AddrFromSlice(ipnet.IP)
			if keepAddr(ip.Unmap()) && !slices.Contains(got, ip.Unmap().String()) {
				t.Errorf("HostNames() = %q lacks %s of %s", got, ip, ifc.Name)
			}
		}
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
