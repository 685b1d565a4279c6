package rootfs

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"
)

// DefaultAlpineMirror is the Alpine mirror used when Options.AlpineMirror is
// empty.
const DefaultAlpineMirror = "https://dl-cdn.alpinelinux.org/alpine"

// release is one Alpine minirootfs to download.
type release struct {
	file    string // base name, also the cache key
	url     string
	version string
	sha256  string // lower-case hex
}

var (
	hexSHA256RE = regexp.MustCompile(`^[0-9a-f]{64}$`)
	fileNameRE  = regexp.MustCompile(`^[A-Za-z0-9_+-][A-Za-z0-9._+-]*$`)
)

// alpineArch maps a Go architecture to Alpine's name for it.
func alpineArch(goarch string) (string, error) {
	arch, ok := map[string]string{
		"amd64":   "x86_64",
		"arm64":   "aarch64",
		"arm":     "armv7",
		"386":     "x86",
		"riscv64": "riscv64",
		"ppc64le": "ppc64le",
		"s390x":   "s390x",
		"loong64": "loongarch64",
	}[goarch]
	if !ok {
		return "", fmt.Errorf("rootfs: alpine: no minirootfs for architecture %s", goarch)
	}
	return arch, nil
}

// alpine downloads, verifies and extracts the minirootfs src names.
func (p *provisioner) alpine(ctx context.Context, src Source) (Info, error) {
	mirror := firstNonEmpty(p.opts.AlpineMirror, DefaultAlpineMirror)
	arch, err := alpineArch(runtime.GOARCH)
	if err != nil {
		return Info{}, err
	}
	rel, err := p.resolveAlpine(ctx, mirror, arch, src.Version)
	if err != nil {
		return Info{}, err
	}
	file, cleanup, err := p.obtain(ctx, rel)
	if err != nil {
		return Info{}, err
	}
	defer cleanup()
	p.rep.say(StageExtract, "extracting alpine "+rel.version)
	if err := extractFile(ctx, file, p.tmp, p.rep); err != nil {
		return Info{}, err
	}
	return Info{Source: src.String(), Mirror: mirror, Checksum: "sha256:" + rel.sha256}, nil
}

// resolveAlpine finds the minirootfs file and checksum for version: empty
// for the latest stable release, "3.21" for the latest of a branch, or an
// exact "3.21.3".
func (p *provisioner) resolveAlpine(ctx context.Context, mirror, arch, version string) (release, error) {
	if strings.Count(version, ".") == 2 {
		return p.resolveExact(ctx, mirror, arch, version)
	}
	branch := "latest-stable"
	if version != "" {
		branch = "v" + version
	}
	base := fmt.Sprintf("%s/%s/releases/%s", mirror, branch, arch)
	url := base + "/latest-releases.yaml"
	p.rep.say(StageDownload, "resolving alpine "+firstNonEmpty(version, "latest-stable")+" from "+url)
	data, err := p.fetchSmall(ctx, url)
	if err != nil {
		if version == "" && errors.Is(err, ErrNotFound) {
			// The default source's mirror does not serve Alpine at all.
			return release{}, fmt.Errorf("%w: %w", ErrUnreachable, err)
		}
		return release{}, err
	}
	for _, item := range parseReleases(data) {
		if item["flavor"] != "alpine-minirootfs" {
			continue
		}
		rel := release{file: item["file"], version: item["version"], sha256: strings.ToLower(item["sha256"])}
		if !fileNameRE.MatchString(rel.file) || !hexSHA256RE.MatchString(rel.sha256) {
			return release{}, fmt.Errorf("rootfs: alpine: %s: malformed minirootfs entry (file %q, sha256 %q)", url, rel.file, rel.sha256)
		}
		rel.url = base + "/" + rel.file
		return rel, nil
	}
	return release{}, fmt.Errorf("rootfs: alpine: %s: %w: no alpine-minirootfs entry", url, ErrNotFound)
}

// resolveExact names an exact release; its checksum comes from the .sha256
// file next to it, or from the cache when that was verified before.
func (p *provisioner) resolveExact(ctx context.Context, mirror, arch, version string) (release, error) {
	parts := strings.Split(version, ".")
	rel := release{
		file:    fmt.Sprintf("alpine-minirootfs-%s-%s.tar.gz", version, arch),
		version: version,
	}
	rel.url = fmt.Sprintf("%s/v%s.%s/releases/%s/%s", mirror, parts[0], parts[1], arch, rel.file)
	if p.opts.CacheDir != "" {
		if sum, err := os.ReadFile(filepath.Join(p.opts.CacheDir, rel.file+".sha256")); err == nil {
			if s := firstField(string(sum)); hexSHA256RE.MatchString(s) {
				rel.sha256 = s
				return rel, nil
			}
		}
	}
	data, err := p.fetchSmall(ctx, rel.url+".sha256")
	if err != nil {
		return release{}, err
	}
	rel.sha256 = strings.ToLower(firstField(string(data)))
	if !hexSHA256RE.MatchString(rel.sha256) {
		return release{}, fmt.Errorf("rootfs: alpine: %s.sha256: malformed checksum file", rel.url)
	}
	return rel, nil
}

