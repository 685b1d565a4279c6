package backup

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestVerify: a backup verifies, and Verify counts what Create wrote;
// an archive cut short, with a byte changed in a file or in the
// compressed stream, with a file SHA256SUMS does not list, without a
// file it lists, or with an entry after it fails, naming the problem.
func TestVerify(t *testing.T) {
	f := newFixture(t)
	b, made := create(t, f, Options{})
	s, err := Verify(context.Background(), bytes.NewReader(b), VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Files != made.Files || s.Bytes != made.Bytes || s.Read != int64(len(b)) {
		t.Errorf("verified %d files, %d bytes, %d read; the backup wrote %d files, %d bytes, %d in all", s.Files, s.Bytes, s.Read, made.Files, made.Bytes, len(b))
	}
	if m := s.Manifest; m.Sessions == nil || *m.Sessions != 1 || len(m.Agents) != 1 || m.Secrets || !m.Created.Equal(made.Manifest.Created) {
		t.Errorf("manifest %+v", m)
	}

	const memory = "data/agents/default/memory/GLOBAL.md"
	flipped := append([]byte(nil), b...)
	flipped[len(b)/2] ^= 0x20
	for _, tc := range []struct {
		name    string
		archive []byte
		want    error
		says    string
	}{
		{"truncated", b[:len(b)*2/3], ErrCorrupt, "ends midway (truncated?)"},
		{"a byte changed in a file", tamper(t, b, "The door is blue", "The door is Blue"), ErrCorrupt, memory + " does not match its SHA-256"},
		{"a byte changed in the compressed stream", flipped, ErrCorrupt, ""},
		{"a file SHA256SUMS does not list", rewrite(t, b, func(h *tar.Header, body []byte) []tarEntry {
			if h.Name == memory {
				return []tarEntry{{*h, body}, {tar.Header{Name: "data/agents/default/memory/extra.md", Typeflag: tar.TypeReg, Mode: 0o644}, []byte("extra")}}
			}
			return []tarEntry{{*h, body}}
		}), ErrCorrupt, "data/agents/default/memory/extra.md is not in SHA256SUMS"},
		{"a file SHA256SUMS lists is missing", rewrite(t, b, func(h *tar.Header, body []byte) []tarEntry {
			if h.Name == memory {
				return nil
			}
			return []tarEntry{{*h, body}}
		}), ErrCorrupt, `SHA256SUMS lists "` + memory + `", which the archive does not hold`},
		{"an entry after SHA256SUMS", rewrite(t, b, func(h *tar.Header, body []byte) []tarEntry {
			if h.Name == SumsName {
				return []tarEntry{{*h, body}, {tar.Header{Name: "data/agents/default/memory/late.md", Typeflag: tar.TypeReg, Mode: 0o644}, []byte("late")}}
			}
			return []tarEntry{{*h, body}}
		}), ErrUnsafe, "after SHA256SUMS"},
		{"an unsafe entry", rewrite(t, b, func(h *tar.Header, body []byte) []tarEntry {
			if h.Name == memory {
				return []tarEntry{{*h, body}, {tar.Header{Name: "data/agents/default/memory/../../../evil", Typeflag: tar.TypeReg, Mode: 0o644}, []byte("x")}}
			}
			return []tarEntry{{*h, body}}
		}), ErrUnsafe, "evil"},
		{"not gzip", []byte("hello"), ErrNotBackup, "not gzip-compressed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Verify(context.Background(), bytes.NewReader(tc.archive), VerifyOptions{})
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("Verify: %v; want %v saying %q", err, tc.want, tc.says)
			}
			t.Log(err)
		})
	}
}

// TestVerifyRefusesNewerFormat: Verify reads the manifest as Restore
// does.
func TestVerifyRefusesNewerFormat(t *testing.T) {
	b := hostile(t, Manifest{Format: Format + 1, Owners: "inside"}, nil, true)
	if _, err := Verify(context.Background(), bytes.NewReader(b), VerifyOptions{}); !errors.Is(err, ErrTooNew) {
		t.Errorf("Verify: %v, want ErrTooNew", err)
	}
}

type tarEntry struct {
	h    tar.Header
	body []byte
}

// rewrite copies an archive entry by entry, each through edit, which
// returns the entries to write in its place. A regular file's size is
// its new body's.
func rewrite(t *testing.T, b []byte, edit func(h *tar.Header, body []byte) []tarEntry) []byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range edit(h, body) {
			if e.h.Typeflag == tar.TypeReg {
				e.h.Size = int64(len(e.body))
			}
			if err := tw.WriteHeader(&e.h); err != nil {
				t.Fatal(err)
			}
			if _, err := tw.Write(e.body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	return out.Bytes()
}
