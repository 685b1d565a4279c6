package egress

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The frame masker's own tests: frames in, frames out, no network. The
// tests through a computer are in websocket_net_test.go.

// wsFrame is one frame as the tests write and read it.
type wsFrame struct {
	Fin     bool
	Op      byte
	Payload string
}

// serverFrames encodes frames as a server would, each length in the
// encoding wide says (0: the shortest; 2 or 8 bytes otherwise: a server
// may waste bytes, den must not).
func serverFrames(frames []wsFrame, wide func(i int) int) []byte {
	var b []byte
	for i, f := range frames {
		b0 := f.Op
		if f.Fin {
			b0 |= 0x80
		}
		n := len(f.Payload)
		switch w := wide(i); {
		case w == 8 || n > 0xffff:
			b = binary.BigEndian.AppendUint64(append(b, b0, 127), uint64(n))
		case w == 2 || n > 125:
			b = binary.BigEndian.AppendUint16(append(b, b0, 126), uint16(n))
		default:
			b = append(b, b0, byte(n))
		}
		b = append(b, f.Payload...)
	}
	return b
}

// parseFrames reads what den gives the client as strictly as RFC 6455
// asks of a client: unmasked, no reserved bits, lengths in the fewest
// bytes, control frames whole and short.
func parseFrames(t *testing.T, b []byte) []wsFrame {
	t.Helper()
	var out []wsFrame
	for len(b) > 0 {
		if len(b) < 2 {
			t.Fatalf("a frame's header cut short: %x", b)
		}
		f := wsFrame{Fin: b[0]&0x80 != 0, Op: b[0] & 0x0f}
		if b[0]&0x70 != 0 || b[1]&0x80 != 0 {
			t.Fatalf("reserved bits or a mask in %x", b[:2])
		}
		n, h := uint64(b[1]&0x7f), 2
		switch n {
		case 126:
			n, h = uint64(binary.BigEndian.Uint16(b[2:])), 4
			if n <= 125 {
				t.Fatalf("a 16-bit length of %d", n)
			}
		case 127:
			n, h = binary.BigEndian.Uint64(b[2:]), 10
			if n <= 0xffff {
				t.Fatalf("a 64-bit length of %d", n)
			}
		}
		if f.Op >= 8 && (!f.Fin || n > 125) {
			t.Fatalf("a malformed control frame: %x", b[:h])
		}
		if uint64(len(b)-h) < n {
			t.Fatalf("a frame of %d bytes with %d left", n, len(b)-h)
		}
		f.Payload = string(b[h : h+int(n)])
		out = append(out, f)
		b = b[h+int(n):]
	}
	return out
}

// messages reassembles data frames into "text:..."/"binary:..." and
// gives control frames as "ping:...", "pong:...", "close:...".
func messages(t *testing.T, frames []wsFrame) []string {
	t.Helper()
	names := map[byte]string{opText: "text", opBinary: "binary", opClose: "close", opPing: "ping", opPong: "pong"}
	var out []string
	var cur *strings.Builder
	for _, f := range frames {
		switch {
		case f.Op >= 8:
			out = append(out, names[f.Op]+":"+f.Payload)
			continue
		case f.Op == opContinuation && cur == nil, f.Op != opContinuation && cur != nil:
			t.Fatalf("fragments out of order: %+v", frames)
		case f.Op != opContinuation:
			cur = &strings.Builder{}
			cur.WriteString(names[f.Op] + ":")
		}
		cur.WriteString(f.Payload)
		if f.Fin {
			out = append(out, cur.String())
			cur = nil
		}
	}
	if cur != nil {
		t.Fatalf("a message never ended: %+v", frames)
	}
	return out
}

// relay runs server's bytes through a wsMasker for vals, reading in
// pieces of size read, and returns what the client got and the error
// that ended it.
func relay(server []byte, vals []string, read int) ([]byte, error) {
	var bs [][]byte
	for _, v := range vals {
		bs = append(bs, []byte(v))
	}
	m := newWSMasker(rwc{Reader: bytes.NewReader(server)}, bs)
	var got []byte
	p := make([]byte, read)
	for {
		n, err := m.Read(p)
		got = append(got, p[:n]...)
		if err != nil {
			return got, err
		}
	}
}

