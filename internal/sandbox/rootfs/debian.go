package rootfs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Ubuntu archives used when Options.UbuntuMirror is empty.
const (
	defaultUbuntuMirror = "http://archive.ubuntu.com/ubuntu"
	defaultUbuntuPorts  = "http://ports.ubuntu.com/ubuntu-ports"
)

// Host files the default Debian mirror is read from.
const (
	hostSourcesList = "/etc/apt/sources.list"
	hostSourcesDir  = "/etc/apt/sources.list.d"
	hostOSRelease   = "/etc/os-release"
)

// Archive keyrings debootstrap and mmdebstrap verify the Release file with.
const (
	debianKeyring = "/usr/share/keyrings/debian-archive-keyring.gpg"
	ubuntuKeyring = "/usr/share/keyrings/ubuntu-archive-keyring.gpg"
)

const debootstrapScripts = "/usr/share/debootstrap/scripts"

// dpkgArch maps a Go architecture to Debian's name for it.
func dpkgArch(goarch string) (string, error) {
	arch, ok := map[string]string{
		"amd64":   "amd64",
		"arm64":   "arm64",
		"arm":     "armhf",
		"386":     "i386",
		"riscv64": "riscv64",
		"ppc64le": "ppc64el",
		"s390x":   "s390x",
		"loong64": "loong64",
	}[goarch]
	if !ok {
		return "", fmt.Errorf("rootfs: debian: no Debian architecture for %s", goarch)
	}
	return arch, nil
}

// debian provisions a Debian or Ubuntu base: from the cached base tarball
// when there is one, otherwise with debootstrap (as root) or mmdebstrap.
func (p *provisioner) debian(ctx context.Context, src Source) (Info, error) {
	mirror, err := p.mirror(src)
	if err != nil {
		return Info{}, err
	}
	info := Info{Source: src.String(), Mirror: mirror}
	cache := p.baseCache(src)
	if cache != "" {
		if _, err := os.Stat(cache); err == nil {
			p.rep.say(StageExtract, "using cached base "+cache)
			err := extractFile(ctx, cache, p.tmp, p.rep)
			if err == nil || !errors.Is(err, ErrCorrupt) || ctx.Err() != nil {
				return info, err
			}
			p.rep.say(StageExtract, fmt.Sprintf("cached base is unusable (%v); bootstrapping again", err))
			os.Remove(cache)
			if err := resetDir(p.tmp); err != nil {
				return Info{}, fmt.Errorf("rootfs: bootstrap: %w", err)
			}
		}
	}
	if err := p.bootstrap(ctx, src, mirror, cache); err != nil {
		return Info{}, err
	}
	return info, nil
}

// mirror returns the archive URL for a Debian or Ubuntu source.
func (p *provisioner) mirror(src Source) (string, error) {
	return defaultMirror(src.Kind, p.opts, src.suite())
}

// defaultMirror applies Options, then the host's apt sources (Debian) or
// the official archive (Ubuntu).
func defaultMirror(kind Kind, opts Options, suite string) (string, error) {
	switch kind {
	case Debian:
		if opts.DebianMirror != "" {
			return strings.TrimRight(opts.DebianMirror, "/"), nil
		}
		return hostDebianMirror(suite)
	case Ubuntu:
		if opts.UbuntuMirror != "" {
			return strings.TrimRight(opts.UbuntuMirror, "/"), nil
		}
		if runtime.GOARCH == "amd64" || runtime.GOARCH == "386" {
			return defaultUbuntuMirror, nil
		}
		return defaultUbuntuPorts, nil
	}
	return "", fmt.Errorf("rootfs: no mirror for %s", kind)
}

// baseCache is where the pristine base for src is cached ("" without a
// cache directory).
func (p *provisioner) baseCache(src Source) string {
	arch, err := dpkgArch(runtime.GOARCH)
	if p.opts.CacheDir == "" || err != nil {
		return ""
	}
	return filepath.Join(p.opts.CacheDir, fmt.Sprintf("%s-%s-%s.tar", src.Kind, src.suite(), arch))
}

