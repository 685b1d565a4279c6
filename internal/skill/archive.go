package skill

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
)

// memSource is a source read whole into memory: an unpacked archive.
type memSource struct {
	files map[string]File
	dirs  map[string]map[string]bool // folder → the folders in it
}

func newMemSource() *memSource {
	return &memSource{files: map[string]File{}, dirs: map[string]map[string]bool{"": {}}}
}

// add adds a file, or a folder when f is nil, and the folders above
// it. A path given twice, or as a file and as a folder, is ErrUnsafe.
func (s *memSource) add(p string, f *File) error {
	_, isFile := s.files[p]
	if isFile || f != nil && s.dirs[p] != nil {
		return fmt.Errorf("%s %w: it is in the archive twice", p, ErrUnsafe)
	}
	if f != nil {
		s.files[p] = *f
	} else if s.dirs[p] == nil {
		s.dirs[p] = map[string]bool{}
	}
	for child := p; child != ""; child = parentOf(child) {
		parent := parentOf(child)
		if _, isFile := s.files[parent]; isFile {
			return fmt.Errorf("%s %w: it is in the archive as a file and as a folder", parent, ErrUnsafe)
		}
		if s.dirs[parent] == nil {
			s.dirs[parent] = map[string]bool{}
		}
		if child != p || f == nil {
			s.dirs[parent][path.Base(child)] = true
		}
	}
	return nil
}

func (s *memSource) isFile(p string) bool {
	_, ok := s.files[p]
	return ok
}

func (s *memSource) subdirs(p string) []string {
	var out []string
	for name := range s.dirs[p] {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

func (s *memSource) load(root string, lim Limits) ([]File, error) {
	var out []File
	var total int64
	count := 0
	for p, f := range s.files {
		rel, ok := under(root, p)
		if !ok {
			continue
		}
		if strings.Count(rel, "/") > lim.Depth {
			return nil, fmt.Errorf("%s %w: folders more than %d deep", rel, ErrTooLarge, lim.Depth)
		}
		if count++; count > lim.SkillFiles {
			return nil, fmt.Errorf("%w: more than %d files", ErrTooLarge, lim.SkillFiles)
		}
		if total += int64(len(f.Data)); total > lim.SkillSize {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, lim.SkillSize)
		}
		f.Path = rel
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

func (s *memSource) commit() string { return "" }
func (s *memSource) close()         {}

// under returns p relative to the folder root, and whether it is
// beneath it.
func under(root, p string) (string, bool) {
	if root == "" {
		return p, true
	}
	rel, ok := strings.CutPrefix(p, root+"/")
	return rel, ok
}

// openArchive unpacks the .zip, .tar.gz or .tgz archive at file into
// memory, refusing links, device nodes, paths that are absolute or
// have "..", and more than lim.ArchiveSize bytes or lim.ArchiveFiles
// entries, whatever the archive's headers claim.
func openArchive(file string, lim Limits) (*memSource, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("skill: %w", err)
	}
	defer f.Close()
	magic := make([]byte, 4)
	n, _ := io.ReadFull(f, magic)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("skill: %s: %w", file, err)
	}
	var s *memSource
	switch {
	case n >= 4 && (string(magic) == "PK\x03\x04" || string(magic) == "PK\x05\x06"):
		s, err = unzip(f, lim)
	case n >= 2 && magic[0] == 0x1f && magic[1] == 0x8b:
		s, err = untar(f, lim)
	default:
		return nil, fmt.Errorf("skill: %s is neither a folder, a .zip nor a .tar.gz archive", file)
	}
	if err != nil {
		return nil, fmt.Errorf("skill: %s: %w", file, err)
	}
	return s, nil
}

// budget counts what an archive unpacks to.
type budget struct {
	lim     Limits
	entries int
	bytes   int64
}

func (b *budget) entry() error {
	if b.entries++; b.entries > b.lim.ArchiveFiles {
		return fmt.Errorf("archive %w: more than %d entries", ErrTooLarge, b.lim.ArchiveFiles)
	}
	return nil
}

// read reads r whole, counting it against the archive's bytes.
func (b *budget) read(name string, r io.Reader) ([]byte, error) {
	left := b.lim.ArchiveSize - b.bytes
	data, err := io.ReadAll(io.LimitReader(r, left+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(data)) > left {
		return nil, fmt.Errorf("archive %w: it unpacks to more than %d bytes", ErrTooLarge, b.lim.ArchiveSize)
	}
	b.bytes += int64(len(data))
	return data, nil
}

// entryPath checks an archive entry's name and returns it clean,
// without a leading "./" or a trailing "/".
func entryPath(name string) (string, error) {
	p := strings.TrimPrefix(name, "./")
	switch {
	case strings.HasPrefix(p, "/"):
		return "", fmt.Errorf("%q %w: an absolute path", name, ErrUnsafe)
	case strings.ContainsAny(p, "\\\x00"):
		return "", fmt.Errorf("%q %w: a backslash or a NUL byte in a path", name, ErrUnsafe)
	}
	p = strings.TrimSuffix(p, "/")
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return "", fmt.Errorf("%q %w: a path with \"..\"", name, ErrUnsafe)
		}
	}
	p = path.Clean(p)
	if p == "." {
		return "", nil
	}
	return p, nil
}

