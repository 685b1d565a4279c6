package backup

import (
	"archive/tar"
	"bufio"
	"compress/flate"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
)

// reader reads an archive's entries after its manifest and checks each
// the way restore must before it writes anything: names in den's
// layout, types den restores there, a tree's entries together, each
// file once, and at the end every file against SHA256SUMS and nothing
// after it. Restore writes the entries it hands on; Verify only reads
// them. Both see the same checks, so an archive Verify accepts is one
// Restore accepts (but for the data dir it writes into).
type reader struct {
	a     *archive
	m     Manifest
	sums  map[string]string // the SHA-256 of each file read, by its name in the archive
	order []string          // those names, as they came
	tree  string            // the tree whose entries are being read
	done  map[string]bool   // the trees whose entries are over
	files int               // regular files read, the manifest left out
	bytes int64             // their content
}

// entry is one entry that passed the checks.
type entry struct {
	// h is the entry's header, with TypeRegA made TypeReg and Mode
	// holding only permission bits.
	h *tar.Header
	// config is a config file's name (config.toml, mcp.json, env), or
	// "" for an entry of the data dir.
	config string
	at     place  // where in the data dir it goes
	link   string // a hard link's target, relative to its tree
	// body is a regular file's content, h.Size bytes. What a sink leaves
	// unread is read (and checked) after it.
	body io.Reader
}

func newReader(a *archive, m Manifest) *reader {
	return &reader{a: a, m: m, sums: map[string]string{ManifestName: a.manifestSum}, order: []string{ManifestName}, done: map[string]bool{}}
}

// each reads every entry up to SHA256SUMS, checks it and hands it to
// put; then it checks every file read against SHA256SUMS, and that the
// archive ends there. tick, when set, is called after each entry.
func (rd *reader) each(ctx context.Context, put func(*entry) error, tick func()) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := rd.a.next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("%w: it ends without %s (truncated?)", ErrNotBackup, SumsName)
		}
		if err != nil {
			return err
		}
		if h.Name == SumsName {
			if err := rd.verify(h); err != nil {
				return err
			}
			break
		}
		name := h.Name
		if err := rd.entry(h, put); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if tick != nil {
			tick()
		}
	}
	h, err := rd.a.next()
	switch {
	case err == nil:
		return fmt.Errorf("%w: %q after %s", ErrUnsafe, h.Name, SumsName)
	case !errors.Is(err, io.EOF):
		return err
	}
	return rd.a.end()
}

// entry checks one entry, hands it to put, and reads the rest of a
// file's content into its SHA-256.
func (rd *reader) entry(h *tar.Header, put func(*entry) error) error {
	if h.Typeflag == tar.TypeRegA {
		h.Typeflag = tar.TypeReg
	}
	h.Mode &= 0o7777
	name := h.Name // put may change h
	e := &entry{h: h}
	if name, ok := strings.CutPrefix(h.Name, configDir); ok {
		if err := rd.checkConfig(name, h); err != nil {
			return err
		}
		e.config = name
	} else if err := rd.checkData(e); err != nil {
		return err
	}
	if err := checkXattrs(h.PAXRecords); err != nil {
		return err
	}
	if h.Typeflag != tar.TypeReg {
		return put(e)
	}
	size := h.Size
	body := &hashReader{r: rd.a.tr, sum: sha256.New()}
	e.body = body
	if err := put(e); err != nil {
		return err
	}
	if _, err := io.Copy(io.Discard, body); err != nil {
		return err
	}
	if body.n != size {
		return fmt.Errorf("%w: %d bytes of %d", ErrCorrupt, body.n, size)
	}
	rd.sums[name] = hex.EncodeToString(body.sum.Sum(nil))
	rd.order = append(rd.order, name)
	rd.files++
	rd.bytes += body.n
	return nil
}

