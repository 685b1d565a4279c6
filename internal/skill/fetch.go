package skill

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"den.dev/den/internal/hostfs"
)

// A Bundle is one skill fetched from a source and checked, not yet
// installed: its manifest, files, content hash and the scan's findings.
type Bundle struct {
	Manifest Manifest
	Files    []File
	Hash     string
	Findings []Finding
	Source   Source
	Commit   string // the git commit it came from
}

// Name is the skill's name, from its SKILL.md.
func (b *Bundle) Name() string { return b.Manifest.Name }

// Source kinds.
const (
	SourceFolder  = "folder"
	SourceArchive = "archive"
	SourceGit     = "git"
)

// A Source is where an installed skill came from, enough to fetch it
// again.
type Source struct {
	Kind     string `json:"kind"`           // SourceFolder, SourceArchive or SourceGit
	Location string `json:"location"`       // an absolute path, or a git repository's URL
	Path     string `json:"path,omitempty"` // the skill's folder inside it; "" for its root
	Ref      string `json:"ref,omitempty"`  // the git ref asked for; "" for the default branch
}

// String is the source as a person would type it.
func (s Source) String() string {
	out := s.Location
	if s.Path != "" {
		out += " --path " + s.Path
	}
	if s.Ref != "" {
		out += " --ref " + s.Ref
	}
	return out
}

// FetchOptions say which skills of a source to fetch.
type FetchOptions struct {
	// Path is a folder inside the source: a skill's, or one holding
	// skills.
	Path string
	// Ref is the git branch, tag or commit to fetch; "" for the
	// repository's default branch. Only for git sources.
	Ref string
	// All takes every skill of a source that holds several; without it
	// such a source is ErrAmbiguous.
	All bool
	// Git is the git program; "" finds git on PATH.
	Git    string
	Limits Limits
}

// Fetch reads the skills of src: a folder, a .zip, .tar.gz or .tgz
// archive, or a git repository (an https:// URL, with GitHub's
// https://github.com/OWNER/REPO/tree/REF/PATH form understood, a
// file:// URL, or the path of a bare repository). A source with
// SKILL.md at its root (or at o.Path) is one skill; otherwise its
// skills are the folders below holding a SKILL.md, up to three levels
// down (skills/NAME/SKILL.md, say), and a source with several needs
// o.All. Links, device nodes and paths leaving the source are refused,
// and every skill is parsed, bounded by o.Limits, hashed and scanned.
func Fetch(ctx context.Context, src string, o FetchOptions) ([]*Bundle, error) {
	o.Limits = o.Limits.orDefault()
	s, source, err := openSource(ctx, src, &o)
	if err != nil {
		return nil, err
	}
	defer s.close()
	root, err := cleanRel(o.Path)
	if err != nil {
		return nil, fmt.Errorf("skill: --path %q %w: %v", o.Path, ErrUnsafe, err)
	}
	roots, err := findSkills(s, root)
	if err != nil {
		return nil, fmt.Errorf("skill: %s: %w", src, err)
	}
	switch {
	case len(roots) == 0:
		where := src
		if root != "" {
			where += " at " + root
		}
		return nil, fmt.Errorf("skill: %s %w: no %s there or in the folders below", where, ErrNotFound, ManifestFile)
	case len(roots) > 1 && !o.All:
		return nil, fmt.Errorf("skill: %s %w (%s): name one with --path, or take them all with --all", src, ErrAmbiguous, strings.Join(roots, ", "))
	}
	var out []*Bundle
	names := map[string]string{}
	for _, r := range roots {
		files, err := s.load(r, o.Limits)
		if err != nil {
			return nil, fmt.Errorf("skill: %s: %s: %w", src, show(r), err)
		}
		b, err := bundle(files, o.Limits)
		if err != nil {
			return nil, fmt.Errorf("skill: %s: %s: %w", src, show(r), err)
		}
		if other, dup := names[b.Name()]; dup {
			return nil, fmt.Errorf("skill: %s: %s and %s are both named %s", src, show(other), show(r), b.Name())
		}
		names[b.Name()] = r
		b.Source = source
		b.Source.Path = r
		b.Commit = s.commit()
		out = append(out, b)
	}
	return out, nil
}

// show names a skill's folder inside its source.
func show(root string) string {
	if root == "" {
		return "the source's root"
	}
	return root
}