type rwc struct {
	io.Reader
	io.Writer
}

func (rwc) Close() error { return nil }

// TestWSMaskerFragments: whatever the fragmentation, with control
// frames between fragments and lengths in any encoding, every value in
// a message's payload reaches the client masked, the rest unchanged,
// and the frames stay valid.
func TestWSMaskerFragments(t *testing.T) {
	const value = "ghp_SecretValueOfSomeLength42"
	other := "sk-another-" + strings.Repeat("v", 80) // longer: the tail holds back 90 bytes
	vals := []string{value, other}
	masked := func(s string) string {
		for _, v := range vals {
			s = strings.ReplaceAll(s, v, strings.Repeat("*", len(v)))
		}
		return s
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		// A message: filler with values here and there (at its ends,
		// side by side, across 32 KiB reads when it is long).
		var msg strings.Builder
		size := r.IntN(200)
		if i%50 == 0 {
			size = 70000 + r.IntN(3000)
		}
		for msg.Len() < size {
			switch r.IntN(6) {
			case 0:
				msg.WriteString(value)
			case 1:
				msg.WriteString(other)
			case 2:
				msg.WriteString(value[:r.IntN(len(value))]) // a prefix: not a value
			default:
				msg.WriteString(strings.Repeat(string(rune('a'+r.IntN(26))), 1+r.IntN(max(1, size/10))))
			}
		}
		m := msg.String()
		// Its fragments, some empty, some shorter than a value, with a
		// ping (which may hold a value itself) between two of them.
		var frames []wsFrame
		var want []string
		op := byte(opText + r.IntN(2))
		name := map[byte]string{opText: "text", opBinary: "binary"}[op]
		for rest := m; ; {
			n := min(len(rest), r.IntN(len(value)*3))
			if r.IntN(4) == 0 {
				n = len(rest)
			}
			fin := n == len(rest) && r.IntN(3) > 0 // or an empty last fragment
			frames = append(frames, wsFrame{Fin: fin, Op: op, Payload: rest[:n]})
			op, rest = opContinuation, rest[n:]
			if fin {
				break
			}
			if r.IntN(5) == 0 {
				frames = append(frames, wsFrame{Fin: true, Op: opPing, Payload: "p" + value})
				want = append(want, "ping:p"+masked(value))
			}
		}
		frames = append(frames, wsFrame{Fin: true, Op: opClose, Payload: "\x03\xe8bye " + value})
		want = append(want, name+":"+masked(m), "close:\x03\xe8bye "+masked(value))

		server := serverFrames(frames, func(int) int { return []int{0, 0, 2, 8}[r.IntN(4)] })
		got, err := relay(server, vals, 1+r.IntN(40000))
		if !errors.Is(err, io.EOF) {
			t.Fatalf("case %d: the relay ended with %v", i, err)
		}
		for _, v := range vals {
			if bytes.Contains(got, []byte(v)) {
				at := bytes.Index(got, []byte(v))
				t.Fatalf("case %d: a value reached the client: ...%q...", i, got[max(0, at-40):min(len(got), at+len(v)+40)])
			}
		}
		if diff := cmp.Diff(want, messages(t, parseFrames(t, got))); diff != "" {
			t.Fatalf("case %d (%d frames): messages (-want +got):\n%.2000s", i, len(frames), diff)
		}
	}
}

