package backup

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// writer writes the archive: tar entries in a gzip stream, and the
// SHA-256 of every file for SHA256SUMS.
type writer struct {
	out  *countingWriter
	gz   *gzip.Writer
	tw   *tar.Writer
	sums strings.Builder
	buf  []byte

	files int    // regular files written
	bytes int64  // their content
	tick  func() // called after each chunk of content
}

// newWriter compresses with gzip's fastest level: a computer is mostly
// programs, which compress little at any level, and a backup of a
// running den should end soon (a Debian computer of 310 MiB: 4 s and
// 153 MiB at level 1, 10 s and 142 MiB at the default level 6).
func newWriter(w io.Writer, tick func()) *writer {
	cw := &countingWriter{w: w}
	gz, _ := gzip.NewWriterLevel(cw, gzip.BestSpeed)
	return &writer{out: cw, gz: gz, tw: tar.NewWriter(gz), buf: make([]byte, 256<<10), tick: tick}
}

// header writes an entry without content.
func (w *writer) header(h *tar.Header) error {
	h.Format = tar.FormatPAX
	return w.tw.WriteHeader(h)
}

// content writes a regular file's entry with size bytes from r, padded
// with zeros when r ends early (a file truncated while it was read),
// and records its SHA-256.
func (w *writer) content(h *tar.Header, r io.Reader) error {
	h.Typeflag = tar.TypeReg
	if err := w.header(h); err != nil {
		return err
	}
	sum := sha256.New()
	dst := io.MultiWriter(w.tw, sum)
	var n int64
	for n < h.Size {
		chunk := w.buf[:min(int64(len(w.buf)), h.Size-n)]
		m, err := io.ReadFull(r, chunk)
		if m > 0 {
			if _, werr := dst.Write(chunk[:m]); werr != nil {
				return werr
			}
			n += int64(m)
			w.bytes += int64(m)
			if w.tick != nil {
				w.tick()
			}
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if n < h.Size {
		clear(w.buf)
		for n < h.Size {
			m := min(int64(len(w.buf)), h.Size-n)
			if _, err := dst.Write(w.buf[:m]); err != nil {
				return err
			}
			n += m
		}
	}
	w.files++
	w.sums.WriteString(sumLine(hex.EncodeToString(sum.Sum(nil)), h.Name))
	return nil
}

// bytesFile writes a file of den's from memory.
func (w *writer) bytesFile(name string, mode int64, data []byte, mtime time.Time) error {
	h := &tar.Header{Name: name, Mode: mode, Size: int64(len(data)), ModTime: mtime}
	return w.content(h, bytes.NewReader(data))
}

// close writes SHA256SUMS and ends the tar and gzip streams.
func (w *writer) close() error {
	sums := w.sums.String()
	h := &tar.Header{Name: SumsName, Typeflag: tar.TypeReg, Mode: 0o600, Size: int64(len(sums)), ModTime: time.Now()}
	if err := w.header(h); err != nil {
		return err
	}
	if _, err := io.WriteString(w.tw, sums); err != nil {
		return err
	}
	if err := w.tw.Close(); err != nil {
		return err
	}
	return w.gz.Close()
}

// sumLine is one line of SHA256SUMS as sha256sum writes it: a name
// with a backslash or a line break is escaped, and the line starts
// with a backslash.
func sumLine(hexsum, name string) string {
	if strings.ContainsAny(name, "\\\n\r") {
		r := strings.NewReplacer("\\", "\\\\", "\n", "\\n", "\r", "\\r")
		return "\\" + hexsum + "  " + r.Replace(name) + "\n"
	}
	return hexsum + "  " + name + "\n"
}

// parseSumLine reads a line sumLine wrote.
func parseSumLine(line string) (hexsum, name string, err error) {
	escaped := strings.HasPrefix(line, "\\")
	line = strings.TrimPrefix(line, "\\")
	hexsum, name, ok := strings.Cut(line, "  ")
	if !ok || len(hexsum) != 64 {
		return "", "", fmt.Errorf("%w: a bad line in %s", ErrCorrupt, SumsName)
	}
	if escaped {
		var b strings.Builder
		for i := 0; i < len(name); i++ {
			if name[i] != '\\' || i+1 == len(name) {
				b.WriteByte(name[i])
				continue
			}
			i++
			switch name[i] {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			default:
				b.WriteByte(name[i])
			}
		}
		name = b.String()
	}
	return hexsum, name, nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// archive reads an archive.
type archive struct {
	manifestSum string // the manifest's SHA-256, once read
	in          *countingReader
	gz          *gzip.Reader
	tr          *tar.Reader
}

func openArchive(r io.Reader) (*archive, error) {
	in := &countingReader{r: r}
	gz, err := gzip.NewReader(bufio.NewReaderSize(in, 256<<10))
	if err != nil {
		return nil, fmt.Errorf("%w: not gzip-compressed (%v)", ErrNotBackup, err)
	}
	return &archive{in: in, gz: gz, tr: tar.NewReader(gz)}, nil
}

func (a *archive) close() { a.gz.Close() }

// next is the next entry; io.EOF at the end.
func (a *archive) next() (*tar.Header, error) {
	h, err := a.tr.Next()
	if err == io.EOF {
		return nil, err
	}
	if err != nil {
		return nil, readErr(err)
	}
	return h, nil
}

// manifest reads the first entry, which must be the manifest.
func (a *archive) manifest() (Manifest, error) {
	h, err := a.next()
	if errors.Is(err, io.EOF) {
		return Manifest{}, fmt.Errorf("%w: the archive is empty", ErrNotBackup)
	}
	if err != nil {
		return Manifest{}, err
	}
	if h.Name != ManifestName || h.Typeflag != tar.TypeReg || h.Size > maxManifest {
		return Manifest{}, fmt.Errorf("%w: its first entry is %q, not %s", ErrNotBackup, h.Name, ManifestName)
	}
	b, err := io.ReadAll(io.LimitReader(a.tr, h.Size))
	if err != nil {
		return Manifest{}, readErr(err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return Manifest{}, fmt.Errorf("%w: %s: %v", ErrNotBackup, ManifestName, err)
	}
	sum := sha256.Sum256(b)
	a.manifestSum = hex.EncodeToString(sum[:])
	return m, nil
}

// end reads what follows the tar stream's end to the end of the gzip
// stream, so that its checksum is checked and nothing hides after it.
func (a *archive) end() error {
	if _, err := io.Copy(io.Discard, a.tr); err != nil {
		return readErr(err)
	}
	n, err := io.Copy(io.Discard, a.gz)
	if err != nil {
		return readErr(err)
	}
	if n > 1<<20 {
		return fmt.Errorf("%w: %d bytes after the archive's end", ErrCorrupt, n)
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
