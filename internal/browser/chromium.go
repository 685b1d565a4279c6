package browser

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chromedp/cdproto"
	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/chromedp"
	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/bwrap"
	"den.dev/den/internal/sandbox/cgroup"
	"den.dev/den/internal/sandbox/launch"
	"den.dev/den/internal/sandbox/netns"
)

// Guest paths of the browser's own folders inside its sandbox.
const (
	guestProfile   = "/profile"
	guestDownloads = "/downloads"
	guestUploads   = "/uploads"
)

// chromiumFlags are Chromium's switches besides the profile and the
// pipe: no first-run work, nothing phoning home, no crash reporter, a
// fixed window size (the default viewport), no keyring.
var chromiumFlags = []string{
	"--headless",
	"--no-first-run",
	"--no-default-browser-check",
	"--disable-gpu",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-default-apps",
	"--disable-extensions",
	"--disable-sync",
	"--disable-breakpad",
	"--disable-crash-reporter",
	"--disable-client-side-phishing-detection",
	"--disable-domain-reliability",
	"--disable-features=Translate,MediaRouter,OptimizationHints,AutofillServerCommunication,InterestFeedContentSuggestions,CertificateTransparencyComponentUpdater",
	"--metrics-recording-only",
	"--no-pings",
	"--mute-audio",
	"--hide-scrollbars",
	"--password-store=basic",
	"--force-color-profile=srgb",
	"--lang=en-US",
	"--window-size=1280,800",
}

// startTimeout bounds a start of Chromium, from the fork to its first
// answer on the pipe.
const startTimeout = 20 * time.Second

// chromium is one running Chromium: the process den started, the
// protocol connection over its pipe, and the computer it joined.
type chromium struct {
	place *place
	cmd   *exec.Cmd
	conn  *chromedp.PipeConn
	b     *chromedp.Browser
	// alloc is the parent of every tab's chromedp context: it attaches
	// them to b.
	alloc context.Context
	stop  context.CancelFunc

	exited  chan struct{} // closed once the process was waited for
	waitErr error
	out     *tail         // Chromium's stderr
	copied  chan struct{} // closed once out has all of it
	errR    *os.File

	started time.Time
	// group holds Chromium's processes and bounds their memory; nil
	// when Chromium runs without one. It is removed once they are gone.
	group *cgroup.Group
	logf  func(format string, args ...any)
	// tree pins the sandbox's processes before Chromium is stopped:
	// they die with bwrap (its sandbox's first process has
	// --die-with-parent, and the pid namespace ends with it), but not
	// always before bwrap is reaped.
	tree     pinned
	pinOnce  sync.Once
	killOnce sync.Once
}

// binaries are the host programs a start needs.
type binaries struct {
	nsenter, bwrap, chromium string
}

// findBinaries resolves the programs of o, or finds them.
func findBinaries(o *Options) (binaries, error) {
	var bin binaries
	var err error
	if bin.nsenter, err = lookFor(o.Nsenter, "nsenter", "util-linux"); err != nil {
		return bin, err
	}
	if bin.bwrap, err = lookFor(o.Bwrap, "bwrap", "bubblewrap"); err != nil {
		return bin, err
	}
	bin.chromium, err = findChromium(o.Chromium)
	return bin, err
}

func lookFor(given, name, pkg string) (string, error) {
	if given == "" {
		given = name
	}
	p, err := exec.LookPath(given)
	if err != nil {
		return "", fmt.Errorf("%w: %s not found: install the Debian package %s", ErrUnavailable, name, pkg)
	}
	return filepath.Abs(p)
}

// chromiumCandidates are where Chromium's real binary lives (not a
// wrapper script that reads configuration from /etc), headless shell
// first: it starts faster and needs less.
var chromiumCandidates = []string{
	"/usr/lib/chromium/chromium-headless-shell",
	"/usr/lib/chromium/chromium",
	"/usr/lib/chromium-browser/chromium-browser",
	"/opt/google/chrome/chrome",
}

func findChromium(given string) (string, error) {
	if given != "" {
		p, err := exec.LookPath(given)
		if err != nil {
			return "", fmt.Errorf("%w: chromium %s: %v", ErrUnavailable, given, err)
		}
		return filepath.EvalSymlinks(p)
	}
	for _, p := range chromiumCandidates {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	for _, name := range []string{"chromium-headless-shell", "chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return filepath.EvalSymlinks(p)
		}
	}
	return "", fmt.Errorf("%w: Chromium not found: install the Debian package chromium-headless-shell (or chromium)", ErrUnavailable)
}

