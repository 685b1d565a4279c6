package output_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"den.dev/den/internal/sandbox/output"
)

// recorder is a destination that fails the test if one write splits a
// rune or, with wholeLines, if a write other than the last does not end
// with a newline.
type recorder struct {
	t          testing.TB
	out        bytes.Buffer
	closed     bool
	wholeLines bool
	unended    bool // the last write did not end with a newline
}

func (r *recorder) Write(p []byte) (int, error) {
	if !utf8.Valid(p) {
		r.t.Errorf("destination got a write that is not valid UTF-8: %q", p)
	}
	if r.wholeLines && r.unended {
		r.t.Errorf("destination got a write after one that did not end a line: %q", p)
	}
	r.unended = len(p) == 0 || p[len(p)-1] != '\n'
	return r.out.Write(p)
}

func (r *recorder) Close() error {
	r.closed = true
	return nil
}

// clean writes chunks to a new Cleaner, closes it and returns its output.
func clean(t testing.TB, chunks ...[]byte) string {
	t.Helper()
	total := 0
	for _, ch := range chunks {
		total += len(ch)
	}
	rec := &recorder{t: t, wholeLines: total <= output.MaxLine}
	c := output.NewCleaner(rec)
	for _, ch := range chunks {
		n, err := c.Write(ch)
		if err != nil || n != len(ch) {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", ch, n, err, len(ch))
		}
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if rec.closed {
		t.Fatal("Close closed the destination")
	}
	return rec.out.String()
}

// chunked cuts in into pieces of size n.
func chunked(in []byte, n int) [][]byte {
	var out [][]byte
	for len(in) > n {
		out = append(out, in[:n])
		in = in[n:]
	}
	return append(out, in)
}

var cleanerTests = []struct {
	name, in, want string
}{
	{"empty", "", ""},
	{"plain", "hello\nworld\n", "hello\nworld\n"},
	{"tab kept", "a\tb\n", "a\tb\n"},
	{"utf8 kept", "héllo wörld ⛄ 日本 🎉\n", "héllo wörld ⛄ 日本 🎉\n"},
	{"no final newline", "abc", "abc"},

	// CSI.
	{"csi color", "\x1b[31mred\x1b[0m plain\n", "red plain\n"},
	{"csi many params", "\x1b[1;38;2;255;128;0mx\x1b[m", "x"},
	{"csi private", "\x1b[?25lhidden cursor\x1b[?25h", "hidden cursor"},
	{"csi private 2004", "\x1b[?2004h$ ls\x1b[?2004l\n", "$ ls\n"},
	{"csi erase", "a\x1b[2Kb\x1b[Kc\x1b[1Jd", "abcd"},
	{"csi cursor", "\x1b[10;20Hx\x1b[3Ay\x1b[Dz", "xyz"},
	{"csi intermediate", "\x1b[1 qx\x1b[!py", "xy"},
	{"csi greater", "\x1b[>0cx", "x"},
	{"csi del ignored", "\x1b[3\x7f1mx", "x"},
	{"csi unterminated at end", "a\x1b[12", "a"},
	{"csi aborted by CAN", "\x1b[12\x18x", "x"},
	{"csi aborted by SUB", "\x1b[12\x1ax", "x"},
	{"csi cut by newline", "\x1b[12\nx", "\nx"},
	{"csi cut by utf8", "\x1b[12é", "é"},
	{"csi restarted by esc", "\x1b[12\x1b[31mx", "x"},
	{"c1 csi", "a\x9b31mb\x9b?25lc", "abc"},
	{"c1 csi unterminated", "a\x9b1", "a"},
	{"0x9b inside a rune", "\xe2\x9b\x84 snow", "⛄ snow"},
	{"0x9b after a broken lead", "\xe2\x9bxy", "\uFFFDy"},
	{"utf8 encoded c1 dropped", "a\xc2\x9bb\xc2\x85c", "abc"},

	// OSC.
	{"osc bel", "\x1b]0;window title\x07text\n", "text\n"},
	{"osc st", "\x1b]2;title\x1b\\text", "text"},
	{"osc hyperlink", "\x1b]8;;https://example.com/\x1b\\link\x1b]8;;\x1b\\ after", "link after"},
	{"osc utf8 and newline inside", "\x1b]0;tïtle ⛄\nmore\x07x", "x"},
	{"osc unterminated hides the rest", "a\x1b]0;title\nb\nc", "a"},
	{"osc aborted by CAN", "\x1b]0;t\x18x", "x"},
	{"osc ended by a new escape", "\x1b]0;t\x1b[31mred", "red"},
	{"osc esc esc", "\x1b]0;t\x1b\x1b[mx", "x"},
	{"osc 52 clipboard", "\x1b]52;c;aGVsbG8=\x07ok", "ok"},

	// DCS, SOS, PM, APC.
	{"dcs", "\x1bPq#0;2;0;0;0#0~~@@\x1b\\after", "after"},
	{"dcs with bel inside", "\x1bP1$r\x07x\x1b\\y", "y"},
	{"sos", "\x1bXstart of string\x1b\\x", "x"},
	{"pm", "\x1b^privacy message\x1b\\x", "x"},
	{"apc", "\x1b_Gf=100;AAAA\x1b\\x", "x"},
	{"dcs unterminated", "a\x1bPdata", "a"},

	// Other ESC sequences.
	{"esc save restore", "\x1b7a\x1b8b", "ab"},
	{"esc keypad", "\x1b=a\x1b>b", "ab"},
	{"esc index and reset", "\x1bMa\x1bDb\x1bEc\x1bcd", "abcd"},
	{"esc charset", "\x1b(Ba\x1b)0b\x1b*Ac\x1b%Gd", "abcd"},
	{"esc dec test", "\x1b#8x", "x"},
	{"esc st alone", "a\x1b\\b", "ab"},
	{"esc esc", "\x1b\x1b[31mx", "x"},
	{"esc then newline", "\x1b\nx", "\nx"},
	{"esc then utf8", "\x1bé", "é"},
	{"esc then CAN", "\x1b\x18x", "x"},
	{"esc at end", "abc\x1b", "abc"},
	{"esc inter at end", "abc\x1b(", "abc"},
	{"esc inter cut", "\x1b(\nx", "\nx"},

	// Control characters.
	{"c0 dropped", "a\x00b\x01c\x07d\x08e\x0bf\x0cg\x7fh", "abcdefgh"},
	{"backspace dropped", "ab\x08\x08cd", "abcd"},

	// Carriage returns.
	{"cr progress", "10%\r50%\r100%\n", "100%\n"},
	{"crlf", "a\r\nb\r\n", "a\nb\n"},
	{"cr cr lf", "abc\r\r\n", "abc\n"},
	{"lone cr at start", "\rabc\n", "abc\n"},
	{"cr then text", "abc\rxy", "xy"},
	{"trailing cr", "abc\r", "abc"},
	{"only cr", "\r", ""},
	{"cr per line", "a\rb\nc\rd\n", "b\nd\n"},
	{"cr then escape then lf", "abc\r\x1b[K\n", "abc\n"},
	{"progress bar", "\r\x1b[K[##  ]  50%\r\x1b[K[####] 100%\ndone\n", "[####] 100%\ndone\n"},
	{"pip style", "Downloading\n  |█▌  | 10 kB\r  |███ | 20 kB\r  |████| 30 kB\n", "Downloading\n  |████| 30 kB\n"},
	{"cr then tab", "abc\r\tx", "\tx"},
	{"cr then utf8", "abc\ré", "é"},
	{"cr then invalid", "abc\r\xff", "\uFFFD"},
	{"cr then control", "abc\r\x07\n", "abc\n"},

	// Invalid UTF-8.
	{"invalid byte", "a\xffb", "a\uFFFDb"},
	{"lone continuation", "a\x80b", "a\uFFFDb"},
	{"truncated rune at end", "a\xe2\x82", "a\uFFFD\uFFFD"},
	{"truncated rune mid", "a\xe2\x82b", "a\uFFFD\uFFFDb"},
	{"overlong", "\xc0\xaf", "\uFFFD\uFFFD"},
	{"surrogate", "\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"},
	{"too large", "\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"},
	{"lead then escape", "\xe2\x1b[31mx", "\uFFFDx"},
	{"four byte rune", "\xf0\x9f\x8e\x89", "🎉"},

	// All together.
	{
		"mixed",
		"\x1b]0;make\x07\x1b[1;32m==>\x1b[0m building\r\n" +
			"[1/3] \x1b[33mcc\x1b[0m a.c\r[2/3] cc b.c\r[3/3] cc c.c\r\n" +
			"\x1b[?25l⠋ wait\r⠙ wait\r\x1b[K✓ ok\x1b[?25h\n",
		"==> building\n[3/3] cc c.c\n✓ ok\n",
	},
}

func TestCleaner(t *testing.T) {
	for _, tt := range cleanerTests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			if got := clean(t, in); got != tt.want {
				t.Errorf("whole: got %q, want %q", got, tt.want)
			}
		})
	}
}

