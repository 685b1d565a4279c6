package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Protocols den tells apart by a connection's first bytes.
const (
	ProtoTLS  = "tls"
	ProtoHTTP = "http"
	ProtoTCP  = "tcp" // anything else: den goes by the address alone
	ProtoDNS  = "dns" // DNS over TCP, which den answers itself
)

const (
	// maxHello bounds what den reads to find a name: a TLS ClientHello
	// (with post-quantum key shares they pass 1 KiB) or an HTTP
	// request's head.
	maxHello = 64 << 10
)

// hello is what den learned from a connection's first bytes: the
// protocol, the name the client asked for (TLS's SNI, HTTP's Host), and
// every byte it read, to replay upstream.
type hello struct {
	proto string
	name  string
	head  []byte
}

// sniff reads the start of what the computer sends on c: a TLS
// ClientHello or an HTTP request's head. It waits at most first for
// the first byte (a server-first protocol sends nothing), then at most
// rest for the whole hello.
func sniff(c net.Conn, first, rest time.Duration) hello {
	c.SetReadDeadline(time.Now().Add(first))
	defer c.SetReadDeadline(time.Time{})
	var b [1]byte
	n, _ := io.ReadFull(c, b[:])
	if n == 0 {
		return hello{proto: ProtoTCP}
	}
	c.SetReadDeadline(time.Now().Add(rest))
	rec := &recorder{r: c, buf: append(make([]byte, 0, 2048), b[0]), limit: maxHello}
	switch {
	case b[0] == 0x16: // a TLS handshake record
		name := clientHelloName(rec)
		return hello{proto: ProtoTLS, name: name, head: rec.buf}
	case b[0] >= 'A' && b[0] <= 'Z':
		name, ok := httpHost(rec)
		if ok {
			return hello{proto: ProtoHTTP, name: name, head: rec.buf}
		}
	}
	return hello{proto: ProtoTCP, head: rec.buf}
}

// recorder reads from r, keeping every byte, after replaying buf.
type recorder struct {
	r     io.Reader
	buf   []byte
	off   int
	limit int
}

func (r *recorder) Read(p []byte) (int, error) {
	if r.off < len(r.buf) {
		n := copy(p, r.buf[r.off:])
		r.off += n
		return n, nil
	}
	if len(r.buf) >= r.limit {
		return 0, errors.New("egress: hello too long")
	}
	p = p[:min(len(p), r.limit-len(r.buf))]
	n, err := r.r.Read(p)
	r.buf = append(r.buf, p[:n]...)
	r.off += n
	return n, err
}

var errSniffed = errors.New("egress: sniffed")

// clientHelloName parses the ClientHello r replays with crypto/tls's
// own parser and returns its server name ("" without one).
func clientHelloName(r io.Reader) string {
	var name string
	cfg := &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		name = h.ServerName
		return nil, errSniffed
	}}
	tls.Server(readOnly{r}, cfg).Handshake()
	return canonical(name)
}

// httpHost reads an HTTP request's head from r and returns its host:
// the absolute URL's (a proxy-style request), else the Host header's.
func httpHost(r io.Reader) (string, bool) {
	req, err := http.ReadRequest(bufio.NewReaderSize(r, 4096))
	if err != nil {
		return "", false
	}
	host := req.Host
	if req.URL != nil && req.URL.IsAbs() {
		host = req.URL.Host
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if u, err := url.PathUnescape(host); err == nil {
		host = u
	}
	return canonical(host), host != ""
}

// readOnly is a net.Conn over a reader, whose writes fail: a TLS
// server parsing a ClientHello writes nothing before it asks for its
// config.
type readOnly struct{ io.Reader }

func (readOnly) Write(p []byte) (int, error)      { return 0, errSniffed }
func (readOnly) Close() error                     { return nil }
func (readOnly) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (readOnly) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (readOnly) SetDeadline(time.Time) error      { return nil }
func (readOnly) SetReadDeadline(time.Time) error  { return nil }
func (readOnly) SetWriteDeadline(time.Time) error { return nil }

// replay is a net.Conn that reads head first, then from the Conn.
type replay struct {
	net.Conn
	head *bytes.Reader
}

func (r *replay) Read(p []byte) (int, error) {
	if r.head.Len() > 0 {
		return r.head.Read(p)
	}
	return r.Conn.Read(p)
}
