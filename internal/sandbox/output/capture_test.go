package output_test

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"den.dev/den/internal/sandbox/output"
)

// spillFile is a spill writer in memory that can fail.
type spillFile struct {
	bytes.Buffer
	failAfter int // fail writes once this many bytes are written; -1 never
	writeErr  error
	closeErr  error
	writes    int // calls to Write, failing ones included
	closes    int
}

func (f *spillFile) Write(p []byte) (int, error) {
	f.writes++
	if f.failAfter >= 0 && f.Len()+len(p) > f.failAfter {
		n, _ := f.Buffer.Write(p[:f.failAfter-f.Len()])
		return n, f.writeErr
	}
	return f.Buffer.Write(p)
}

func (f *spillFile) Close() error {
	f.closes++
	return f.closeErr
}

// opener returns a spill function that counts its calls and hands out f.
func opener(f *spillFile, err error, calls *int) func() (io.WriteCloser, error) {
	return func() (io.WriteCloser, error) {
		*calls++
		if err != nil {
			return nil, err
		}
		return f, nil
	}
}

func capture(t *testing.T, c *output.Capture, chunks [][]byte) {
	t.Helper()
	for _, ch := range chunks {
		if n, err := c.Write(ch); err != nil || n != len(ch) {
			t.Fatalf("Write = %d, %v; want %d, nil", n, err, len(ch))
		}
	}
}

func TestCaptureFits(t *testing.T) {
	tests := []struct {
		name  string
		limit int
		in    string
	}{
		{"empty", 10, ""},
		{"zero limit", 0, ""},
		{"below the limit", 100, "hello\nwörld\n"},
		{"exactly the limit", 13, "hello\nwörld\n"},
		{"exactly the limit of one", 1, "x"},
	}
	for _, tt := range tests {
		for _, n := range []int{1, 5, len(tt.in) + 1} {
			calls := 0
			f := &spillFile{failAfter: -1}
			c := output.NewCapture(tt.limit, opener(f, nil, &calls))
			capture(t, c, chunked([]byte(tt.in), n))
			want := output.Excerpt{Head: tt.in, Total: int64(len(tt.in))}
			if diff := cmp.Diff(want, c.Excerpt()); diff != "" {
				t.Errorf("%s, chunks of %d: Excerpt (-want +got):\n%s", tt.name, n, diff)
			}
			if got := c.Text(); got != tt.in {
				t.Errorf("%s: Text = %q, want %q", tt.name, got, tt.in)
			}
			if c.Truncated() || c.Total() != int64(len(tt.in)) {
				t.Errorf("%s: Truncated, Total = %v, %d; want false, %d", tt.name, c.Truncated(), c.Total(), len(tt.in))
			}
			if err := c.Close(); err != nil {
				t.Errorf("%s: Close: %v", tt.name, err)
			}
			if calls != 0 || f.closes != 0 {
				t.Errorf("%s: spill opened %d times, closed %d; want never", tt.name, calls, f.closes)
			}
		}
	}
}

