package skill

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// entry is one entry of an archive a test makes.
type entry struct {
	name string
	body string
	mode int64 // 0: 0644
	typ  byte  // tar type; tar.TypeReg by default. For zip, TypeSymlink makes a link.
	link string
}

// filesOf turns a skill folder into archive entries beneath prefix.
func filesOf(t *testing.T, dir, prefix string) []entry {
	t.Helper()
	var out []entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		out = append(out, entry{name: path.Join(prefix, filepath.ToSlash(rel)), body: string(data), mode: int64(fi.Mode().Perm())})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeZip(t *testing.T, entries []entry) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, e := range entries {
		h := &zip.FileHeader{Name: e.name, Method: zip.Deflate}
		mode := fs.FileMode(e.mode)
		if mode == 0 {
			mode = 0o644
		}
		if e.typ == tar.TypeSymlink {
			mode |= fs.ModeSymlink
			e.body = e.link
		}
		if e.typ == tar.TypeDir {
			mode |= fs.ModeDir
		}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(e.body))
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "skill.zip")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func writeTarGz(t *testing.T, entries []entry) string {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		mode := e.mode
		if mode == 0 {
			mode = 0o644
		}
		h := &tar.Header{Name: e.name, Typeflag: typ, Mode: mode, Linkname: e.link, ModTime: now}
		if typ == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(e.body))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	zw.Close()
	p := filepath.Join(t.TempDir(), "skill.tar.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFetchArchives checks that a skill fetched from a zip or a tar.gz,
// at the archive's root or one folder down, is the one in the folder.
func TestFetchArchives(t *testing.T) {
	dir := "testdata/public/anthropics/webapp-testing"
	want := fetchOne(t, dir, FetchOptions{})
	for _, tt := range []struct {
		name string
		file string
	}{
		{"zip at the root", writeZip(t, filesOf(t, dir, ""))},
		{"zip one folder down", writeZip(t, filesOf(t, dir, "webapp-testing-main"))},
		{"tar.gz at the root", writeTarGz(t, filesOf(t, dir, "./"))},
		{"tar.gz one folder down", writeTarGz(t, append([]entry{{name: "pkg/", typ: tar.TypeDir, mode: 0o755}}, filesOf(t, dir, "pkg")...))},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := fetchOne(t, tt.file, FetchOptions{})
			if got.Hash != want.Hash || got.Name() != "webapp-testing" || got.Source.Kind != SourceArchive {
				t.Errorf("hash %s (want %s), name %s, source %+v", got.Hash, want.Hash, got.Name(), got.Source)
			}
			if diff := Compare(want.Files, got.Files); len(diff) > 0 {
				t.Errorf("files differ: %v", diff)
			}
		})
	}
}

// TestFetchSeveral checks a source holding several skills: one named
// with Path, all with All, and neither an error that lists them.
func TestFetchSeveral(t *testing.T) {
	var entries []entry
	for _, name := range []string{"webapp-testing", "brand-guidelines"} {
		entries = append(entries, filesOf(t, "testdata/public/anthropics/"+name, "skills/"+name)...)
	}
	entries = append(entries, entry{name: "README.md", body: "# two skills\n"})
	for _, file := range []string{writeZip(t, entries), writeTarGz(t, entries)} {
		_, err := Fetch(t.Context(), file, FetchOptions{})
		if !errors.Is(err, ErrAmbiguous) || !strings.Contains(err.Error(), "skills/brand-guidelines, skills/webapp-testing") {
			t.Errorf("Fetch without --path or --all = %v", err)
		}
		b := fetchOne(t, file, FetchOptions{Path: "skills/webapp-testing"})
		if b.Name() != "webapp-testing" || b.Source.Path != "skills/webapp-testing" {
			t.Errorf("--path: %s %+v", b.Name(), b.Source)
		}
		all, err := Fetch(t.Context(), file, FetchOptions{All: true})
		if err != nil || len(all) != 2 {
			t.Errorf("--all: %d, %v", len(all), err)
		}
		if _, err := Fetch(t.Context(), file, FetchOptions{Path: "skills/nope"}); !errors.Is(err, ErrNotFound) {
			t.Errorf("--path to nothing = %v", err)
		}
		if _, err := Fetch(t.Context(), file, FetchOptions{Path: "../x"}); !errors.Is(err, ErrUnsafe) {
			t.Errorf("--path with .. = %v", err)
		}
		if _, err := Fetch(t.Context(), file, FetchOptions{Ref: "main"}); err == nil {
			t.Error("--ref for an archive is accepted")
		}
	}
}

