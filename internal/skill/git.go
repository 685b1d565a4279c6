package skill

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// gitURL is a git source: the repository's URL, and the ref and path a
// GitHub tree URL names.
type gitURL struct{ url, ref, path string }

// parseGitURL reads src as a git source. ok is false when src is not a
// URL (a local folder or archive, then); err is set for a URL den does
// not fetch from.
func parseGitURL(src string) (g gitURL, ok bool, err error) {
	scheme, _, found := strings.Cut(src, "://")
	if !found {
		if strings.HasPrefix(src, "git@") {
			return g, true, fmt.Errorf("skill: %s: den fetches git over https, or from file:// URLs and local bare repositories; not over ssh", src)
		}
		return g, false, nil
	}
	switch strings.ToLower(scheme) {
	case "https", "http":
	case "file":
		return gitURL{url: src}, true, nil
	default:
		return g, true, fmt.Errorf("skill: %s: den fetches git over https, or from file:// URLs and local bare repositories; not over %s", src, scheme)
	}
	u, err := url.Parse(src)
	if err != nil {
		return g, true, fmt.Errorf("skill: %s: %w", src, err)
	}
	if u.User != nil {
		return g, true, fmt.Errorf("skill: %s: den fetches without credentials: take the user name out of the URL", src)
	}
	if strings.EqualFold(u.Host, "github.com") {
		// https://github.com/OWNER/REPO/tree/REF/PATH, or blob/REF/PATH/SKILL.md.
		parts := strings.Split(strings.Trim(u.Path, "/"), "/")
		if len(parts) >= 4 && (parts[2] == "tree" || parts[2] == "blob") {
			g = gitURL{url: "https://github.com/" + parts[0] + "/" + parts[1], ref: parts[3], path: strings.Join(parts[4:], "/")}
			if parts[2] == "blob" && path.Base(g.path) == ManifestFile {
				g.path = parentOf(g.path)
			}
			return g, true, nil
		}
	}
	return gitURL{url: src}, true, nil
}

// gitEntry is one entry of a repository's tree.
type gitEntry struct {
	mode string // "100644", "100755", "120000" (a link), "160000" (a submodule)
	oid  string
	size int64
}

// gitSource is one commit of a repository, fetched into a bare
// repository of its own in a temporary folder.
type gitSource struct {
	run     gitRunner
	tmp     string
	rev     string
	entries map[string]gitEntry
	dirs    map[string]map[string]bool
}

// gitRunner runs git on the host as a stranger: no user or system
// configuration, no credentials, no prompts, no hooks, https and
// file:// only, HOME an empty folder of its own, and a time limit.
type gitRunner struct {
	ctx  context.Context
	git  string
	repo string
	env  []string
}