func TestCaptureTruncates(t *testing.T) {
	digits := strings.Repeat("0123456789", 10)
	tests := []struct {
		name  string
		limit int
		in    string
		want  output.Excerpt
		text  string
	}{
		{
			name:  "ascii",
			limit: 20,
			in:    digits,
			want:  output.Excerpt{Head: "0123456789", Tail: "0123456789", Omitted: 80, Total: 100},
			text:  "0123456789\n[... 80 bytes omitted ...]\n0123456789",
		},
		{
			name:  "one byte over",
			limit: 20,
			in:    digits[:21],
			want:  output.Excerpt{Head: "0123456789", Tail: "1234567890", Omitted: 1, Total: 21},
			text:  "0123456789\n[... 1 bytes omitted ...]\n1234567890",
		},
		{
			name:  "odd limit gives the tail the extra byte",
			limit: 21,
			in:    digits,
			want:  output.Excerpt{Head: "0123456789", Tail: "90123456789", Omitted: 79, Total: 100},
		},
		{
			name:  "runes are not cut",
			limit: 20,
			in:    strings.Repeat("€", 100), // 3 bytes a rune; both cuts fall inside one
			want:  output.Excerpt{Head: "€€€", Tail: "€€€", Omitted: 282, Total: 300},
			text:  "€€€\n[... 282 bytes omitted ...]\n€€€",
		},
		{
			name:  "four byte runes",
			limit: 22,
			in:    "ab" + strings.Repeat("🎉", 50),
			want:  output.Excerpt{Head: "ab🎉🎉", Tail: "🎉🎉", Omitted: 202 - 10 - 8, Total: 202},
		},
		{
			name:  "cut at nearby newlines",
			limit: 40,
			in:    "0123456789abcdef\nXYZ" + strings.Repeat("x", 100) + "ab\n0123456789ABCDE\n",
			want:  output.Excerpt{Head: "0123456789abcdef\n", Tail: "0123456789ABCDE\n", Omitted: 106, Total: 139},
			text:  "0123456789abcdef\n[... 106 bytes omitted ...]\n0123456789ABCDE\n",
		},
		{
			name:  "tail already starts a line",
			limit: 40,
			in:    strings.Repeat("y", 50) + "\n" + "ab\ncdefghijklmnopqrs",
			want:  output.Excerpt{Head: strings.Repeat("y", 20), Tail: "ab\ncdefghijklmnopqrs", Omitted: 31, Total: 71},
		},
		{
			name:  "newlines too far from the cut are ignored",
			limit: 40,
			in:    "0123456789\n" + strings.Repeat("z", 100) + "\n0123456789",
			want: output.Excerpt{
				Head:    "0123456789\n" + strings.Repeat("z", 9),
				Tail:    strings.Repeat("z", 9) + "\n0123456789",
				Omitted: 122 - 40, Total: 122,
			},
		},
		{
			name:  "zero limit",
			limit: 0,
			in:    "abc",
			want:  output.Excerpt{Omitted: 3, Total: 3},
			text:  "[... 3 bytes omitted ...]\n",
		},
		{
			name:  "limit of one",
			limit: 1,
			in:    "abc",
			want:  output.Excerpt{Tail: "c", Omitted: 2, Total: 3},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			for _, n := range []int{1, 3, 7, tt.limit - tt.limit/2, tt.limit, tt.limit + 1, len(in)} {
				if n == 0 {
					continue
				}
				calls := 0
				f := &spillFile{failAfter: -1}
				c := output.NewCapture(tt.limit, opener(f, nil, &calls))
				capture(t, c, chunked(in, n))
				if diff := cmp.Diff(tt.want, c.Excerpt()); diff != "" {
					t.Errorf("chunks of %d: Excerpt (-want +got):\n%s", n, diff)
				}
				if tt.text != "" {
					if got := c.Text(); got != tt.text {
						t.Errorf("chunks of %d: Text = %q, want %q", n, got, tt.text)
					}
				}
				if !c.Truncated() || c.Total() != int64(len(in)) {
					t.Errorf("Truncated, Total = %v, %d; want true, %d", c.Truncated(), c.Total(), len(in))
				}
				if err := c.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
				if calls != 1 || f.closes != 1 {
					t.Errorf("spill opened %d times and closed %d; want once each", calls, f.closes)
				}
				if !bytes.Equal(f.Bytes(), in) {
					t.Errorf("chunks of %d: spill holds %q, want %q", n, f.Bytes(), in)
				}
			}
		})
	}
}