// folders are the host folders of an agent's browser, as bound into
// Chromium's sandbox.
type folders struct {
	profile, downloads, uploads string
}

func (o *Options) folders() folders {
	return folders{
		profile:   filepath.Join(o.Dir, "profile"),
		downloads: filepath.Join(o.Dir, "downloads"),
		uploads:   filepath.Join(o.Dir, "uploads"),
	}
}

// prepare makes the browser's folders, owned by the uid Chromium runs
// as; empties the downloads and uploads of an earlier Chromium (no tab
// of it is left to use them); and removes the profile's lock of a
// Chromium that did not exit (den owns the only Chromium of an agent's
// profile).
func (f folders) prepare(uid, gid int) error {
	for _, d := range []string{f.downloads, f.uploads} {
		if err := os.RemoveAll(d); err != nil {
			return err
		}
	}
	for _, d := range []string{filepath.Dir(f.profile), f.profile, f.downloads, f.uploads} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		fi, err := os.Lstat(d)
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a folder", d)
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(d, uid, gid); err != nil {
				return err
			}
		}
	}
	for _, name := range []string{"SingletonLock", "SingletonSocket", "SingletonCookie"} {
		if err := os.Remove(filepath.Join(f.profile, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return nil
}

// sandboxArgs returns bwrap's arguments for Chromium, the program
// included. Files are passed as fd 3 (commands) and 4 (replies) for the
// pipe, and 5, 6 and 7 for /etc/resolv.conf, /etc/hosts and
// /etc/nsswitch.conf. f holds the sources of the browser's folders (as
// staged).
//
// Chromium sees the host's /usr (and the library and font folders it
// needs), read-only; its own /proc, /dev and /tmp; its profile, its
// downloads folder and its uploads folder; and nothing else of the host.
// It runs as uid 1000 in a user namespace of its own, nested in the
// computer's, where that uid is the computer's root: Chromium refuses
// to run as root with its sandbox on, and its sandbox stays on.
func sandboxArgs(chromiumPath string, f folders, trust []string) []string {
	a := []string{
		"--unshare-user", "--uid", "1000", "--gid", "1000",
		"--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--hostname", "den-browser",
		"--die-with-parent", "--new-session",
		"--ro-bind", "/usr", "/usr",
	}
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"} {
		if target, err := os.Readlink(d); err == nil {
			a = append(a, "--symlink", target, d)
		} else if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			a = append(a, "--ro-bind", d, d)
		}
	}
	for _, d := range []string{"/etc/fonts", "/etc/ssl", "/etc/ca-certificates", "/etc/pki", "/etc/ld.so.cache", "/etc/localtime", "/var/cache/fontconfig"} {
		a = append(a, "--ro-bind-try", d, d)
	}
	if dir := filepath.Dir(chromiumPath); !strings.HasPrefix(dir, "/usr/") {
		a = append(a, "--ro-bind", dir, dir)
	}
	a = append(a,
		"--ro-bind-data", "5", "/etc/resolv.conf",
		"--ro-bind-data", "6", "/etc/hosts",
		"--ro-bind-data", "7", "/etc/nsswitch.conf",
		"--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
		"--bind", f.profile, guestProfile,
		"--bind", f.downloads, guestDownloads,
		"--ro-bind", f.uploads, guestUploads,
		"--clearenv", "--setenv", "HOME", "/tmp", "--setenv", "TMPDIR", "/tmp",
		"--setenv", "LANG", "C.UTF-8", "--setenv", "DBUS_SESSION_BUS_ADDRESS", "disabled:",
		"--chdir", "/tmp", "--",
		chromiumPath,
	)
	a = append(a, chromiumFlags...)
	if len(trust) > 0 {
		a = append(a, "--ignore-certificate-errors-spki-list="+strings.Join(trust, ","))
	}
	return append(a, "--user-data-dir="+guestProfile, "--remote-debugging-pipe", "about:blank")
}

// etcFiles are what Chromium's /etc/resolv.conf, /etc/hosts and
// /etc/nsswitch.conf hold: the computer's resolver (den's), and
// localhost.
func etcFiles() [][]byte {
	return [][]byte{
		netns.ResolvConf(),
		[]byte("127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n"),
		[]byte("hosts: files dns\n"),
	}
}