// TestCleanerChunking writes every input byte by byte, in every 2-way split
// and in every 3-way split, and expects the output of writing it whole.
func TestCleanerChunking(t *testing.T) {
	for _, tt := range cleanerTests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			if got := clean(t, chunked(in, 1)...); got != tt.want {
				t.Errorf("byte by byte: got %q, want %q", got, tt.want)
			}
			for i := range len(in) + 1 {
				if got := clean(t, in[:i], in[i:]); got != tt.want {
					t.Errorf("split at %d: got %q, want %q", i, got, tt.want)
				}
				for j := i; j <= len(in); j++ {
					if got := clean(t, in[:i], in[i:j], in[j:]); got != tt.want {
						t.Fatalf("split at %d and %d: got %q, want %q", i, j, got, tt.want)
					}
				}
			}
		})
	}
}

func TestCleanerLongLine(t *testing.T) {
	a := func(n int) string { return strings.Repeat("a", n) }
	euro := strings.Repeat("€", output.MaxLine) // 3 bytes a rune
	tests := []struct {
		name, in, want string
	}{
		{"line of MaxLine is held", a(output.MaxLine) + "\rz\n", "z\n"},
		{"longer line flushed as is", a(output.MaxLine+10) + "\rxyz\n", a(output.MaxLine) + "xyz\n"},
		{"rune moves to the next piece", a(output.MaxLine-1) + "é\rz", a(output.MaxLine-1) + "z"},
		{"long line then newline", a(3*output.MaxLine+5) + "\n", a(3*output.MaxLine+5) + "\n"},
		{"long utf8 line", euro + "\n", euro + "\n"},
		{"long line with escapes", strings.Repeat("\x1b[31ma\x1b[0m", output.MaxLine+1) + "\n", a(output.MaxLine+1) + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			for _, n := range []int{1, 2, 7, 4096, len(in)} {
				if got := clean(t, chunked(in, n)...); got != tt.want {
					t.Errorf("chunks of %d: got %d bytes %q...; want %d bytes %q...",
						n, len(got), head(got), len(tt.want), head(tt.want))
				}
			}
		})
	}
}

