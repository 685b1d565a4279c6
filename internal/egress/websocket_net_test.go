package egress_test

import (
	"bufio"
	"crypto/sha1"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"den.dev/den/internal/egress"
	"den.dev/den/internal/egress/egresstest"
	"den.dev/den/internal/sandbox/sandboxtest"
	"den.dev/den/internal/secret"
)

// wsServer is a WebSocket server over HTTPS on the host's loopback that
// writes its frames by hand, so that a test chooses their
// fragmentation and lengths. By path:
//
//	/ws       echoes the Authorization header it got in a text frame, a
//	          binary frame, a text message split in three fragments (a
//	          ping between them) and a binary frame of a 64-bit length;
//	          answers the client's ping; says which pong it got; closes
//	          with the header in the reason
//	/echo     echoes every frame
//	/deflate  switches with permessage-deflate, unasked, and writes
//	          the header in a frame
//	/raw      switches to another protocol and writes the header raw
type wsServer struct {
	addr string
	raw  atomic.Int64 // requests to /raw

	mu   sync.Mutex
	seen map[string]string // what it got, by name
}

func newWSServer(t testing.TB, ca *egresstest.CA, names ...string) *wsServer {
	t.Helper()
	s := &wsServer{seen: map[string]string{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	// HTTP/1.1 only, as servers that switch protocols are.
	srv := &http.Server{Handler: http.HandlerFunc(s.serve), TLSConfig: &tls.Config{Certificates: []tls.Certificate{*ca.Leaf(t, names...)}, NextProtos: []string{"http/1.1"}}}
	go srv.ServeTLS(l, "", "")
	t.Cleanup(func() { srv.Close() })
	return s
}

func (s *wsServer) note(k, v string) {
	s.mu.Lock()
	s.seen[k] = v
	s.mu.Unlock()
}

// got waits a while for what the server noted as k.
func (s *wsServer) got(t *testing.T, k string) string {
	t.Helper()
	for range 200 {
		s.mu.Lock()
		v, ok := s.seen[k]
		s.mu.Unlock()
		if ok {
			return v
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the server never noted %s", k)
	return ""
}

func (s *wsServer) serve(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	if r.URL.Path == "/raw" {
		s.raw.Add(1)
		c, rw, _ := http.NewResponseController(w).Hijack()
		defer c.Close()
		fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: den-raw\r\nConnection: Upgrade\r\n\r\nraw %s\n", auth)
		rw.Flush()
		time.Sleep(time.Second)
		return
	}
	s.note(r.URL.Path+" extensions", r.Header.Get("Sec-WebSocket-Extensions"))
	sum := sha1.Sum([]byte(r.Header.Get("Sec-WebSocket-Key") + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	c, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Minute))
	ext := ""
	if r.URL.Path == "/deflate" {
		ext = "Sec-WebSocket-Extensions: permessage-deflate\r\n"
	}
	fmt.Fprintf(rw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n%s\r\n",
		base64.StdEncoding.EncodeToString(sum[:]), ext)
	rw.Flush()
	switch r.URL.Path {
	case "/deflate":
		writeFrame(rw, 0xc1, []byte("auth="+auth)) // RSV1: compressed, as far as the client knows
		rw.Flush()
		c.SetReadDeadline(time.Now().Add(time.Minute))
		_, err := rw.ReadByte()
		s.note("/deflate end", fmt.Sprint(err))
	case "/echo":
		for {
			op, p, err := readFrame(rw.Reader)
			if err != nil {
				return
			}
			if op == 0x9 {
				op = 0xA
			}
			writeFrame(rw, op, p)
			if rw.Flush() != nil || op&0x0f == 0x8 {
				return
			}
		}
	case "/ws":
		s.note("/ws text", string(s.until(rw, 0x1)))
		s.until(rw, 0x9) // the client's ping, answered
		frames := []struct {
			b0      byte
			payload string
		}{
			{0x81, "auth=" + auth},
			{0x82, "auth=" + auth},
			{0x01, "split=" + auth[:10]},
			{0x89, "ping " + auth},
			{0x00, auth[10:12]},
			{0x80, auth[12:] + " end"},
			{0x82, strings.Repeat(".", 32760) + auth + strings.Repeat(".", 40000)},
		}
		for _, f := range frames {
			writeFrame(rw, f.b0, []byte(f.payload))
		}
		rw.Flush()
		pong := s.until(rw, 0xA)
		writeFrame(rw, 0x81, []byte("pong: "+string(pong)))
		writeFrame(rw, 0x88, append([]byte{0x03, 0xe8}, "bye "+auth...))
		rw.Flush()
		s.until(rw, 0x8)
	}
}

// until reads the client's frames until one of opcode op, answering
// pings, and returns its payload.
func (s *wsServer) until(rw *bufio.ReadWriter, op byte) []byte {
	for {
		b0, p, err := readFrame(rw.Reader)
		if err != nil {
			return nil
		}
		if b0&0x0f == 0x9 {
			writeFrame(rw, 0x8A, p)
			rw.Flush()
		}
		if b0&0x0f == op {
			return p
		}
	}
}

// writeFrame writes a server's frame: b0 (FIN, RSV, opcode) as given,
// unmasked, the length in the fewest bytes.
func writeFrame(w io.Writer, b0 byte, p []byte) {
	h := []byte{b0}
	switch n := len(p); {
	case n <= 125:
		h = append(h, byte(n))
	case n <= 0xffff:
		h = binary.BigEndian.AppendUint16(append(h, 126), uint16(n))
	default:
		h = binary.BigEndian.AppendUint64(append(h, 127), uint64(n))
	}
	w.Write(append(h, p...))
}

// readFrame reads a client's (masked) frame: its first byte and
// payload.
func readFrame(r *bufio.Reader) (byte, []byte, error) {
	var h [14]byte
	if _, err := io.ReadFull(r, h[:2]); err != nil {
		return 0, nil, err
	}
	if h[1]&0x80 == 0 {
		return 0, nil, errors.New("an unmasked frame from the client")
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		io.ReadFull(r, h[2:4])
		n = uint64(binary.BigEndian.Uint16(h[2:4]))
	case 127:
		io.ReadFull(r, h[2:10])
		n = binary.BigEndian.Uint64(h[2:10])
	}
	var key [4]byte
	if _, err := io.ReadFull(r, key[:]); err != nil {
		return 0, nil, err
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, err
	}
	for i := range p {
		p[i] ^= key[i%4]
	}
	return h[0], p, nil
}

// TestWebSocketSecrets: a WebSocket to a host a secret is bound to
// gets the value in its handshake; whatever the server echoes back in
// its frames (text, binary, fragments, a 64-bit length, control
// frames) reaches the computer masked; a server that compresses, or an
// upgrade to anything but WebSocket, ends the connection instead.
func TestWebSocketSecrets(t *testing.T) {
	upstreamCA := egresstest.NewCA(t)
	srv := newWSServer(t, upstreamCA, "ws.example")
	const token = "ghp_TheRealTokenValue1234567890"
	s := secret.Secret{Name: "API_TOKEN", Value: token, Hosts: []string{"ws.example"}, Header: "Authorization: Bearer {{value}}"}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	ca, err := egress.LoadCA(filepath.Join(t.TempDir(), "ca"), "den test computer")
	if err != nil {
		t.Fatal(err)
	}
	p := egress.New(egress.Options{Hosts: map[string]string{"ws.example:443": srv.addr}, RootCAs: upstreamCA.Pool})
	recs := &records{}
	pol, _ := egress.ParsePolicy("allowlist", []string{"ws.example"})
	b := startBox(t, p.Net(egress.Scope{Agent: "tester", Policy: pol, Record: recs.add, CA: ca,
		Secrets: func() []secret.Secret { return []secret.Secret{s} }}))
	f := filepath.Join(b.env.Workspace, "den-ca.pem")
	if err := os.WriteFile(f, ca.PEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Own(t, f)
	masked := "Bearer " + strings.Repeat("*", len(token))

	t.Run("frames", func(t *testing.T) {
		out := b.probe(t, "ws", "wss://ws.example/ws", "/workspace/den-ca.pem", quote("Authorization: Bearer den-secret:API_TOKEN"))
		want := []string{
			"ok: text: auth=" + masked,
			"binary: auth=" + masked,
			"text: split=" + masked + " end",
			"binary: [.x32760]" + masked + "[.x40000]",
			"text: pong: ping " + masked,
			"close 1000: bye " + masked,
			"ping: pong",
		}
		if strings.Contains(out, token) || out != strings.Join(want, "\n") {
			t.Errorf("the computer got:\n%s\nwant:\n%s", out, strings.Join(want, "\n"))
		}
		// The value went in the handshake's slot, and nowhere else: a
		// placeholder in a frame stays a placeholder.
		if got := srv.got(t, "/ws text"); got != "den-secret:API_TOKEN" {
			t.Errorf("the client's text message reached the server as %q", got)
		}
		// The client offered permessage-deflate; den took the offer out.
		if got := srv.got(t, "/ws extensions"); got != "" {
			t.Errorf("the server was offered %q", got)
		}
	})
	t.Run("permessage-deflate", func(t *testing.T) {
		out := b.probe(t, "ws", "wss://ws.example/deflate", "/workspace/den-ca.pem")
		if strings.Contains(out, token) || !strings.Contains(out, "502 den: ") || !strings.Contains(out, "permessage-deflate") {
			t.Errorf("the computer got: %s", out)
		}
		if got := srv.got(t, "/deflate end"); got != "EOF" {
			t.Errorf("the server's connection ended with %s, want den closing it", got)
		}
	})
	t.Run("other upgrade", func(t *testing.T) {
		out := b.probe(t, "https", "https://ws.example/raw", "/workspace/den-ca.pem", quote("Connection: Upgrade"), quote("Upgrade: den-raw"))
		if strings.Contains(out, token) || !strings.Contains(out, "ok: 502 den: refused the upgrade to \"den-raw\"") {
			t.Errorf("the computer got: %s", out)
		}
		if n := srv.raw.Load(); n != 0 {
			t.Errorf("the server got %d upgrade request(s)", n)
		}
	})
	if rec := recs.wait(t, "ws.example", 443); !rec.Secrets || !rec.Allowed || rec.In == 0 {
		t.Errorf("record: %+v", rec)
	}
	all, _ := json.Marshal(recs.snapshot())
	if strings.Contains(string(all), token) {
		t.Errorf("the value is in den's records: %s", all)
	}
}

// BenchmarkWebSocketEcho measures a WebSocket from inside a computer
// to an echo server on the host's loopback, through den: binary
// messages of 64 KiB, each read back before the next goes. "masked": a
// secret is bound to the host, so den ends TLS on both sides and reads
// every frame from the server; "relayed": it is not, and den relays
// the TLS untouched. MB/s counts each message once.
//
//	go test ./internal/egress -run '^$' -bench WebSocketEcho -benchtime 2000x
func BenchmarkWebSocketEcho(b *testing.B) {
	b.Run("masked", func(b *testing.B) { benchWS(b, true) })
	b.Run("relayed", func(b *testing.B) { benchWS(b, false) })
}

func benchWS(b *testing.B, withSecret bool) {
	const size = 64 << 10
	ca := egresstest.NewCA(b)
	srv := newWSServer(b, ca, "ws.example")
	p := egress.New(egress.Options{Hosts: map[string]string{"ws.example:443": srv.addr}, RootCAs: ca.Pool})
	sc := egress.Scope{Agent: "bench"}
	trusted := ca.PEM
	if withSecret {
		dca, err := egress.LoadCA(filepath.Join(b.TempDir(), "ca"), "bench")
		if err != nil {
			b.Fatal(err)
		}
		s := secret.Secret{Name: "T", Value: "bench-token-value", Hosts: []string{"ws.example"}}
		s.Validate()
		sc.CA, sc.Secrets, trusted = dca, func() []secret.Secret { return []secret.Secret{s} }, dca.PEM()
	}
	box := startBox(b, p.Net(sc))
	caFile := filepath.Join(box.env.Workspace, "ca.pem")
	os.WriteFile(caFile, trusted, 0o644)
	sandboxtest.Own(b, caFile)
	b.ResetTimer()
	ns := result(b, box.probe(b, "wsecho", "wss://ws.example/echo", "/workspace/ca.pem", strconv.Itoa(b.N), strconv.Itoa(size)))[0]
	b.StopTimer()
	b.ReportMetric(float64(b.N)*size/(float64(ns)/1e9)/1e6, "MB/s-echo")
}