// memfile returns a file holding b, read from its start.
func memfile(name string, b []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// startFiles are what a start gives Chromium and keeps: the protocol's
// two pipes (Chromium's fds 3 and 4), its output, and the contents of
// its /etc files (fds 5 to 7).
type startFiles struct {
	cmdR, cmdW, respR, respW, errR, errW *os.File
	etc                                  []*os.File
}

func openStartFiles() (*startFiles, error) {
	f := &startFiles{}
	var err error
	if f.cmdR, f.cmdW, err = os.Pipe(); err != nil {
		return nil, err
	}
	if f.respR, f.respW, err = os.Pipe(); err == nil {
		f.errR, f.errW, err = os.Pipe()
	}
	for i, b := range etcFiles() {
		if err != nil {
			break
		}
		var m *os.File
		if m, err = memfile("etc"+strconv.Itoa(i), b); err == nil {
			f.etc = append(f.etc, m)
		}
	}
	if err != nil {
		f.closeChild()
		f.closeParent()
		return nil, err
	}
	return f, nil
}

// child are the files Chromium gets, in fd order from 3.
func (f *startFiles) child() []*os.File { return append([]*os.File{f.cmdR, f.respW}, f.etc...) }

// closeChild closes what only Chromium needs, once it has its copies.
func (f *startFiles) closeChild() {
	for _, x := range append(f.child(), f.errW) {
		if x != nil {
			x.Close()
		}
	}
}

// closeParent closes den's ends, when Chromium did not start.
func (f *startFiles) closeParent() {
	for _, x := range []*os.File{f.cmdW, f.respR, f.errR} {
		if x != nil {
			x.Close()
		}
	}
}

// startChromium starts Chromium in the computer at p, inside group g
// when not nil, and connects to it. On success the returned chromium
// owns p and g; on failure g is removed.
func startChromium(ctx context.Context, o *Options, bin binaries, p *place, g *cgroup.Group) (*chromium, error) {
	c, err := startIn(ctx, o, bin, p, g)
	if err != nil && g != nil {
		if rerr := g.Remove(); rerr != nil {
			o.logf("%v", rerr)
		}
	}
	return c, err
}

func startIn(ctx context.Context, o *Options, bin binaries, p *place, g *cgroup.Group) (*chromium, error) {
	f := o.folders()
	if err := f.prepare(p.uid, p.gid); err != nil {
		return nil, fmt.Errorf("browser: folders: %w", err)
	}
	src := f
	if os.Geteuid() == 0 {
		// Chromium's bwrap runs as the computer's root, who cannot
		// search den's data dir: stage the folders where it can.
		st, err := bwrap.StageFolders(p.gid, f.profile, f.downloads, f.uploads)
		if err != nil {
			return nil, fmt.Errorf("browser: %w", err)
		}
		defer st.Release() // bwrap holds its own mounts once Chromium answers
		src = folders{profile: st.Paths[0], downloads: st.Paths[1], uploads: st.Paths[2]}
	}
	files, err := openStartFiles()
	if err != nil {
		return nil, fmt.Errorf("browser: %w", err)
	}
	cmd := nsenter(bin, p, src, files, o.TrustSPKI)
	gt, err := confine(cmd, g)
	if err != nil {
		files.closeChild()
		files.closeParent()
		return nil, err
	}
	err = launch.Start(cmd)
	files.closeChild()
	if err == nil {
		err = gt.open(cmd.Process.Pid)
	} else {
		gt.close()
	}
	if err != nil {
		if cmd.Process != nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		files.closeParent()
		return nil, fmt.Errorf("browser: start %s: %w", bin.nsenter, err)
	}
	runCtx, stop := context.WithCancel(context.Background())
	c := &chromium{place: p, cmd: cmd, stop: stop, exited: make(chan struct{}), copied: make(chan struct{}), errR: files.errR, out: newTail(8 << 10), started: time.Now(), group: g, logf: o.logf}
	go func() {
		defer close(c.copied)
		io.Copy(c.out, files.errR)
		files.errR.Close()
	}()
	go func() {
		c.waitErr = cmd.Wait()
		close(c.exited)
	}()
	if err := c.connect(ctx, runCtx, o, files); err != nil {
		c.place = nil // the caller keeps p
		c.group = nil // and startChromium removes g
		c.kill()
		return nil, err
	}
	return c, nil
}

// gate holds a started process until it is in its control group: on
// cgroup v1, where a process cannot be started inside a group, the
// command is a shell that waits on a pipe before it runs the real
// one. A nil gate holds nothing.
type gate struct {
	g    *cgroup.Group
	r, w *os.File
}

// confine makes cmd start inside g: directly on cgroup v2
// (CLONE_INTO_CGROUP), else behind a gate. A nil g leaves cmd alone.
func confine(cmd *exec.Cmd, g *cgroup.Group) (*gate, error) {
	if g == nil {
		return nil, nil
	}
	if fd, ok := g.FD(); ok {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
		return nil, nil
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("browser: cgroup gate: %w", err)
	}
	// The shell reads a line on fd 3+len(ExtraFiles), closes it and
	// runs the command; it exits when den closes the pipe instead.
	fd := strconv.Itoa(3 + len(cmd.ExtraFiles))
	cmd.ExtraFiles = append(cmd.ExtraFiles, r)
	cmd.Args = append([]string{"sh", "-c", "read -r _ <&" + fd + " || exit 1; exec " + fd + "<&-; exec \"$@\"", "sh", cmd.Path}, cmd.Args[1:]...)
	cmd.Path = "/bin/sh"
	return &gate{g: g, r: r, w: w}, nil
}

// open adds the process pid to the group and lets it run.
func (gt *gate) open(pid int) error {
	if gt == nil {
		return nil
	}
	defer gt.close()
	if err := gt.g.Add(pid); err != nil {
		return err
	}
	if _, err := gt.w.Write([]byte("\n")); err != nil {
		return fmt.Errorf("cgroup gate: %w", err)
	}
	return nil
}

// close lets a held process exit without running its command.
func (gt *gate) close() {
	if gt != nil {
		gt.r.Close()
		gt.w.Close()
	}
}

// nsenter is the command that starts Chromium's sandbox in the
// computer's namespaces.
func nsenter(bin binaries, p *place, src folders, files *startFiles, trust []string) *exec.Cmd {
	pid := strconv.Itoa(p.pid)
	// --preserve-credentials: nsenter runs as the computer's root
	// already (its host uid is what root inside maps to), and an
	// ordinary user's namespace refuses setgroups.
	args := append([]string{"--user=/proc/" + pid + "/ns/user", "--net=/proc/" + pid + "/ns/net", "--preserve-credentials", "--", bin.bwrap},
		sandboxArgs(bin.chromium, src, trust)...)
	cmd := exec.Command(bin.nsenter, args...)
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = files.errW, files.errW
	cmd.ExtraFiles = files.child()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if os.Geteuid() == 0 && p.uid != 0 {
		// nsenter joins the computer's user namespace as its owner, the
		// computer's root: host root is never part of the browser.
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: uint32(p.uid), Gid: uint32(p.gid), Groups: []uint32{}}
	}
	return cmd
}