func firstField(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// parseReleases reads the list of mappings in latest-releases.yaml. It knows
// only that file's shape: "-" starts an item, "key: value" lines follow,
// values may be quoted.
func parseReleases(data []byte) []map[string]string {
	var items []map[string]string
	var cur map[string]string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		t := strings.TrimSpace(sc.Text())
		if t == "" || t == "---" || t == "..." || strings.HasPrefix(t, "#") {
			continue
		}
		if t == "-" || strings.HasPrefix(t, "- ") {
			cur = map[string]string{}
			items = append(items, cur)
			t = strings.TrimSpace(strings.TrimPrefix(t, "-"))
			if t == "" {
				continue
			}
		}
		k, v, ok := strings.Cut(t, ":")
		if !ok || cur == nil {
			continue
		}
		cur[strings.TrimSpace(k)] = unquote(strings.TrimSpace(v))
	}
	return items
}

// obtain returns a local, verified copy of rel, from the cache when possible.
// cleanup removes it unless it lives in the cache.
func (p *provisioner) obtain(ctx context.Context, rel release) (file string, cleanup func(), err error) {
	noop := func() {}
	dir := filepath.Dir(p.tmp)
	if p.opts.CacheDir != "" {
		dir = p.opts.CacheDir
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", nil, fmt.Errorf("rootfs: cache %s: %w", dir, err)
		}
		cached := filepath.Join(dir, rel.file)
		if _, err := os.Stat(cached); err == nil {
			sum, err := p.hashFile(ctx, cached)
			if err != nil {
				return "", nil, err
			}
			if sum == rel.sha256 {
				p.rep.say(StageVerify, "using cached "+cached+" (sha256 verified)")
				return cached, noop, nil
			}
			p.rep.say(StageVerify, "cached "+cached+" does not match its checksum; downloading again")
			os.Remove(cached)
		}
	}
	tmp, err := p.download(ctx, rel, dir)
	if err != nil {
		return "", nil, err
	}
	if p.opts.CacheDir == "" {
		return tmp, func() { os.Remove(tmp) }, nil
	}
	cached := filepath.Join(dir, rel.file)
	if err := os.Rename(tmp, cached); err != nil {
		os.Remove(tmp)
		return "", nil, fmt.Errorf("rootfs: cache %s: %w", cached, err)
	}
	// The checksum beside the file lets an exact version be reused offline.
	writeFileAtomic(cached+".sha256", []byte(rel.sha256+"  "+rel.file+"\n"), 0o644)
	return cached, noop, nil
}

// download fetches rel into a temporary file in dir and verifies it.
func (p *provisioner) download(ctx context.Context, rel release, dir string) (string, error) {
	resp, err := p.get(ctx, rel.url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	f, err := os.CreateTemp(dir, "."+rel.file+".part-*")
	if err != nil {
		return "", fmt.Errorf("rootfs: download %s: %w", rel.url, err)
	}
	h := sha256.New()
	in := &countingReader{r: resp.Body, rep: p.rep, stage: StageDownload, msg: "downloading " + rel.url, total: resp.ContentLength}
	_, err = io.Copy(io.MultiWriter(f, h), &netReader{r: in})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("rootfs: download %s: %w", rel.url, err)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if got != rel.sha256 {
		os.Remove(f.Name())
		return "", fmt.Errorf("rootfs: verify %s: %w: expected sha256 %s, got %s (the download was deleted)", rel.url, ErrChecksum, rel.sha256, got)
	}
	p.rep.say(StageVerify, "sha256 verified for "+rel.file)
	return f.Name(), nil
}

// netReader marks body read errors as the mirror being unreachable.
type netReader struct{ r io.Reader }

func (n *netReader) Read(b []byte) (int, error) {
	c, err := n.r.Read(b)
	if err != nil && err != io.EOF && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("%w: %w", ErrUnreachable, err)
	}
	return c, err
}

// hashFile returns the SHA-256 of file, reporting progress.
func (p *provisioner) hashFile(ctx context.Context, file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("rootfs: verify %s: %w", file, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", fmt.Errorf("rootfs: verify %s: %w", file, err)
	}
	h := sha256.New()
	in := &countingReader{r: f, rep: p.rep, stage: StageVerify, msg: "verifying " + file, total: st.Size()}
	if _, err := io.Copy(h, in); err != nil {
		return "", fmt.Errorf("rootfs: verify %s: %w", file, err)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("rootfs: verify %s: %w", file, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// fetchSmall GETs a small text file (at most 1 MiB).
func (p *provisioner) fetchSmall(ctx context.Context, url string) ([]byte, error) {
	resp, err := p.get(ctx, url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(&netReader{r: resp.Body}, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("rootfs: fetch %s: %w", url, err)
	}
	return data, nil
}

// get issues a GET and classifies failures: transport errors and 5xx are
// ErrUnreachable, 404 and 410 are ErrNotFound, cancellation stays itself.
func (p *provisioner) get(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("rootfs: fetch %s: %w", url, err)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("rootfs: fetch %s: %w", url, ctx.Err())
		}
		return nil, fmt.Errorf("rootfs: fetch %s: %w: %w", url, ErrUnreachable, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusGone:
		return nil, fmt.Errorf("rootfs: fetch %s: %w (HTTP %s)", url, ErrNotFound, resp.Status)
	case resp.StatusCode >= 500:
		return nil, fmt.Errorf("rootfs: fetch %s: %w (HTTP %s)", url, ErrUnreachable, resp.Status)
	}
	return nil, fmt.Errorf("rootfs: fetch %s: HTTP %s", url, resp.Status)
}

// defaultClient bounds connecting and waiting for headers; a body download
// is bounded only by the context.
func defaultClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: 15 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr.TLSHandshakeTimeout = 15 * time.Second
	tr.ResponseHeaderTimeout = 30 * time.Second
	return &http.Client{Transport: tr}
}