func (p *provisioner) haveBase(src Source) bool {
	cache := p.baseCache(src)
	if cache == "" {
		return false
	}
	_, err := os.Stat(cache)
	return err == nil
}

// haveBootstrapper reports whether a Debian base can be built here.
func haveBootstrapper() bool {
	if _, err := exec.LookPath("mmdebstrap"); err == nil {
		return true
	}
	_, err := lookSbin("debootstrap")
	return err == nil && os.Geteuid() == 0
}

// lookSbin finds a tool that may live in an sbin folder missing from PATH.
func lookSbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/sbin", "/usr/local/sbin"} {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s not found", ErrToolMissing, name)
}

// bootstrap builds the base into p.tmp and caches it as a tarball.
func (p *provisioner) bootstrap(ctx context.Context, src Source, mirror, cache string) error {
	b := bootstrapJob{src: src, suite: src.suite(), mirror: mirror, cache: cache, keyring: debianKeyring}
	var err error
	if b.arch, err = dpkgArch(runtime.GOARCH); err != nil {
		return err
	}
	if src.Kind == Ubuntu {
		b.keyring = ubuntuKeyring
	}
	if _, err := os.Stat(b.keyring); err != nil {
		pkg := strings.TrimSuffix(filepath.Base(b.keyring), ".gpg")
		return fmt.Errorf("rootfs: bootstrap %s: %w: archive keyring %s (install the %s package)", src, ErrToolMissing, b.keyring, pkg)
	}
	if bin, err := lookSbin("debootstrap"); err == nil && os.Geteuid() == 0 {
		return p.debootstrap(ctx, bin, b)
	}
	if bin, err := exec.LookPath("mmdebstrap"); err == nil {
		return p.mmdebstrap(ctx, bin, b)
	}
	if os.Geteuid() == 0 {
		return fmt.Errorf("rootfs: bootstrap %s: %w: install debootstrap (or mmdebstrap), or import a rootfs with tar:PATH", src, ErrToolMissing)
	}
	return fmt.Errorf("rootfs: bootstrap %s: %w: debootstrap needs root; install mmdebstrap and give your user "+
		"subordinate ids in /etc/subuid and /etc/subgid, or import a rootfs with tar:PATH", src, ErrToolMissing)
}

// bootstrapJob is what to bootstrap and where to cache it.
type bootstrapJob struct {
	src                 Source
	suite, arch, mirror string
	keyring, cache      string
}

// debootstrap bootstraps straight into p.tmp (root only), then stores the
// pristine tree as the cached base. Failing to cache is only a warning.
func (p *provisioner) debootstrap(ctx context.Context, bin string, b bootstrapJob) error {
	args := []string{"--variant=minbase", "--arch=" + b.arch, "--keyring=" + b.keyring, b.suite, p.tmp, b.mirror}
	if _, err := os.Stat(filepath.Join(debootstrapScripts, b.suite)); err != nil && b.src.Kind == Ubuntu {
		// Older debootstrap lacks scripts for new Ubuntu suites; they all
		// share gutsy's.
		args = append(args, filepath.Join(debootstrapScripts, "gutsy"))
	}
	p.rep.say(StageBootstrap, fmt.Sprintf("debootstrap %s %s from %s", b.src.Kind, b.suite, b.mirror))
	if err := p.run(ctx, bin, args); err != nil {
		return err
	}
	if b.cache == "" {
		return nil
	}
	p.rep.say(StageBootstrap, "caching base as "+b.cache)
	err := os.MkdirAll(filepath.Dir(b.cache), 0o755)
	if err == nil {
		err = writeTar(ctx, p.tmp, b.cache)
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("rootfs: cache %s: %w", b.cache, ctx.Err())
		}
		p.rep.say(StageBootstrap, fmt.Sprintf("warning: could not cache the base: %v", err))
	}
	return nil
}