// TestCaptureProperties writes random text in random chunks and checks what
// must hold of any Capture.
func TestCaptureProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "bc", "\n", "line of text\n", "é", "€", "🎉", "日本語", "\t"}
	for iter := range 2000 {
		var sb strings.Builder
		for range rng.IntN(400) {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		in := []byte(sb.String())
		limit := []int{0, 1, 2, 3, 5, 16, 64, 100, 1000, 5000}[rng.IntN(10)]
		var chunks [][]byte
		for rest := in; len(rest) > 0; {
			n := min(1+rng.IntN(50), len(rest))
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}

		calls := 0
		f := &spillFile{failAfter: -1}
		c := output.NewCapture(limit, opener(f, nil, &calls))
		capture(t, c, chunks)
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		e := c.Excerpt()
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("iteration %d, limit %d, input %q: "+format, append([]any{iter, limit, in}, args...)...)
		}
		if e.Total != int64(len(in)) {
			fail("Total = %d", e.Total)
		}
		if len(in) <= limit {
			if e.Head != string(in) || e.Tail != "" || e.Omitted != 0 || calls != 0 {
				fail("fits, but Excerpt = %+v, spill opened %d times", e, calls)
			}
			continue
		}
		half := limit / 2
		slack := max(min(256, half/4), utf8.UTFMax-1)
		if len(e.Head) > half || len(e.Head) < half-slack {
			fail("head has %d bytes; want %d to %d", len(e.Head), half-slack, half)
		}
		tailCap := limit - half
		slack = max(min(256, tailCap/4), utf8.UTFMax-1)
		if len(e.Tail) > tailCap || len(e.Tail) < tailCap-slack {
			fail("tail has %d bytes; want %d to %d", len(e.Tail), tailCap-slack, tailCap)
		}
		if !strings.HasPrefix(string(in), e.Head) || !strings.HasSuffix(string(in), e.Tail) {
			fail("Excerpt %+v is not head and tail of the input", e)
		}
		if !utf8.ValidString(e.Head) || !utf8.ValidString(e.Tail) {
			fail("Excerpt %+v cuts a rune", e)
		}
		if e.Omitted != int64(len(in)-len(e.Head)-len(e.Tail)) || !e.Truncated() {
			fail("Omitted = %d", e.Omitted)
		}
		if calls != 1 || !bytes.Equal(f.Bytes(), in) {
			fail("spill opened %d times, holds %q", calls, f.Bytes())
		}
	}
}

var errBoom = errors.New("boom")

func TestCaptureSpillOpenError(t *testing.T) {
	calls := 0
	c := output.NewCapture(20, opener(nil, errBoom, &calls))
	capture(t, c, chunked([]byte(strings.Repeat("0123456789", 10)), 7))
	if err := c.Err(); !errors.Is(err, errBoom) {
		t.Errorf("Err = %v; want %v", err, errBoom)
	}
	want := output.Excerpt{Head: "0123456789", Tail: "0123456789", Omitted: 80, Total: 100}
	if diff := cmp.Diff(want, c.Excerpt()); diff != "" {
		t.Errorf("Excerpt after a spill error (-want +got):\n%s", diff)
	}
	if err := c.Close(); !errors.Is(err, errBoom) {
		t.Errorf("Close = %v; want %v", err, errBoom)
	}
	if calls != 1 {
		t.Errorf("spill called %d times; want once", calls)
	}
}

func TestCaptureSpillWriteError(t *testing.T) {
	for _, failAfter := range []int{0, 5, 25, 60} {
		f := &spillFile{failAfter: failAfter, writeErr: errBoom}
		calls := 0
		c := output.NewCapture(20, opener(f, nil, &calls))
		capture(t, c, chunked([]byte(strings.Repeat("0123456789", 10)), 7))
		if err := c.Err(); !errors.Is(err, errBoom) {
			t.Errorf("fail after %d: Err = %v; want %v", failAfter, err, errBoom)
		}
		want := output.Excerpt{Head: "0123456789", Tail: "0123456789", Omitted: 80, Total: 100}
		if diff := cmp.Diff(want, c.Excerpt()); diff != "" {
			t.Errorf("fail after %d: Excerpt (-want +got):\n%s", failAfter, diff)
		}
		writes := f.writes
		capture(t, c, [][]byte{[]byte("more")})
		if f.writes != writes {
			t.Errorf("fail after %d: spill written again after it failed", failAfter)
		}
		if err := c.Close(); !errors.Is(err, errBoom) {
			t.Errorf("fail after %d: Close = %v; want %v", failAfter, err, errBoom)
		}
		if f.closes != 1 {
			t.Errorf("fail after %d: spill closed %d times; want once", failAfter, f.closes)
		}
	}
}