// TestWSMaskerRefuses: a frame den cannot mask (compressed, of an
// extension, masked) or does not understand ends the relay with a close
// frame that says why, and none of the frame reaches the client.
func TestWSMaskerRefuses(t *testing.T) {
	const value = "ghp_SecretValueOfSomeLength42"
	ok := wsFrame{Fin: true, Op: opText, Payload: "fine"}
	for _, tc := range []struct {
		name string
		raw  []byte // after ok
		why  string
	}{
		{"compressed", append([]byte{0xc1, byte(len(value))}, value...), "compressed"},
		{"reserved bit", append([]byte{0x92, byte(len(value))}, value...), "compressed"},
		{"masked", append([]byte{0x81, 0x80 | byte(len(value)), 0, 0, 0, 0}, value...), "masked"},
		{"unknown opcode", append([]byte{0x83, byte(len(value))}, value...), "opcode"},
		{"unknown control", append([]byte{0x8b, byte(len(value))}, value...), "opcode"},
		{"continuation first", append([]byte{0x80, byte(len(value))}, value...), "not begun"},
		{"message in message", append(append([]byte{0x01, 2}, "ab"...), append([]byte{0x81, byte(len(value))}, value...)...), "inside"},
		{"fragmented ping", append([]byte{0x09, byte(len(value))}, value...), "control"},
		{"long ping", append(append([]byte{0x89, 126}, binary.BigEndian.AppendUint16(nil, 130)...), strings.Repeat(value, 5)...), "control"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := relay(append(serverFrames([]wsFrame{ok}, func(int) int { return 0 }), tc.raw...), []string{value}, 512)
			var why refusal
			if !errors.As(err, &why) || !strings.Contains(string(why), tc.why) {
				t.Fatalf("the relay ended with %v, want a refusal about %q", err, tc.why)
			}
			frames := parseFrames(t, got)
			last := frames[len(frames)-1]
			if last.Op != opClose || binary.BigEndian.Uint16([]byte(last.Payload)) != closePolicy || !strings.HasPrefix(last.Payload[2:], "den: ") {
				t.Errorf("the last frame: %+v", last)
			}
			if frames[0] != ok || bytes.Contains(got, []byte(value)) || len(frames) > 3 {
				t.Errorf("the client got %+v", frames)
			}
		})
	}
}

// TestWSMaskerCut: a connection that ends inside a frame ends the relay
// with what was safe to give, and no start of a value.
func TestWSMaskerCut(t *testing.T) {
	const value = "ghp_SecretValueOfSomeLength42"
	text := strings.Repeat("hello ", 10) + value[:20]
	server := serverFrames([]wsFrame{{Fin: true, Op: opText, Payload: text + " and more to come"}}, func(int) int { return 0 })
	got, err := relay(server[:2+len(text)], []string{value}, 512)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("the relay ended with %v", err)
	}
	if !bytes.HasPrefix(got[2:], []byte("hello hello")) || bytes.Contains(got, []byte(value[:4])) {
		t.Errorf("the client got %q", got)
	}
}

// TestWSMaskerWrite: the client's frames go to the server as they are,
// a placeholder included.
func TestWSMaskerWrite(t *testing.T) {
	var up bytes.Buffer
	m := newWSMasker(rwc{Reader: strings.NewReader(""), Writer: &up}, [][]byte{[]byte("value")})
	frame := []byte("\x81\x94\x01\x02\x03\x04den-secret:API_TOKEN")
	if _, err := m.Write(frame); err != nil || up.String() != string(frame) {
		t.Errorf("the server got %q (%v)", up.String(), err)
	}
}

func TestCloseFrame(t *testing.T) {
	long := strings.Repeat("é", 100)
	got := closeFrame(nil, closePolicy, long)
	f := parseFrames(t, got)[0]
	if len(f.Payload) != 2+122 || f.Payload[2:] != strings.Repeat("é", 61) {
		t.Errorf("close frame: %q", f.Payload)
	}
}

// BenchmarkWSMasker measures the frame masker alone: server frames of
// 16 KiB in a bytes.Reader, read as a relay reads them.
func BenchmarkWSMasker(b *testing.B) {
	payload := strings.Repeat("0123456789abcdef", 1024)
	frame := serverFrames([]wsFrame{{Fin: true, Op: opBinary, Payload: payload}}, func(int) int { return 0 })
	server := bytes.Repeat(frame, 64)
	vals := [][]byte{[]byte("ghp_TheRealTokenValue1234567890")}
	p := make([]byte, 32<<10)
	b.SetBytes(int64(len(server)))
	for b.Loop() {
		m := newWSMasker(rwc{Reader: bytes.NewReader(server)}, vals)
		for {
			if _, err := m.Read(p); err != nil {
				if err != io.EOF {
					b.Fatal(err)
				}
				break
			}
		}
	}
}