// bundle checks a skill's files: a SKILL.md that parses, within
// limits.
func bundle(files []File, lim Limits) (*Bundle, error) {
	i := slices.IndexFunc(files, func(f File) bool { return f.Path == ManifestFile })
	if i < 0 {
		return nil, fmt.Errorf("%w: no %s", ErrNotFound, ManifestFile)
	}
	m, err := Parse(files[i].Data, lim.ManifestSize)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(files, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return &Bundle{Manifest: m, Files: files, Hash: Hash(files), Findings: Scan(files)}, nil
}

// A source is a place skills are fetched from, seen as a tree of
// slash-separated paths.
type source interface {
	// isFile reports whether p is a regular file.
	isFile(p string) bool
	// subdirs lists the folders in p, sorted.
	subdirs(p string) []string
	// load reads the skill whose folder is root: every file beneath
	// it, within lim, refusing links and special files.
	load(root string, lim Limits) ([]File, error)
	// commit is the git commit of the tree, "" for other sources.
	commit() string
	close()
}

// maxListed bounds the entries of a source's folder den looks at when
// searching it for skills.
const maxListed = 1000

// maxSearchDepth is how far below a source's root (or --path) den looks
// for skills.
const maxSearchDepth = 3

// findSkills returns the skill folders at or below root: root itself
// when it holds SKILL.md, else the folders below, up to maxSearchDepth
// down, that hold one (not those inside another skill). Hidden folders
// and node_modules are not searched.
func findSkills(s source, root string) ([]string, error) {
	if s.isFile(path.Join(root, ManifestFile)) {
		return []string{root}, nil
	}
	var out []string
	var search func(dir string, depth int)
	search = func(dir string, depth int) {
		for _, name := range s.subdirs(dir) {
			if strings.HasPrefix(name, ".") || name == "node_modules" {
				continue
			}
			p := path.Join(dir, name)
			if s.isFile(path.Join(p, ManifestFile)) {
				out = append(out, p)
				continue
			}
			if depth < maxSearchDepth {
				search(p, depth+1)
			}
		}
	}
	search(root, 1)
	return out, nil
}

// cleanRel checks p, a slash-separated path inside a source, and
// returns it clean: "" for the root.
func cleanRel(p string) (string, error) {
	p = strings.Trim(p, "/")
	if p == "" || p == "." {
		return "", nil
	}
	if strings.IndexByte(p, 0) >= 0 || strings.Contains(p, "\\") {
		return "", errors.New("it has a NUL byte or a backslash")
	}
	for _, c := range strings.Split(p, "/") {
		if c == ".." {
			return "", errors.New(`it has ".."`)
		}
	}
	return path.Clean(p), nil
}

// openSource opens src for Fetch and says what kind of source it is.
func openSource(ctx context.Context, src string, o *FetchOptions) (source, Source, error) {
	if g, ok, err := parseGitURL(src); ok || err != nil {
		if err != nil {
			return nil, Source{}, err
		}
		if o.Ref == "" {
			o.Ref = g.ref
		}
		if o.Path == "" {
			o.Path = g.path
		}
		s, err := cloneGit(ctx, g.url, o.Ref, o.Git, o.Limits)
		if err != nil {
			return nil, Source{}, err
		}
		return s, Source{Kind: SourceGit, Location: g.url, Ref: o.Ref}, nil
	}
	abs, err := filepath.Abs(src)
	if err != nil {
		return nil, Source{}, fmt.Errorf("skill: %s: %w", src, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, Source{}, fmt.Errorf("skill: %w", err)
	}
	if fi.IsDir() && isBareRepo(abs) {
		s, err := cloneGit(ctx, "file://"+abs, o.Ref, o.Git, o.Limits)
		if err != nil {
			return nil, Source{}, err
		}
		return s, Source{Kind: SourceGit, Location: "file://" + abs, Ref: o.Ref}, nil
	}
	if o.Ref != "" {
		return nil, Source{}, fmt.Errorf("skill: %s is not a git repository: --ref is for git sources", src)
	}
	if fi.IsDir() {
		s, err := openFolder(abs)
		if err != nil {
			return nil, Source{}, err
		}
		return s, Source{Kind: SourceFolder, Location: abs}, nil
	}
	s, err := openArchive(abs, o.Limits)
	if err != nil {
		return nil, Source{}, err
	}
	return s, Source{Kind: SourceArchive, Location: abs}, nil
}

// isBareRepo reports whether dir looks like a bare git repository.
func isBareRepo(dir string) bool {
	for _, p := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Lstat(filepath.Join(dir, p)); err != nil {
			return false
		}
	}
	return true
}

// folderSource is a folder on the host. It is read through hostfs, so
// no link in it is ever followed, though it is the user's own.
type folderSource struct{ d *hostfs.Dir }

func openFolder(dir string) (*folderSource, error) {
	d, err := hostfs.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("skill: %w", err)
	}
	return &folderSource{d: d}, nil
}

func (s *folderSource) isFile(p string) bool {
	e, err := s.d.Lstat(p)
	return err == nil && e.Mode.IsRegular()
}

func (s *folderSource) subdirs(p string) []string {
	d := s.d
	if p != "" {
		sub, err := s.d.Sub(p)
		if err != nil {
			return nil
		}
		defer sub.Close()
		d = sub
	}
	entries, _, err := d.List(maxListed)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.Mode.IsDir() {
			out = append(out, e.Name)
		}
	}
	slices.Sort(out)
	return out
}

func (s *folderSource) load(root string, lim Limits) ([]File, error) {
	d := s.d
	if root != "" {
		sub, err := s.d.Sub(root)
		if err != nil {
			return nil, err
		}
		defer sub.Close()
		d = sub
	}
	// A folder's git metadata is not part of its skill.
	nodes, err := walk(d, lim, func(p string) bool { return p == ".git" })
	if err != nil {
		return nil, err
	}
	if err := irregular(nodes); err != nil {
		return nil, err
	}
	return read(d, nodes, lim)
}

func (s *folderSource) commit() string { return "" }
func (s *folderSource) close()         { s.d.Close() }
