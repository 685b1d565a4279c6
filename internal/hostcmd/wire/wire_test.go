package wire

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRequestRoundTrip(t *testing.T) {
	for _, req := range []Request{
		{Args: []string{"den-notify"}},
		{Args: []string{"den-notify", "--title", "T", "", "ü x"}, Cwd: "/workspace", Env: []string{"TERM=dumb", "DEN_SESSION=s", "EMPTY="}, StdinTTY: true},
	} {
		got, err := ParseRequest(AppendRequest(nil, req))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(req, got); diff != "" {
			t.Errorf("round trip (-want +got):\n%s", diff)
		}
	}
}

func TestParseRequestRefuses(t *testing.T) {
	good := AppendRequest(nil, Request{Args: []string{"a"}, Cwd: "/", Env: []string{"A=b"}})
	bad := map[string][]byte{
		"empty":      nil,
		"magic":      append([]byte("XXXX"), good[4:]...),
		"version":    append(append([]byte{}, good[:4]...), append([]byte{9}, good[5:]...)...),
		"flags":      append(append([]byte{}, good[:5]...), append([]byte{0x80}, good[6:]...)...),
		"trailing":   append(append([]byte{}, good...), 0),
		"cut":        good[:len(good)-1],
		"no argv":    AppendRequest(nil, Request{}),
		"nul":        AppendRequest(nil, Request{Args: []string{"a\x00b"}}),
		"env no =":   AppendRequest(nil, Request{Args: []string{"a"}, Env: []string{"AB"}}),
		"env =first": AppendRequest(nil, Request{Args: []string{"a"}, Env: []string{"=x"}}),
		"huge count": append(append([]byte{}, good[:6]...), 0xff, 0xff, 0xff, 0xff),
	}
	for name, p := range bad {
		if _, err := ParseRequest(p); !errors.Is(err, ErrFrame) {
			t.Errorf("%s: err = %v, want ErrFrame", name, err)
		}
	}
}

func TestReaderLimits(t *testing.T) {
	cases := map[string][]byte{
		"unknown type": {'Z', 0, 0, 0, 0},
		"stdin 64K+1":  {TypeStdin, 0, 1, 0, 1},
		"eof payload":  {TypeStdinEOF, 0, 0, 0, 1, 'x'},
		"exit 5":       {TypeExit, 0, 0, 0, 5, 0, 0, 0, 0, 0},
		"request 4G":   {TypeRequest, 0xff, 0xff, 0xff, 0xff},
	}
	for name, b := range cases {
		if _, _, err := NewReader(bytes.NewReader(b)).Next(); !errors.Is(err, ErrFrame) {
			t.Errorf("%s: err = %v, want ErrFrame", name, err)
		}
	}
	if _, _, err := NewReader(bytes.NewReader([]byte{TypeStdin, 0, 0, 0, 3, 'a'})).Next(); err != io.ErrUnexpectedEOF {
		t.Errorf("cut frame: err = %v, want ErrUnexpectedEOF", err)
	}
	if _, _, err := NewReader(bytes.NewReader(nil)).Next(); err != io.EOF {
		t.Errorf("empty: err = %v, want EOF", err)
	}
	if _, err := ParseExit(ExitPayload(256)); err == nil {
		t.Error("exit 256 accepted")
	}
}

// FuzzReader feeds arbitrary bytes to the frame reader and the request
// parser: they must never panic, and never hold more than a frame's
// limit.
func FuzzReader(f *testing.F) {
	var seed []byte
	seed = AppendFrame(seed, TypeRequest, AppendRequest(nil, Request{Args: []string{"den-notify", "x"}, Cwd: "/", Env: []string{"TERM=dumb"}}))
	seed = AppendFrame(seed, TypeStdin, []byte("hi\n"))
	seed = AppendFrame(seed, TypeStdinEOF, nil)
	f.Add(seed)
	f.Add(AppendFrame(AppendFrame(nil, TypeStdout, []byte("out")), TypeExit, ExitPayload(3)))
	f.Add([]byte{TypeRequest, 0, 0, 0, 6, 'D', 'E', 'N', 'H', 1, 0})
	f.Add([]byte{TypeRequest, 0, 0, 0, 10, 'D', 'E', 'N', 'H', 1, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReader(bytes.NewReader(b))
		for {
			typ, p, err := r.Next()
			if err != nil {
				return
			}
			if len(p) > maxPayload(typ) {
				t.Fatalf("type %q: payload of %d bytes passed", typ, len(p))
			}
			switch typ {
			case TypeRequest:
				if req, err := ParseRequest(p); err == nil {
					again, err := ParseRequest(AppendRequest(nil, req))
					if err != nil || !cmp.Equal(req, again) {
						t.Fatalf("request does not round-trip: %v", err)
					}
				}
			case TypeExit:
				if code, err := ParseExit(p); err == nil && (code < 0 || code > 255) {
					t.Fatalf("exit %d", code)
				}
			}
		}
	})
}