// mmdebstrap writes a tarball (owners intact even when unprivileged), which
// becomes the cached base and is then extracted into p.tmp.
func (p *provisioner) mmdebstrap(ctx context.Context, bin string, b bootstrapJob) error {
	dir := filepath.Dir(p.tmp)
	if b.cache != "" {
		dir = filepath.Dir(b.cache)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("rootfs: cache %s: %w", dir, err)
		}
	}
	out, err := os.CreateTemp(dir, ".base-"+b.suite+".tar.tmp-*")
	if err != nil {
		return fmt.Errorf("rootfs: bootstrap %s: %w", b.src, err)
	}
	out.Close()
	defer os.Remove(out.Name())
	mode := "unshare"
	if os.Geteuid() == 0 {
		mode = "root"
	}
	args := []string{"--mode=" + mode, "--variant=minbase", "--format=tar", "--architectures=" + b.arch,
		"--keyring=" + b.keyring, b.suite, out.Name(), b.mirror}
	p.rep.say(StageBootstrap, fmt.Sprintf("mmdebstrap %s %s from %s", b.src.Kind, b.suite, b.mirror))
	if err := p.run(ctx, bin, args); err != nil {
		return err
	}
	base := out.Name()
	if b.cache != "" {
		if err := os.Rename(out.Name(), b.cache); err != nil {
			return fmt.Errorf("rootfs: cache %s: %w", b.cache, err)
		}
		base = b.cache
	}
	return extractFile(ctx, base, p.tmp, p.rep)
}

// run runs a bootstrapper in its own process group, streaming its output
// lines as progress. Cancelling ctx interrupts the group (SIGINT, then
// SIGTERM repeated while the scripts keep forking), and kills it after five
// seconds.
func (p *provisioner) run(ctx context.Context, bin string, args []string) error {
	name := filepath.Base(bin)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"LC_ALL=C", "DEBIAN_FRONTEND=noninteractive")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var (
		mu      sync.Mutex
		timer   *time.Timer
		stopped bool
	)
	cmd.Cancel = func() error {
		pgid := cmd.Process.Pid
		deadline := time.Now().Add(5 * time.Second)
		syscall.Kill(-pgid, syscall.SIGINT)
		var signal func()
		signal = func() {
			// Repeat: a script may fork new children after the first signal.
			sig := syscall.SIGTERM
			if time.Now().After(deadline) {
				sig = syscall.SIGKILL
			}
			if syscall.Kill(-pgid, sig) != nil || sig == syscall.SIGKILL {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if !stopped {
				timer = time.AfterFunc(250*time.Millisecond, signal)
			}
		}
		signal()
		return nil
	}
	cmd.WaitDelay = 10 * time.Second
	pr, pw, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("rootfs: %s: %w", name, err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return fmt.Errorf("rootfs: start %s: %w", name, err)
	}
	var tail []string
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		p.rep.say(StageBootstrap, line)
		tail = append(tail, line)
		if len(tail) > 20 {
			tail = tail[1:]
		}
	}
	if sc.Err() != nil {
		discard(pr)
	}
	pr.Close()
	err = cmd.Wait()
	mu.Lock()
	stopped = true
	if timer != nil {
		timer.Stop()
	}
	mu.Unlock()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("rootfs: %s: %w", name, ctx.Err())
	}
	out := strings.Join(tail, "\n")
	if strings.Contains(out, "No space left on device") {
		return fmt.Errorf("rootfs: %s: %w: %w\n%s", name, ErrDiskFull, err, out)
	}
	return fmt.Errorf("rootfs: %s: %w\n%s", name, err, out)
}

func discard(f *os.File) {
	buf := make([]byte, 32<<10)
	for {
		if _, err := f.Read(buf); err != nil {
			return
		}
	}
}