func TestCaptureSpillShortWrite(t *testing.T) {
	f := &spillFile{failAfter: 5} // short write with no error
	calls := 0
	c := output.NewCapture(4, opener(f, nil, &calls))
	capture(t, c, [][]byte{[]byte("0123456789")})
	if err := c.Err(); !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("Err = %v; want %v", err, io.ErrShortWrite)
	}
}

func TestCaptureSpillCloseError(t *testing.T) {
	f := &spillFile{failAfter: -1, closeErr: errBoom}
	calls := 0
	c := output.NewCapture(4, opener(f, nil, &calls))
	capture(t, c, [][]byte{[]byte("0123456789")})
	if err := c.Err(); err != nil {
		t.Errorf("Err before Close = %v; want nil", err)
	}
	if err := c.Close(); !errors.Is(err, errBoom) {
		t.Errorf("Close = %v; want %v", err, errBoom)
	}
	if err := c.Close(); !errors.Is(err, errBoom) {
		t.Errorf("second Close = %v; want the same error", err)
	}
}

func TestCaptureSpillNoWriter(t *testing.T) {
	c := output.NewCapture(4, func() (io.WriteCloser, error) { return nil, nil })
	capture(t, c, [][]byte{[]byte("0123456789")})
	if c.Err() == nil {
		t.Error("Err = nil after the spill function returned no writer")
	}
}

func TestCaptureNilSpill(t *testing.T) {
	c := output.NewCapture(4, nil)
	capture(t, c, [][]byte{[]byte("0123456789")})
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	want := output.Excerpt{Head: "01", Tail: "89", Omitted: 6, Total: 10}
	if diff := cmp.Diff(want, c.Excerpt()); diff != "" {
		t.Errorf("Excerpt (-want +got):\n%s", diff)
	}
}

func TestCaptureWriteAfterClose(t *testing.T) {
	c := output.NewCapture(4, nil)
	capture(t, c, [][]byte{[]byte("ab")})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, output.ErrClosed) {
		t.Errorf("Write after Close: %v; want %v", err, output.ErrClosed)
	}
	if got := c.Text(); got != "ab" {
		t.Errorf("Text after Close = %q, want %q", got, "ab")
	}
}

func TestCaptureNegativeLimit(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewCapture(-1, nil) did not panic")
		}
	}()
	output.NewCapture(-1, nil)
}

// TestCaptureConcurrent reads a Capture while it is written; run with -race.
func TestCaptureConcurrent(t *testing.T) {
	c := output.NewCapture(100, nil)
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 1000 {
			c.Write([]byte("some output\n"))
		}
	})
	for range 100 {
		_ = c.Text()
		_ = c.Total()
	}
	wg.Wait()
	if got := c.Total(); got != 12000 {
		t.Errorf("Total = %d, want 12000", got)
	}
}

func FuzzCapture(f *testing.F) {
	f.Add([]byte("hello\nwörld\n€€€🎉\n"), uint8(8), uint8(3))
	f.Add([]byte("\xff\xe2\x82abc\n\n\n"), uint8(4), uint8(1))
	f.Fuzz(func(t *testing.T, in []byte, limit, chunk uint8) {
		calls := 0
		spill := &spillFile{failAfter: -1}
		c := output.NewCapture(int(limit), opener(spill, nil, &calls))
		capture(t, c, chunked(in, int(chunk)+1))
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		e := c.Excerpt()
		if len(in) <= int(limit) {
			if e.Head != string(in) || e.Tail != "" || e.Omitted != 0 || calls != 0 {
				t.Fatalf("fits, but Excerpt = %+v and spill opened %d times", e, calls)
			}
			return
		}
		if len(e.Head)+len(e.Tail) > int(limit) || e.Omitted != int64(len(in)-len(e.Head)-len(e.Tail)) {
			t.Fatalf("Excerpt %+v does not fit limit %d", e, limit)
		}
		if !strings.HasPrefix(string(in), e.Head) || !strings.HasSuffix(string(in), e.Tail) {
			t.Fatalf("Excerpt %+v is not head and tail of the input", e)
		}
		if calls != 1 || !bytes.Equal(spill.Bytes(), in) {
			t.Fatalf("spill opened %d times, holds %q", calls, spill.Bytes())
		}
	})
}
