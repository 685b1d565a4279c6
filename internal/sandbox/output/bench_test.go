package output_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"den.dev/den/internal/sandbox/output"
)

// mixedOutput returns about size bytes of terminal output: colored log
// lines, UTF-8 text, progress bars redrawn with '\r', and OSC titles.
func mixedOutput(size int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < size; i++ {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "\x1b[1;34m[%05d]\x1b[0m compiling \x1b[33mpackage/path/file%d.go\x1b[0m ok\n", i, i)
		case 1:
			for p := 0; p <= 100; p += 10 {
				fmt.Fprintf(&b, "\r\x1b[K[%-10s] %3d%%", bytes.Repeat([]byte("#"), p/10), p)
			}
			b.WriteString("\r\n")
		case 2:
			fmt.Fprintf(&b, "\x1b]0;job %d\x07résumé naïve 日本語 ⛄ — plain text line number %d\n", i, i)
		case 3:
			b.WriteString("a fairly ordinary line of program output without any escapes at all\n")
		}
	}
	return b.Bytes()[:size]
}

func BenchmarkCleaner(b *testing.B) {
	in := mixedOutput(1 << 20)
	for _, chunk := range []int{512, 32 << 10} {
		b.Run(fmt.Sprintf("chunk=%d", chunk), func(b *testing.B) {
			chunks := chunked(in, chunk)
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				c := output.NewCleaner(io.Discard)
				for _, ch := range chunks {
					c.Write(ch)
				}
				c.Close()
			}
		})
	}
}

// discardCloser is a spill writer that keeps nothing.
type discardCloser struct{}

func (discardCloser) Write(p []byte) (int, error) { return len(p), nil }
func (discardCloser) Close() error                { return nil }

func BenchmarkCapture(b *testing.B) {
	in := mixedOutput(1 << 20)
	chunks := chunked(in, 32<<10)
	spill := func() (io.WriteCloser, error) { return discardCloser{}, nil }
	for _, limit := range []int{64 << 10, 2 << 20} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			b.ReportAllocs()
			for b.Loop() {
				c := output.NewCapture(limit, spill)
				for _, ch := range chunks {
					c.Write(ch)
				}
				c.Close()
				_ = c.Text()
			}
		})
	}
}

// BenchmarkCleanerCapture is the usual chain: a Cleaner writing to a Capture.
func BenchmarkCleanerCapture(b *testing.B) {
	in := mixedOutput(1 << 20)
	chunks := chunked(in, 32<<10)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		capture := output.NewCapture(64<<10, nil)
		c := output.NewCleaner(capture)
		for _, ch := range chunks {
			c.Write(ch)
		}
		c.Close()
		capture.Close()
		_ = capture.Text()
	}
}