// TestArchiveRefused checks archives den must not unpack.
func TestArchiveRefused(t *testing.T) {
	good := []entry{{name: "SKILL.md", body: skillMD("evil", "x")}}
	lim := Limits{ArchiveSize: 1 << 20, ArchiveFiles: 50}
	for _, tt := range []struct {
		name    string
		entries []entry
		zipOnly bool
		tarOnly bool
		want    error
		says    string
	}{
		{name: "a path with ..", entries: append(good, entry{name: "../evil", body: "x"}), want: ErrUnsafe, says: `".."`},
		{name: "a deeper path with ..", entries: append(good, entry{name: "a/../../evil", body: "x"}), want: ErrUnsafe, says: `".."`},
		{name: "an absolute path", entries: append(good, entry{name: "/etc/evil", body: "x"}), want: ErrUnsafe, says: "absolute"},
		{name: "a backslash", entries: append(good, entry{name: "..\\evil", body: "x"}), want: ErrUnsafe, says: "backslash"},
		{name: "a symbolic link", entries: append(good, entry{name: "link", typ: tar.TypeSymlink, link: "/etc/passwd"}), want: ErrUnsafe, says: "symbolic link"},
		{name: "a hard link", entries: append(good, entry{name: "hard", typ: tar.TypeLink, link: "/etc/passwd"}), tarOnly: true, want: ErrUnsafe, says: "hard link"},
		{name: "a device", entries: append(good, entry{name: "null", typ: tar.TypeChar}), tarOnly: true, want: ErrUnsafe, says: "not a file"},
		{name: "a named pipe", entries: append(good, entry{name: "fifo", typ: tar.TypeFifo}), tarOnly: true, want: ErrUnsafe, says: "not a file"},
		{name: "a name twice", entries: append(good, good...), want: ErrUnsafe, says: "twice"},
		{name: "a file and a folder", entries: append(good, entry{name: "a", body: "x"}, entry{name: "a/b", body: "y"}), want: ErrUnsafe, says: "as a file and as a folder"},
		{name: "a bomb", entries: append(good, entry{name: "zeros", body: strings.Repeat("\x00", 2<<20)}), want: ErrTooLarge, says: "more than 1048576 bytes"},
		{name: "too many entries", entries: manyEntries(60), want: ErrTooLarge, says: "more than 50 entries"},
	} {
		for _, kind := range []string{"zip", "tar.gz"} {
			if tt.zipOnly && kind != "zip" || tt.tarOnly && kind != "tar.gz" {
				continue
			}
			t.Run(tt.name+" in a "+kind, func(t *testing.T) {
				file := writeTarGz(t, tt.entries)
				if kind == "zip" {
					file = writeZip(t, tt.entries)
				}
				_, err := Fetch(t.Context(), file, FetchOptions{Limits: lim, All: true})
				if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.says) {
					t.Errorf("Fetch = %v, want %v saying %q", err, tt.want, tt.says)
				}
			})
		}
	}
	// The bomb is small: the limit applies to what it unpacks to.
	bomb := writeZip(t, append(good, entry{name: "zeros", body: strings.Repeat("\x00", 2<<20)}))
	if fi, _ := os.Stat(bomb); fi.Size() > 64<<10 {
		t.Errorf("the bomb is %d bytes", fi.Size())
	}
	if _, err := Fetch(t.Context(), filepath.Join(t.TempDir(), "none.zip"), FetchOptions{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Fetch of a missing file = %v", err)
	}
	notArchive := filepath.Join(t.TempDir(), "a.txt")
	os.WriteFile(notArchive, []byte("hello"), 0o644)
	if _, err := Fetch(t.Context(), notArchive, FetchOptions{}); err == nil || !strings.Contains(err.Error(), "neither a folder") {
		t.Errorf("Fetch of a text file = %v", err)
	}
}

func manyEntries(n int) []entry {
	out := []entry{{name: "SKILL.md", body: skillMD("many", "x")}}
	for i := range n {
		out = append(out, entry{name: "f/" + strings.Repeat("x", i+1), body: "x"})
	}
	return out
}