// connect speaks to the started Chromium over its pipe until it
// answers, and checks where it runs.
func (c *chromium) connect(ctx, runCtx context.Context, o *Options, files *startFiles) error {
	c.conn = chromedp.NewPipeConn(files.respR, files.cmdW)
	var err error
	if c.b, err = chromedp.NewBrowserTransport(runCtx, c.conn, chromedp.WithBrowserLogf(o.logf), chromedp.WithBrowserErrorf(o.logf)); err != nil {
		c.conn.Close()
		return fmt.Errorf("browser: connect: %w", err)
	}
	sctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if _, err := cdp.Call(sctx, c.b, browser.GetVersion, cdp.Empty{}); err != nil {
		select {
		case <-c.exited:
		case <-time.After(time.Second):
		}
		return fmt.Errorf("%w: Chromium did not start: %v: %s", ErrUnavailable, err, c.out.String())
	}
	// Chromium answered, so its sandbox was set up: check that it is in
	// exactly the computer's namespaces (the process den started is
	// now bwrap, which stays in the namespaces nsenter joined).
	if err := c.checkJoined(); err != nil {
		return err
	}
	c.alloc, _ = chromedp.NewAllocatorContext(runCtx, attached{c.b})
	return nil
}

// checkJoined compares the namespaces of the process den started with
// the computer's.
func (c *chromium) checkJoined() error {
	dir := "/proc/" + strconv.Itoa(c.cmd.Process.Pid) + "/ns/"
	user, err := nsOf(dir + "user")
	if err != nil {
		return fmt.Errorf("browser: namespaces of Chromium's sandbox: %w", err)
	}
	net, err := nsOf(dir + "net")
	if err != nil {
		return fmt.Errorf("browser: namespaces of Chromium's sandbox: %w", err)
	}
	if user != c.place.user || net != c.place.net || !c.place.alive() {
		return fmt.Errorf("browser: Chromium's sandbox is not in the computer's namespaces (the computer stopped while it started?)")
	}
	return nil
}