// aptEntry is one "deb" source of the host.
type aptEntry struct {
	uri    string
	suites []string
}

// hostDebianMirror returns the Debian archive the host's apt uses: an entry
// for suite itself, or else (on a Debian host) its main archive entry.
func hostDebianMirror(suite string) (string, error) {
	entries := hostAptEntries()
	for _, e := range entries {
		if slices.Contains(e.suites, suite) {
			return e.uri, nil
		}
	}
	if data, err := os.ReadFile(hostOSRelease); err == nil && parseOSRelease(data)["ID"] == "debian" {
		for _, e := range entries {
			if strings.Contains(e.uri, "security") {
				continue
			}
			for _, s := range e.suites {
				if !strings.ContainsAny(s, "-/") {
					return e.uri, nil
				}
			}
		}
	}
	return "", fmt.Errorf("rootfs: debian: no Debian mirror in the host's apt sources (%s, %s); set the Debian mirror explicitly", hostSourcesList, hostSourcesDir)
}

// hostAptEntries reads the host's one-line and deb822 apt sources.
func hostAptEntries() []aptEntry {
	var entries []aptEntry
	files := []string{hostSourcesList}
	lists, _ := filepath.Glob(filepath.Join(hostSourcesDir, "*.list"))
	files = append(files, lists...)
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil {
			entries = append(entries, parseSourcesList(string(data))...)
		}
	}
	deb822, _ := filepath.Glob(filepath.Join(hostSourcesDir, "*.sources"))
	for _, f := range deb822 {
		if data, err := os.ReadFile(f); err == nil {
			entries = append(entries, parseDeb822(string(data))...)
		}
	}
	return entries
}

// parseSourcesList reads "deb [options] URI SUITE COMPONENTS..." lines.
func parseSourcesList(data string) []aptEntry {
	var entries []aptEntry
	for line := range strings.Lines(data) {
		line, _, _ = strings.Cut(line, "#")
		fields := strings.Fields(line)
		if len(fields) < 3 || fields[0] != "deb" {
			continue
		}
		fields = fields[1:]
		if strings.HasPrefix(fields[0], "[") {
			for len(fields) > 0 && !strings.HasSuffix(fields[0], "]") {
				fields = fields[1:]
			}
			if len(fields) > 0 {
				fields = fields[1:]
			}
		}
		if len(fields) >= 2 && usableURI(fields[0]) {
			entries = append(entries, aptEntry{uri: strings.TrimRight(fields[0], "/"), suites: []string{fields[1]}})
		}
	}
	return entries
}

// parseDeb822 reads the stanzas of a .sources file.
func parseDeb822(data string) []aptEntry {
	var entries []aptEntry
	flush := func(st map[string]string) {
		if st == nil || !slices.Contains(strings.Fields(st["types"]), "deb") || strings.EqualFold(st["enabled"], "no") {
			return
		}
		suites := strings.Fields(st["suites"])
		for _, uri := range strings.Fields(st["uris"]) {
			if usableURI(uri) {
				entries = append(entries, aptEntry{uri: strings.TrimRight(uri, "/"), suites: suites})
			}
		}
	}
	var st map[string]string
	key := ""
	for line := range strings.Lines(data) {
		line = strings.TrimRight(line, "\r\n")
		switch {
		case strings.TrimSpace(line) == "":
			flush(st)
			st, key = nil, ""
		case strings.HasPrefix(line, "#"):
		case line[0] == ' ' || line[0] == '\t':
			if st != nil && key != "" {
				st[key] += " " + strings.TrimSpace(line)
			}
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			if st == nil {
				st = map[string]string{}
			}
			key = strings.ToLower(strings.TrimSpace(k))
			st[key] = strings.TrimSpace(v)
		}
	}
	flush(st)
	return entries
}

func usableURI(u string) bool {
	return strings.HasPrefix(u, "http://") || strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "file:/")
}