// TestFetchFolderRefused checks a folder source with a link in the
// skill, and the skill limits.
func TestFetchFolderRefused(t *testing.T) {
	dir := simpleSkill(t, "tool")
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "references", "passwd")); err != nil {
		t.Fatal(err)
	}
	if _, err := Fetch(t.Context(), dir, FetchOptions{}); !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "references/passwd") {
		t.Errorf("Fetch with a link = %v", err)
	}
	dir = simpleSkill(t, "tool")
	if _, err := Fetch(t.Context(), dir, FetchOptions{Limits: Limits{SkillSize: 100}}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Fetch past SkillSize = %v", err)
	}
	if _, err := Fetch(t.Context(), dir, FetchOptions{Limits: Limits{SkillFiles: 3}}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Fetch past SkillFiles = %v", err)
	}
	// A folder's .git is not part of its skill.
	writeFiles(t, dir, map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".git/config": "[core]\n"})
	if b := fetchOne(t, dir, FetchOptions{}); len(b.Files) != 3 {
		t.Errorf("files of a folder with .git: %d", len(b.Files))
	}
}

// gitRepo makes a bare repository with two commits on branch main: the
// first with skills/alpha and skills/beta, the second changing alpha.
// It returns the repository and the two commits.
func gitRepo(t *testing.T) (repo, first, second string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("these tests need git (Debian: apt-get install git)")
	}
	root := t.TempDir()
	repo, work := filepath.Join(root, "skills.git"), filepath.Join(root, "work")
	env := append(gitEnv(t.TempDir()), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org")
	git := func(dir string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git(root, "init", "--quiet", "--bare", "--initial-branch=main", repo)
	git(root, "init", "--quiet", "--initial-branch=main", work)
	writeFiles(t, work, map[string]string{
		"README.md":                      "# Skills\n",
		"skills/alpha/SKILL.md":          skillMD("alpha", "First version."),
		"skills/alpha/scripts/run.sh":    "#!/bin/sh\necho one\n",
		"skills/beta/SKILL.md":           skillMD("beta", "Beta."),
		"skills/beta/references/note.md": "note\n",
	})
	git(work, "add", ".")
	git(work, "commit", "--quiet", "-m", "one")
	first = git(work, "rev-parse", "HEAD")
	writeFiles(t, work, map[string]string{
		"skills/alpha/SKILL.md":       skillMD("alpha", "Second version."),
		"skills/alpha/scripts/run.sh": "#!/bin/sh\necho two\n",
		"skills/alpha/new.md":         "new\n",
	})
	git(work, "add", ".")
	git(work, "commit", "--quiet", "-m", "two")
	second = git(work, "rev-parse", "HEAD")
	git(work, "push", "--quiet", repo, "main")
	return repo, first, second
}

// TestFetchGit fetches from a local repository as from a remote one:
// by file:// URL and by path, a skill named by --path, at a branch or
// a commit, and all of them.
func TestFetchGit(t *testing.T) {
	repo, first, second := gitRepo(t)
	url := "file://" + repo

	b := fetchOne(t, url, FetchOptions{Path: "skills/alpha", Ref: "main"})
	if b.Name() != "alpha" || b.Commit != second || b.Manifest.Description != "Second version." ||
		b.Source != (Source{Kind: SourceGit, Location: url, Path: "skills/alpha", Ref: "main"}) {
		t.Errorf("at main: %s %s %q %+v", b.Name(), b.Commit, b.Manifest.Description, b.Source)
	}
	var files []string
	for _, f := range b.Files {
		files = append(files, f.Path)
		if f.Path == "scripts/run.sh" && (!f.Exec || string(f.Data) != "#!/bin/sh\necho two\n") {
			t.Errorf("run.sh: exec %v, %q", f.Exec, f.Data)
		}
	}
	if diff := cmp.Diff([]string{"SKILL.md", "new.md", "scripts/run.sh"}, files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}

	old := fetchOne(t, url, FetchOptions{Path: "skills/alpha", Ref: first})
	if old.Commit != first || old.Manifest.Description != "First version." || len(old.Files) != 2 {
		t.Errorf("at %s: %s %q %d files", first, old.Commit, old.Manifest.Description, len(old.Files))
	}

	// The default branch, by the repository's path.
	if b := fetchOne(t, repo, FetchOptions{Path: "skills/beta"}); b.Name() != "beta" || b.Commit != second || b.Source.Location != url {
		t.Errorf("by path: %s %s %+v", b.Name(), b.Commit, b.Source)
	}
	all, err := Fetch(t.Context(), url, FetchOptions{All: true})
	if err != nil || len(all) != 2 || all[0].Name() != "alpha" || all[1].Source.Path != "skills/beta" {
		t.Errorf("--all: %v %v", all, err)
	}
	if _, err := Fetch(t.Context(), url, FetchOptions{}); !errors.Is(err, ErrAmbiguous) {
		t.Errorf("no --path = %v", err)
	}
	if _, err := Fetch(t.Context(), url, FetchOptions{Ref: "nope"}); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("a missing ref = %v", err)
	}
	if _, err := Fetch(t.Context(), url, FetchOptions{Ref: "--upload-pack=touch /tmp/pwned"}); !errors.Is(err, ErrUnsafe) {
		t.Errorf("a ref like an option = %v", err)
	}
}