// cloneGit fetches ref (or the default branch) of the repository at
// repoURL, one commit deep, and lists its tree.
func cloneGit(ctx context.Context, repoURL, ref, git string, lim Limits) (*gitSource, error) {
	if git == "" {
		var err error
		if git, err = exec.LookPath("git"); err != nil {
			return nil, fmt.Errorf("skill: installing from git needs git on the host (Debian: apt-get install git): %w", err)
		}
	}
	if strings.HasPrefix(ref, "-") {
		return nil, fmt.Errorf("skill: --ref %q %w: a ref does not start with \"-\"", ref, ErrUnsafe)
	}
	tmp, err := os.MkdirTemp("", "den-skill-git-")
	if err != nil {
		return nil, fmt.Errorf("skill: %w", err)
	}
	s := &gitSource{tmp: tmp}
	ok := false
	defer func() {
		if !ok {
			s.close()
		}
	}()
	home := filepath.Join(tmp, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		return nil, fmt.Errorf("skill: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, lim.GitTimeout)
	defer cancel()
	s.run = gitRunner{ctx: ctx, git: git, repo: filepath.Join(tmp, "repo"), env: gitEnv(home)}
	if _, err := s.run.do(nil, "init", "--quiet", "--bare"); err != nil {
		return nil, err
	}
	want := ref
	if want == "" {
		want = "HEAD"
	}
	if _, err := s.run.do(nil, "fetch", "--quiet", "--depth=1", "--no-tags", "--", repoURL, want); err != nil {
		return nil, fmt.Errorf("skill: fetch %s %s: %w", repoURL, want, err)
	}
	out, err := s.run.do(nil, "rev-parse", "--verify", "--quiet", "FETCH_HEAD^{commit}")
	if err != nil {
		return nil, fmt.Errorf("skill: fetch %s %s: %w", repoURL, want, err)
	}
	s.rev = strings.TrimSpace(string(out))
	if err := s.list(lim); err != nil {
		return nil, err
	}
	// The fetch is done; reads of the tree get a time limit of their own.
	s.run.ctx = context.WithoutCancel(ctx)
	ok = true
	return s, nil
}

// gitEnv is git's whole environment: what it needs to run, proxies
// and certificates, and nothing of the user's.
func gitEnv(home string) []string {
	fail := "/bin/false"
	if p, err := exec.LookPath("false"); err == nil {
		fail = p
	}
	env := []string{
		"HOME=" + home,
		"PATH=" + os.Getenv("PATH"),
		"LC_ALL=C",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=" + fail,
		"SSH_ASKPASS=" + fail,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL=/dev/null",
		"GIT_ATTR_NOSYSTEM=1",
		"GIT_ALLOW_PROTOCOL=https:http:file",
		"GIT_PROTOCOL_FROM_USER=0",
		"GIT_NO_REPLACE_OBJECTS=1",
	}
	for _, k := range []string{"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "SSL_CERT_FILE", "SSL_CERT_DIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// maxGitStderr is how much of git's error output den keeps for a
// message.
const maxGitStderr = 4 << 10

// do runs git with args (after the options that make it a stranger)
// in the repository, with stdin, and returns its output.
func (r gitRunner) do(stdin io.Reader, args ...string) ([]byte, error) {
	full := append([]string{
		"-c", "credential.helper=", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false",
		"-c", "protocol.allow=never", "-c", "protocol.https.allow=always", "-c", "protocol.http.allow=always", "-c", "protocol.file.allow=always",
		"--git-dir=" + r.repo,
	}, args...)
	cmd := exec.CommandContext(r.ctx, r.git, full...)
	cmd.Env = r.env
	cmd.Dir = filepath.Dir(r.repo)
	cmd.Stdin = stdin
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 5 * time.Second
	var stdout bytes.Buffer
	stderr := &capped{max: maxGitStderr}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Run(); err != nil {
		if r.ctx.Err() != nil {
			return nil, fmt.Errorf("git %s: %w", args[0], r.ctx.Err())
		}
		msg := strings.TrimSpace(printable(stderr.String(), maxGitStderr))
		if msg == "" {
			return nil, fmt.Errorf("git %s: %w", args[0], err)
		}
		return nil, fmt.Errorf("git %s: %w: %s", args[0], err, msg)
	}
	return stdout.Bytes(), nil
}

// capped keeps the first max bytes written to it.
type capped struct {
	bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// list reads the fetched commit's tree, at most lim.ArchiveFiles
// entries.
func (s *gitSource) list(lim Limits) error {
	out, err := s.run.do(nil, "ls-tree", "-r", "-z", "-l", "--full-tree", s.rev)
	if err != nil {
		return fmt.Errorf("skill: %w", err)
	}
	s.entries = map[string]gitEntry{}
	s.dirs = map[string]map[string]bool{"": {}}
	for rec := range bytes.SplitSeq(out, []byte{0}) {
		if len(rec) == 0 {
			continue
		}
		if len(s.entries) == lim.ArchiveFiles {
			return fmt.Errorf("skill: repository %w: more than %d files", ErrTooLarge, lim.ArchiveFiles)
		}
		meta, p, ok := bytes.Cut(rec, []byte{'\t'})
		f := strings.Fields(string(meta))
		if !ok || len(f) != 4 {
			return fmt.Errorf("skill: git ls-tree: unexpected line %q", printable(string(rec), 200))
		}
		size, _ := strconv.ParseInt(f[3], 10, 64) // "-" for a submodule
		name := string(p)
		s.entries[name] = gitEntry{mode: f[0], oid: f[2], size: size}
		for child := name; child != ""; child = parentOf(child) {
			parent := parentOf(child)
			if s.dirs[parent] == nil {
				s.dirs[parent] = map[string]bool{}
			}
			if child != name {
				s.dirs[parent][path.Base(child)] = true
			}
		}
	}
	return nil
}

func (s *gitSource) isFile(p string) bool {
	e, ok := s.entries[p]
	return ok && (e.mode == "100644" || e.mode == "100755")
}

func (s *gitSource) subdirs(p string) []string {
	var out []string
	for name := range s.dirs[p] {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// load reads the files beneath root from the repository with one git
// cat-file, after checking them all: a link or a submodule is
// ErrUnsafe, too many files or bytes ErrTooLarge.
func (s *gitSource) load(root string, lim Limits) ([]File, error) {
	var paths []string
	var total int64
	for p, e := range s.entries {
		rel, ok := under(root, p)
		if !ok {
			continue
		}
		switch e.mode {
		case "100644", "100755":
		case "120000":
			return nil, fmt.Errorf("%s %w: a symbolic link", rel, ErrUnsafe)
		case "160000":
			return nil, fmt.Errorf("%s %w: a git submodule, which den does not fetch", rel, ErrUnsafe)
		default:
			return nil, fmt.Errorf("%s %w: git mode %s", rel, ErrUnsafe, e.mode)
		}
		if strings.Count(rel, "/") > lim.Depth {
			return nil, fmt.Errorf("%s %w: folders more than %d deep", rel, ErrTooLarge, lim.Depth)
		}
		if len(paths) == lim.SkillFiles {
			return nil, fmt.Errorf("%w: more than %d files", ErrTooLarge, lim.SkillFiles)
		}
		if total += e.size; total > lim.SkillSize {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, lim.SkillSize)
		}
		paths = append(paths, p)
	}
	slices.Sort(paths)
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString(s.entries[p].oid + "\n")
	}
	ctx, cancel := context.WithTimeout(s.run.ctx, lim.GitTimeout)
	defer cancel()
	r := s.run
	r.ctx = ctx
	out, err := r.do(&in, "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(bytes.NewReader(out))
	files := make([]File, 0, len(paths))
	for _, p := range paths {
		e := s.entries[p]
		header, err := br.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("git cat-file: %w", err)
		}
		f := strings.Fields(header)
		if len(f) != 3 || f[0] != e.oid || f[1] != "blob" || f[2] != strconv.FormatInt(e.size, 10) {
			return nil, fmt.Errorf("git cat-file: unexpected header %q for %s", printable(header, 200), p)
		}
		data := make([]byte, e.size+1) // the content and its "\n"
		if _, err := io.ReadFull(br, data); err != nil {
			return nil, fmt.Errorf("git cat-file: %s: %w", p, err)
		}
		rel, _ := under(root, p)
		files = append(files, File{Path: rel, Exec: e.mode == "100755", Data: data[:e.size]})
	}
	return files, nil
}

func (s *gitSource) commit() string { return s.rev }

func (s *gitSource) close() {
	if s.tmp != "" {
		os.RemoveAll(s.tmp)
	}
}