func head(s string) string {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}

// TestCleanerHoldsAtMostALine checks that what has been written but not
// passed on never exceeds MaxLine bytes, with and without newlines.
func TestCleanerHoldsAtMostALine(t *testing.T) {
	inputs := map[string][]byte{
		"one line": bytes.Repeat([]byte("x"), 1<<20),
		"lines":    bytes.Repeat([]byte("0123456789abcdefghij\n"), 50000),
		"runes":    bytes.Repeat([]byte("日本語"), 100000),
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			rec := &recorder{t: t}
			c := output.NewCleaner(rec)
			written := 0
			for _, ch := range chunked(in, 1000) {
				if _, err := c.Write(ch); err != nil {
					t.Fatal(err)
				}
				written += len(ch)
				if held := written - rec.out.Len(); held > output.MaxLine {
					t.Fatalf("after %d bytes, %d are held; want at most %d", written, held, output.MaxLine)
				}
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(rec.out.Bytes(), in) {
				t.Error("output differs from the clean input")
			}
		})
	}
}

type failWriter struct{ err error }

func (w failWriter) Write([]byte) (int, error) { return 0, w.err }

func TestCleanerDestinationError(t *testing.T) {
	boom := errors.New("boom")
	c := output.NewCleaner(failWriter{boom})
	if n, err := c.Write([]byte("held line")); err != nil || n != 9 {
		t.Fatalf("Write of an unfinished line = %d, %v; want 9, nil", n, err)
	}
	if n, err := c.Write([]byte("\n")); !errors.Is(err, boom) || n != 0 {
		t.Fatalf("Write = %d, %v; want 0 and an error wrapping %v", n, err, boom)
	}
	if _, err := c.Write([]byte("more\n")); !errors.Is(err, boom) {
		t.Errorf("second Write: %v; want the first error again", err)
	}
	if err := c.Close(); !errors.Is(err, boom) {
		t.Errorf("Close: %v; want %v", err, boom)
	}
}

func TestCleanerCloseFlushesLastLine(t *testing.T) {
	boom := errors.New("boom")
	c := output.NewCleaner(failWriter{boom})
	if _, err := c.Write([]byte("no newline")); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); !errors.Is(err, boom) {
		t.Errorf("Close: %v; want the destination error from writing the held line", err)
	}
}

func TestCleanerWriteAfterClose(t *testing.T) {
	rec := &recorder{t: t}
	c := output.NewCleaner(rec)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, output.ErrClosed) {
		t.Errorf("Write after Close: %v; want %v", err, output.ErrClosed)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// checkClean fails if out is not what a Cleaner may write.
func checkClean(t *testing.T, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Fatalf("output is not valid UTF-8: %q", out)
	}
	for _, r := range out {
		if r != '\n' && r != '\t' && unicode.IsControl(r) {
			t.Fatalf("output has control character %U: %q", r, out)
		}
	}
}

func FuzzCleaner(f *testing.F) {
	for _, tt := range cleanerTests {
		f.Add([]byte(tt.in), uint16(len(tt.in)/2))
	}
	f.Fuzz(func(t *testing.T, in []byte, cut uint16) {
		whole := clean(t, in)
		checkClean(t, whole)
		if bytes := clean(t, chunked(in, 1)...); bytes != whole {
			t.Fatalf("byte by byte: %q; whole: %q", bytes, whole)
		}
		i := int(cut) % (len(in) + 1)
		if split := clean(t, in[:i], in[i:]); split != whole {
			t.Fatalf("split at %d: %q; whole: %q", i, split, whole)
		}
	})
}