// TestFetchGitLink checks that a link committed in a skill is refused.
func TestFetchGitLink(t *testing.T) {
	root := t.TempDir()
	env := append(gitEnv(t.TempDir()), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.org", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.org")
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = root, env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	run("init", "--quiet", "--initial-branch=main", ".")
	writeFiles(t, root, map[string]string{"SKILL.md": skillMD("linked", "x")})
	if err := os.Symlink("/etc/passwd", filepath.Join(root, "passwd")); err != nil {
		t.Fatal(err)
	}
	run("add", ".")
	run("commit", "--quiet", "-m", "link")
	_, err := Fetch(t.Context(), "file://"+root, FetchOptions{})
	if !errors.Is(err, ErrUnsafe) || !strings.Contains(err.Error(), "passwd") {
		t.Errorf("Fetch of a skill with a link = %v", err)
	}
}

func TestParseGitURL(t *testing.T) {
	for _, tt := range []struct {
		in      string
		want    gitURL
		notGit  bool
		refused bool
	}{
		{in: "https://github.com/anthropics/skills", want: gitURL{url: "https://github.com/anthropics/skills"}},
		{in: "https://github.com/anthropics/skills/tree/main/skills/skill-creator", want: gitURL{url: "https://github.com/anthropics/skills", ref: "main", path: "skills/skill-creator"}},
		{in: "https://github.com/anthropics/skills/blob/v1/skills/pdf/SKILL.md", want: gitURL{url: "https://github.com/anthropics/skills", ref: "v1", path: "skills/pdf"}},
		{in: "https://github.com/o/r/tree/main", want: gitURL{url: "https://github.com/o/r", ref: "main"}},
		{in: "https://git.example.org/o/r.git", want: gitURL{url: "https://git.example.org/o/r.git"}},
		{in: "file:///srv/skills.git", want: gitURL{url: "file:///srv/skills.git"}},
		{in: "./skills", notGit: true},
		{in: "/home/me/skill.zip", notGit: true},
		{in: "git@github.com:o/r.git", refused: true},
		{in: "ssh://git@github.com/o/r", refused: true},
		{in: "ext::sh -c touch% /tmp/pwned", notGit: true},
		{in: "https://user:secret@github.com/o/r", refused: true},
	} {
		got, ok, err := parseGitURL(tt.in)
		switch {
		case tt.refused:
			if err == nil {
				t.Errorf("%s: accepted as %+v", tt.in, got)
			}
		case tt.notGit:
			if ok || err != nil {
				t.Errorf("%s: taken for git: %+v %v", tt.in, got, err)
			}
		case err != nil || !ok || got != tt.want:
			t.Errorf("%s: %+v %v %v, want %+v", tt.in, got, ok, err, tt.want)
		}
	}
}

// TestPublicSkills loads every skill of the published collections in
// testdata/public: each parses, and the scan finds nothing of high
// severity in any.
func TestPublicSkills(t *testing.T) {
	n := 0
	for _, collection := range []string{"testdata/public/anthropics", "testdata/public/minisskills"} {
		bundles, err := Fetch(t.Context(), collection, FetchOptions{All: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bundles {
			n++
			for _, f := range b.Findings {
				if f.Severity >= High {
					t.Errorf("%s: %s", b.Name(), f)
				}
			}
			if b.Manifest.Description == "" {
				t.Errorf("%s: no description", b.Name())
			}
		}
	}
	entries, err := os.ReadDir("testdata/public/anthropics")
	if err != nil {
		t.Fatal(err)
	}
	more, err := os.ReadDir("testdata/public/minisskills")
	if err != nil {
		t.Fatal(err)
	}
	folders := 0
	for _, e := range append(entries, more...) {
		if e.IsDir() {
			folders++
		}
	}
	if n != folders || n < 20 {
		t.Errorf("loaded %d skills of %d folders", n, folders)
	}
}