func unzip(f *os.File, lim Limits) (*memSource, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	zr, err := zip.NewReader(f, fi.Size())
	if err != nil {
		return nil, err
	}
	s, b := newMemSource(), &budget{lim: lim}
	for _, zf := range zr.File {
		if err := b.entry(); err != nil {
			return nil, err
		}
		p, err := entryPath(zf.Name)
		if err != nil {
			return nil, err
		}
		mode := zf.Mode()
		switch {
		case mode&fs.ModeSymlink != 0:
			return nil, fmt.Errorf("%s %w: a symbolic link", zf.Name, ErrUnsafe)
		case mode.IsDir():
			if p != "" {
				if err := s.add(p, nil); err != nil {
					return nil, err
				}
			}
			continue
		case !mode.IsRegular():
			return nil, fmt.Errorf("%s %w: %s, not a file", zf.Name, ErrUnsafe, mode.Type())
		}
		if p == "" {
			return nil, fmt.Errorf("%q %w: a file without a name", zf.Name, ErrUnsafe)
		}
		r, err := zf.Open()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", zf.Name, err)
		}
		data, err := b.read(zf.Name, r)
		r.Close()
		if err != nil {
			return nil, err
		}
		if err := s.add(p, &File{Path: p, Exec: mode&0o111 != 0, Data: data}); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func untar(f *os.File, lim Limits) (*memSource, error) {
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	s, b := newMemSource(), &budget{lim: lim}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return s, nil
		}
		if err != nil {
			return nil, err
		}
		if err := b.entry(); err != nil {
			return nil, err
		}
		p, err := entryPath(h.Name)
		if err != nil {
			return nil, err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if p != "" {
				if err := s.add(p, nil); err != nil {
					return nil, err
				}
			}
		case tar.TypeReg: // Next reports the old TypeRegA as TypeReg
			if p == "" {
				return nil, fmt.Errorf("%q %w: a file without a name", h.Name, ErrUnsafe)
			}
			data, err := b.read(h.Name, tr)
			if err != nil {
				return nil, err
			}
			if err := s.add(p, &File{Path: p, Exec: h.Mode&0o111 != 0, Data: data}); err != nil {
				return nil, err
			}
		case tar.TypeSymlink:
			return nil, fmt.Errorf("%s %w: a symbolic link", h.Name, ErrUnsafe)
		case tar.TypeLink:
			return nil, fmt.Errorf("%s %w: a hard link", h.Name, ErrUnsafe)
		default:
			return nil, fmt.Errorf("%s %w: an entry of type %q, not a file or a folder", h.Name, ErrUnsafe, h.Typeflag)
		}
	}
}