// checkConfig refuses a config file the manifest does not name, one
// that is not a file or is over 16 MiB, and one met twice.
func (rd *reader) checkConfig(name string, h *tar.Header) error {
	listed := false
	for _, c := range rd.m.Config {
		listed = listed || c == name
	}
	if !listed || h.Typeflag != tar.TypeReg || h.Size > 16<<20 {
		return fmt.Errorf("%w: not a config file the manifest names", ErrUnsafe)
	}
	if _, dup := rd.sums[h.Name]; dup {
		return fmt.Errorf("%w: the archive holds it twice", ErrUnsafe)
	}
	return nil
}

// checkData finds where an entry of the data dir goes, and refuses
// what den does not restore there: see classify and allowed; a file
// met twice; a hard link to another tree; a tree whose entries are not
// together (met again after another tree's).
func (rd *reader) checkData(e *entry) error {
	h := e.h
	p, err := classify(h.Name)
	if err != nil {
		return err
	}
	if !allowed(p.kind, h.Typeflag) || (p.only != 0 && h.Typeflag != p.only) {
		return fmt.Errorf("%w: %s is not something den restores there", ErrUnsafe, typeName(h.Typeflag))
	}
	if _, dup := rd.sums[h.Name]; dup && h.Typeflag == tar.TypeReg {
		return fmt.Errorf("%w: the archive holds it twice", ErrUnsafe)
	}
	if h.Typeflag == tar.TypeLink {
		t, err := classify(h.Linkname)
		if err != nil || t.tree != p.tree || p.tree == "" {
			return fmt.Errorf("%w: a hard link to %q, outside its tree", ErrUnsafe, h.Linkname)
		}
		e.link = t.rel
	}
	if p.tree != "" && p.tree != rd.tree {
		if rd.tree != "" {
			rd.done[rd.tree] = true
		}
		if rd.done[p.tree] {
			return fmt.Errorf("%w: the entries of %s are not together", ErrUnsafe, p.tree)
		}
		rd.tree = p.tree
	}
	e.at = p
	return nil
}

// verify reads SHA256SUMS and checks every file read against it: each
// listed file was read and matches, and each file read is listed.
func (rd *reader) verify(h *tar.Header) error {
	if h.Typeflag != tar.TypeReg && h.Typeflag != tar.TypeRegA {
		return fmt.Errorf("%w: %s is not a file", ErrNotBackup, SumsName)
	}
	listed := map[string]bool{}
	sc := bufio.NewScanner(io.LimitReader(&hashReader{r: rd.a.tr}, h.Size))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		hexsum, name, err := parseSumLine(sc.Text())
		if err != nil {
			return err
		}
		got, ok := rd.sums[name]
		if !ok {
			return fmt.Errorf("%w: %s lists %q, which the archive does not hold", ErrCorrupt, SumsName, name)
		}
		if got != hexsum {
			return fmt.Errorf("%w: %s does not match its SHA-256", ErrCorrupt, name)
		}
		listed[name] = true
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", SumsName, err)
	}
	for _, name := range rd.order {
		if !listed[name] {
			return fmt.Errorf("%w: %s is not in %s", ErrCorrupt, name, SumsName)
		}
	}
	return nil
}

// hashReader reads a file's content from the archive into its SHA-256
// (when sum is set), and says what a read error means for the archive.
type hashReader struct {
	r   io.Reader
	sum hash.Hash
	n   int64
}

func (h *hashReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if h.sum != nil {
		h.sum.Write(p[:n])
	}
	h.n += int64(n)
	if err != nil && err != io.EOF {
		err = readErr(err)
	}
	return n, err
}

// readErr says what an error reading the archive means: ErrCorrupt,
// saying whether it ends early or its compressed stream is damaged.
func readErr(err error) error {
	var flateErr flate.CorruptInputError
	switch {
	case errors.Is(err, ErrCorrupt), errors.Is(err, ErrNotBackup):
		return err
	case errors.Is(err, io.ErrUnexpectedEOF):
		return fmt.Errorf("%w: the archive ends midway (truncated?)", ErrCorrupt)
	case errors.Is(err, gzip.ErrChecksum), errors.Is(err, gzip.ErrHeader), errors.As(err, &flateErr):
		return fmt.Errorf("%w: its compressed stream is damaged (%v)", ErrCorrupt, err)
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, err)
}
