package rootfs

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// extractFile extracts the tarball at file into dir, which exists. The
// compression is recognised by its magic bytes: gzip and bzip2 are read in
// process, xz and zstd through the external xz and zstd commands.
func extractFile(ctx context.Context, file, dir string, rep *reporter) error {
	f, err := os.Open(file)
	if err != nil {
		return fmt.Errorf("rootfs: extract %s: %w", file, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("rootfs: extract %s: %w", file, err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("rootfs: extract %s: not a regular file", file)
	}
	in := &countingReader{r: f, rep: rep, stage: StageExtract, msg: "extracting " + filepath.Base(file), total: st.Size()}
	if err := extractStream(ctx, in, dir); err != nil {
		return fmt.Errorf("rootfs: extract %s: %w", file, err)
	}
	return nil
}

// extractStream extracts a possibly compressed tar stream into dir.
func extractStream(ctx context.Context, r io.Reader, dir string) (err error) {
	stream, finish, err := decompress(ctx, r)
	if err != nil {
		return err
	}
	src := &trackingReader{r: stream}
	defer func() {
		ferr := finish(err == nil)
		switch {
		case ferr == nil:
		case err == nil:
			err = fmt.Errorf("%w: %w", ErrCorrupt, ferr)
		default:
			err = fmt.Errorf("%w (%v)", err, ferr)
		}
	}()
	t, err := openTree(dir)
	if err != nil {
		return err
	}
	defer t.close()
	tr := tar.NewReader(src)
	entries := 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		entries++
		if err := t.add(h, tr); err != nil {
			if src.err != nil {
				return fmt.Errorf("%w: %s: %w", ErrCorrupt, h.Name, src.err)
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				return fmt.Errorf("%w: %s: truncated", ErrCorrupt, h.Name)
			}
			return fmt.Errorf("%s: %w", h.Name, err)
		}
	}
	if entries == 0 {
		return fmt.Errorf("%w: no entries", ErrCorrupt)
	}
	return t.finish()
}

// trackingReader remembers the first read error, so a failed entry can be
// blamed on the archive rather than on the destination.
type trackingReader struct {
	r   io.Reader
	err error
}

func (t *trackingReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if err != nil && err != io.EOF && t.err == nil {
		t.err = err
	}
	return n, err
}

var (
	magicGzip  = []byte{0x1f, 0x8b}
	magicBzip2 = []byte("BZh")
	magicXz    = []byte{0xfd, '7', 'z', 'X', 'Z', 0x00}
	magicZstd  = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// decompress returns the tar stream inside r and a finish function. finish(true)
// reads the compressed stream to its end, so trailing corruption and
// checksums are checked; finish(false) abandons it.
func decompress(ctx context.Context, r io.Reader) (io.Reader, func(ok bool) error, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, _ := br.Peek(6)
	none := func(bool) error { return nil }
	drain := func(rd io.Reader) func(bool) error {
		return func(ok bool) error {
			if !ok {
				return nil
			}
			_, err := io.Copy(io.Discard, rd)
			if errors.Is(err, gzip.ErrHeader) {
				err = nil // trailing padding after the last gzip member
			}
			return err
		}
	}
	switch {
	case bytes.HasPrefix(magic, magicGzip):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: gzip: %w", ErrCorrupt, err)
		}
		return zr, drain(zr), nil
	case bytes.HasPrefix(magic, magicBzip2):
		zr := bzip2.NewReader(br)
		return zr, drain(zr), nil
	case bytes.HasPrefix(magic, magicXz):
		return external(ctx, br, "xz", "xz-utils")
	case bytes.HasPrefix(magic, magicZstd):
		return external(ctx, br, "zstd", "zstd")
	}
	return br, none, nil
}

// external decompresses in through `tool -dc`.
func external(ctx context.Context, in io.Reader, tool, pkg string) (io.Reader, func(ok bool) error, error) {
	bin, err := exec.LookPath(tool)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s is needed for this archive (install the %s package)", ErrToolMissing, tool, pkg)
	}
	ctx, cancel := context.WithCancel(ctx)
	cmd := exec.CommandContext(ctx, bin, "-dc")
	cmd.Stdin = in
	stderr := &tailBuffer{max: 4 << 10}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, nil, fmt.Errorf("start %s: %w", tool, err)
	}
	finish := func(ok bool) error {
		defer cancel()
		var derr error
		if ok {
			_, derr = io.Copy(io.Discard, out)
		} else {
			cancel()
		}
		werr := cmd.Wait()
		if !ok {
			if msg := strings.TrimSpace(stderr.String()); msg != "" {
				return fmt.Errorf("%s: %s", tool, msg)
			}
			return nil
		}
		if werr != nil {
			return fmt.Errorf("%s: %w: %s", tool, werr, strings.TrimSpace(stderr.String()))
		}
		return derr
	}
	return out, finish, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	max int
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.buf) }