// oomKills counts the processes the kernel killed in Chromium's group
// for its memory limit: 0 without a group.
func (c *chromium) oomKills() int64 {
	if c.group == nil {
		return 0
	}
	st, err := c.group.Stats()
	if err != nil {
		return 0
	}
	return st.OOMKills
}

// lost is closed when the connection to Chromium drops (it exited or
// crashed).
func (c *chromium) lost() <-chan struct{} { return c.b.LostConnection }

// close stops Chromium: it asks it to close (so that it saves its
// profile), then ends the pipe, then kills what is left. It waits for
// the processes. It may be called more than once.
func (c *chromium) close() {
	c.pinOnce.Do(func() { c.tree = pinTree(c.cmd.Process.Pid) })
	if c.b != nil && !c.isLost() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		// Browser.close is refused by chromedp's Call (its Cancel does
		// it for browsers it allocated); write it on the pipe directly.
		c.conn.Write(ctx, closeMessage())
		select {
		case <-c.exited:
		case <-ctx.Done():
		}
		cancel()
	}
	c.kill()
}

// kill ends the process tree and waits for all of it.
func (c *chromium) kill() {
	c.pinOnce.Do(func() { c.tree = pinTree(c.cmd.Process.Pid) })
	c.killOnce.Do(func() {
		if c.stop != nil {
			c.stop()
		}
		if c.conn != nil {
			c.conn.Close()
		}
		select {
		case <-c.exited:
		case <-time.After(time.Second):
			c.cmd.Process.Signal(syscall.SIGKILL)
			<-c.exited
		}
		c.tree.wait()
		select {
		case <-c.copied:
		case <-time.After(2 * time.Second):
			c.errR.Close() // a process outside the tree holds the pipe
			<-c.copied
		}
		if c.group != nil {
			// Kills what is left in it, such as a process that left
			// the tree.
			if err := c.group.Remove(); err != nil {
				c.logf("%v", err)
			}
		}
		if c.place != nil {
			c.place.close()
		}
	})
}

// pinned are processes held by pidfds, so that den can wait for
// processes that are not its children.
type pinned []*os.File

// pinTree pins the descendants of root.
func pinTree(root int) pinned {
	var procs []sandbox.ProcInfo
	for _, pid := range sandbox.AllPids() {
		if p, ok := sandbox.ReadProc(pid); ok {
			procs = append(procs, p)
		}
	}
	var out pinned
	for _, pid := range sandbox.Descendants(procs, root) {
		if fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK); err == nil {
			out = append(out, os.NewFile(uintptr(fd), "pidfd"))
		}
	}
	return out
}

// wait waits for the pinned processes to exit, killing those still
// there after 2 s, and closes the pidfds.
func (p pinned) wait() {
	deadline := time.Now().Add(2 * time.Second)
	for _, f := range p {
		rc, err := f.SyscallConn()
		if err != nil {
			f.Close()
			continue
		}
		for i := 0; ; i++ {
			gone := true
			rc.Control(func(fd uintptr) {
				gone = exited(int(fd))
				if !gone && time.Now().After(deadline) {
					unix.PidfdSendSignal(int(fd), unix.SIGKILL, nil, 0)
				}
			})
			if gone || i > 1000 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		f.Close()
	}
}

// closeMessage is Browser.close, with an id chromedp does not reach
// (its ids count up from 1; Chromium's are 32-bit).
func closeMessage() *cdproto.Message {
	return &cdproto.Message{ID: math.MaxInt32, Method: cdproto.MethodType(browser.CommandClose)}
}

// attached is a chromedp Allocator that hands out one browser that is
// already connected, so that chromedp contexts open tabs in it and never
// own its process.
type attached struct{ b *chromedp.Browser }

func (a attached) Allocate(context.Context, ...chromedp.BrowserOption) (*chromedp.Browser, error) {
	return a.b, nil
}
func (attached) Wait()          {}
func (attached) Attaches() bool { return true }

// tail keeps the last bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func newTail(max int) *tail { return &tail{max: max} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}
