package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"den.dev/den/internal/browser"
	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/egress"
	"den.dev/den/internal/mcpclient"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/cgroup"
	"den.dev/den/internal/sandbox/netns"
	"den.dev/den/internal/sandbox/rootfs"
	"den.dev/den/internal/session"
)

// Free disk below which provisioning and package installs are likely to
// fail.
const (
	minFreeBytes  = 200 << 20
	warnFreeBytes = 2 << 30
)

// report is what den doctor finds.
type report struct {
	Tier    sandbox.Tier    `json:"tier"`
	Backend string          `json:"backend"`
	Checks  []sandbox.Check `json:"checks"`
	OK      bool            `json:"ok"`
}

func doctorCmd(g *globals) *cobra.Command {
	var agent string
	var asJSON bool
	c := &cobra.Command{
		Use:   "doctor",
		Short: "Report the isolation in force and every check behind it",
		Long: `Report the sandbox backend and the isolation tier in force, and every check
behind them: bwrap and its version, user namespaces, seccomp, cgroups,
the agent's rootfs, free disk, and a real start of the agent's computer;
the agent's MCP servers, marking those that run on the host with your
rights (den mcp test starts one); and the agent's browser: Chromium and
what it needs, and the memory it uses when it runs.
Exits 1 when den cannot run commands.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r := diagnose(cmd.Context(), g, agent)
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				enc.Encode(r)
			} else {
				printReport(g, r)
			}
			if !r.OK {
				return exitError{1}
			}
			return nil
		},
	}
	c.Flags().StringVar(&agent, "agent", "default", "agent whose computer to check")
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	return c
}

func diagnose(ctx context.Context, g *globals, agent string) report {
	r := report{Tier: sandbox.TierNone}
	add := func(c sandbox.Check) { r.Checks = append(r.Checks, c) }
	cfg, err := g.config()
	if err != nil {
		add(sandbox.Check{Name: "config", Detail: err.Error(), Fix: "fix the config file", Fatal: true})
		return finish(r)
	}
	add(sandbox.Check{Name: "config", OK: true, Detail: orDefault(cfg.Path(), "no config file (defaults)")})
	for _, c := range mcpChecks(g, agent) {
		add(c)
	}
	dataDir := DataDir(g.dataDir)
	add(diskCheck(dataDir))
	for _, c := range browserChecks(cfg, dataDir, agent) {
		add(c)
	}

	b, err := newBackend(g.backend, cfg)
	if err != nil {
		add(sandbox.Check{Name: "sandbox backend", Detail: err.Error(), Fatal: true,
			Fix: "install bubblewrap (apt-get install bubblewrap); den refuses to run commands without a sandbox"})
		add(cgroupCheck())
		return finish(r)
	}
	r.Backend, r.Tier = b.Name(), b.Tier()
	for _, c := range b.Check(ctx) {
		add(c)
	}
	cg := cgroupCheck()
	add(cg)
	pol, perr := cfg.Agent(agent).EgressPolicy()
	if b.Name() == "bwrap" {
		add(networkCheck(perr != nil || pol.Mode != egress.Off))
	}
	add(egressCheck(agent, pol, perr))
	add(limitsCheck(cfg.Agent(agent), cg.OK))
	m, err := computer.New(dataDir, b)
	if err != nil {
		add(sandbox.Check{Name: "data dir", Detail: err.Error(), Fatal: true})
		return finish(r)
	}
	add(idsCheck(m))
	comp, err := m.Computer(agent)
	if err != nil {
		add(sandbox.Check{Name: "agent", Detail: err.Error(), Fatal: true})
		return finish(r)
	}
	for _, w := range computer.MountWarnings(mountsOf(cfg.Agent(agent))) {
		add(sandbox.Check{Name: "mount", OK: true, Detail: w})
	}
	info, ok, err := comp.Info()
	switch {
	case ok && err != nil:
		add(sandbox.Check{Name: "rootfs (" + agent + ")", Detail: err.Error(), Fatal: true,
			Fix: "den computer reset --agent " + agent})
	case ok:
		add(sandbox.Check{Name: "rootfs (" + agent + ")", OK: true,
			Detail: fmt.Sprintf("%s %s from %s, %s", info.Distro, info.Version, info.Source, comp.Rootfs())})
		add(startCheck(ctx, comp, perr == nil && pol.Mode != egress.Off, pol))
	default:
		add(sourceCheck(ctx, agent, cfg.Rootfs.AlpineMirror))
	}
	return finish(r)
}

// idsCheck reports what root inside the computers is on the host.
func idsCheck(m *computer.Manager) sandbox.Check {
	c := sandbox.Check{Name: "user ids", Fatal: true}
	ids, err := m.IDs()
	if err != nil {
		c.Detail, c.Fix = err.Error(), "see docs/sandbox.md, \"User ids\""
		return c
	}
	c.OK, c.Detail = true, ids.String()
	if os.Geteuid() == 0 && !strings.Contains(ids.Source, "/etc/subuid") {
		uid, _, _ := ids.Root()
		c.Fix = fmt.Sprintf("optional: reserve the range in /etc/subuid and /etc/subgid so no account is ever given it: "+
			"useradd --system --no-create-home --shell /usr/sbin/nologin den; usermod --add-subuids %d-%d --add-subgids %d-%d den",
			uid, uid+65535, uid, uid+65535)
	}
	return c
}

// mountsOf parses an agent's configured mounts, ignoring bad ones (the
// config check reports those).
func mountsOf(a config.Agent) []sandbox.Bind {
	var out []sandbox.Bind
	for _, s := range a.Mounts {
		if b, err := sandbox.ParseMount(s); err == nil {
			out = append(out, b)
		}
	}
	return out
}

func finish(r report) report {
	r.OK = true
	for _, c := range r.Checks {
		if c.Fatal && !c.OK {
			r.OK = false
		}
	}
	if !r.OK {
		r.Tier = "unavailable"
	}
	return r
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func diskCheck(dir string) sandbox.Check {
	c := sandbox.Check{Name: "free disk"}
	// The data dir may not exist yet: measure the folder that will hold it.
	probe := filepath.Clean(dir)
	for probe != "/" {
		if _, err := os.Stat(probe); err == nil {
			break
		}
		probe = filepath.Dir(probe)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(probe, &st); err != nil {
		c.Detail = fmt.Sprintf("cannot measure %s: %v", probe, err)
		return c
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	c.Detail = fmt.Sprintf("%s free at %s", config.FormatBytes(free), dir)
	if probe != filepath.Clean(dir) {
		c.Detail = fmt.Sprintf("%s free at %s (data dir %s not created yet)", config.FormatBytes(free), probe, dir)
	}
	c.OK = free >= warnFreeBytes
	if free < minFreeBytes {
		c.Fatal = true
		c.Fix = "free some disk space: provisioning and package installs need room"
	} else if !c.OK {
		c.Fix = "less than 2 GiB free: large package installs may fail"
	}
	return c
}

func cgroupCheck() sandbox.Check {
	info := cgroup.Detect()
	c := sandbox.Check{Name: "resource limits (cgroups)", OK: info.Usable()}
	c.Detail = strings.TrimSpace(strings.ReplaceAll(info.String(), "\n", "; "))
	if !c.OK {
		c.Fix = "memory and CPU limits are off; " + info.Reason + " (processes and file sizes are still bounded by RLIMIT_NPROC and RLIMIT_FSIZE, /tmp by its size, the disk by den's measure)"
	}
	return c
}

// networkCheck reports whether a computer with its network on can get
// one: den's rules and listeners in the computer's own namespace, so
// that everything leaves through den's egress proxy. Without them the
// network does not come up (fail closed).
func networkCheck(wanted bool) sandbox.Check {
	ok, detail, fix := netns.Check()
	c := sandbox.Check{Name: "network (own namespace)", OK: ok, Detail: detail, Fix: fix, Fatal: wanted}
	if ok {
		c.Detail = detail + "; the computer's network is its own (10.0.2.100): the host's loopback and abstract sockets are out of reach"
	} else if !wanted {
		c.Detail += " (this agent's network is off)"
	} else {
		c.Detail += "; computers with the network on do not start"
	}
	return c
}

// egressCheck says which egress policy the agent's computer runs under.
func egressCheck(agent string, pol egress.Policy, err error) sandbox.Check {
	c := sandbox.Check{Name: "egress policy", OK: err == nil}
	if err != nil {
		c.Detail, c.Fix, c.Fatal = err.Error(), "fix [agents."+agent+"] egress and allow in the config", true
		return c
	}
	switch pol.Mode {
	case egress.Open:
		c.Detail = "open: every connection is allowed and recorded (den network log)"
	case egress.Off:
		c.Detail = "off: the computer has only its loopback"
	default:
		var rules []string
		for _, r := range pol.Allow {
			rules = append(rules, r.String())
		}
		c.Detail = fmt.Sprintf("%s: allowed %s", pol.Mode, strings.Join(rules, ", "))
		if len(rules) == 0 {
			c.Detail = string(pol.Mode) + ": nothing is allowed yet"
		}
		if pol.Mode == egress.Ask {
			c.Detail += "; anything else is asked about"
		}
	}
	return c
}

// limitsCheck says which limits a computer of the agent runs with.
func limitsCheck(ac config.Agent, cgroupsOK bool) sandbox.Check {
	c := sandbox.Check{Name: "limits", OK: true}
	o, err := sessionOptions(ac, &computerFlags{})
	if err != nil {
		c.OK, c.Detail = false, err.Error()
		return c
	}
	l := o.Limits
	size := func(n int64) string {
		if n <= 0 {
			return "unlimited"
		}
		return humanSize(n)
	}
	var parts []string
	if cgroupsOK {
		parts = append(parts, "memory "+size(l.MemoryBytes), fmt.Sprintf("CPU weight %d", l.CPUWeight), fmt.Sprintf("processes %d", l.Pids))
	} else {
		parts = append(parts, "memory and CPU weight not enforced (no cgroups)", fmt.Sprintf("processes %d (RLIMIT_NPROC)", l.Pids))
	}
	parts = append(parts, "/tmp "+size(l.TmpBytes), "disk "+size(l.DiskBytes)+" (measured while commands run)")
	c.Detail = strings.Join(parts, ", ")
	return c
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%d GiB", n>>30)
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d MiB", n>>20)
}

// startCheck starts the agent's computer for real and runs a command.
func startCheck(ctx context.Context, comp *computer.Computer, network bool, pol egress.Policy) sandbox.Check {
	c := sandbox.Check{Name: "computer start", Fatal: true}
	t0 := time.Now()
	s, err := comp.Start(ctx, "doctor", computer.SessionOptions{Network: network, Egress: egress.Scope{Policy: pol}, Limits: computer.DefaultLimits()})
	if err != nil {
		c.Detail = err.Error()
		c.Fix = "see the checks above"
		return c
	}
	defer os.RemoveAll(comp.SessionDir("doctor"))
	defer s.Close()
	res, err := s.Run(ctx, sandbox.Command{Script: "id -u", Timeout: 30 * time.Second})
	if err != nil || res.ExitCode != 0 {
		c.Detail = fmt.Sprintf("a command failed in the computer: %v %s", err, res.Output)
		return c
	}
	c.OK = true
	c.Detail = fmt.Sprintf("started and ran a command in %v (shell %s, uid %s)", time.Since(t0).Round(time.Millisecond), s.Shell(), strings.TrimSpace(res.Output))
	return c
}

// sourceCheck says whether a first start can provision a computer.
func sourceCheck(ctx context.Context, agent, mirror string) sandbox.Check {
	c := sandbox.Check{Name: "rootfs (" + agent + ")", Fatal: true}
	if mirror == "" {
		mirror = rootfs.DefaultAlpineMirror
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodHead, mirror+"/latest-stable/releases/", nil)
	resp, err := http.DefaultClient.Do(req)
	alpineOK := err == nil && resp.StatusCode < 500
	if resp != nil {
		resp.Body.Close()
	}
	_, debErr := exec.LookPath("debootstrap")
	switch {
	case alpineOK:
		c.OK = true
		c.Detail = "not provisioned yet; the first start downloads Alpine from " + mirror
	case debErr == nil:
		c.OK = true
		c.Detail = "not provisioned yet; the Alpine mirror is unreachable, so the first start builds Debian with debootstrap from the host's mirror"
	default:
		c.Detail = "not provisioned yet, the Alpine mirror " + mirror + " is unreachable and debootstrap is missing"
		c.Fix = "set [rootfs] alpine_mirror to a reachable mirror, install debootstrap, or create the computer with --rootfs tar:PATH"
	}
	return c
}

func printReport(g *globals, r report) {
	w := g.stdout
	if r.OK {
		fmt.Fprintf(w, "isolation: %s (%s, backend %s)\n\n", r.Tier, sandbox.Tier(r.Tier).Describe(), r.Backend)
	} else {
		fmt.Fprintf(w, "isolation: UNAVAILABLE: den will not run commands until the failures below are fixed\n\n")
	}
	for _, c := range r.Checks {
		mark := "ok  "
		switch {
		case !c.OK && c.Fatal:
			mark = "FAIL"
		case !c.OK:
			mark = "warn"
		}
		fmt.Fprintf(w, "%s  %s: %s\n", mark, c.Name, c.Detail)
		if !c.OK && c.Fix != "" {
			fmt.Fprintf(w, "      fix: %s\n", c.Fix)
		}
	}
	if r.Tier == sandbox.TierNone {
		fmt.Fprintln(w, "\nWARNING: the proot backend gives NO isolation: commands run with your own rights on this host.")
	}
}

// mcpChecks report the agent's MCP servers: where each runs (a host
// server runs with the user's rights, and is marked so), whether a
// host server's command is there and a remote one has its token. None
// is fatal: den runs commands whatever its MCP servers do.
func mcpChecks(g *globals, agent string) []sandbox.Check {
	f, err := g.mcpFile()
	if err != nil {
		return []sandbox.Check{{Name: "MCP servers", Detail: err.Error(), Fix: "fix " + g.mcpPath() + " (den mcp list names the problem)"}}
	}
	servers := f.For(agent)
	out := []sandbox.Check{{Name: "MCP servers", OK: true, Detail: fmt.Sprintf("%d of %d in %s for agent %s", len(servers), len(f.Servers), g.mcpPath(), agent)}}
	for _, w := range f.Warnings {
		out = append(out, sandbox.Check{Name: "MCP servers", Detail: w, Fix: "see docs/mcp.md for the keys den reads"})
	}
	tokens := &mcpclient.Tokens{Dir: mcpclient.TokenDir(DataDir(g.dataDir))}
	for _, s := range servers {
		c := sandbox.Check{Name: "MCP " + s.Name, OK: true}
		switch {
		case s.Type == mcpclient.Stdio && s.Host:
			c.Detail = "HOST: runs " + s.Command + " on this machine with your rights (clean environment: PATH, HOME and its env only)"
			if !strings.Contains(s.Command, "/") && !strings.Contains(s.Command, "${") {
				if _, err := lookHostPath(s.Command); err != nil {
					c.OK, c.Fix = false, fmt.Sprintf("install %s in %s, or give its full path in mcp.json", s.Command, mcpclient.HostPath)
					c.Detail += ": not found"
				}
			}
		case s.Type == mcpclient.Stdio:
			c.Detail = "runs " + s.Command + " inside the agent's computer (den mcp test " + s.Name + " checks it is installed there)"
		default:
			c.Detail = "reached at " + s.URL + " (" + s.Type + ")"
			if tokens.Has(s) {
				exp, renews := tokens.Expiry(s)
				c.Detail += ", with an OAuth token"
				if renews {
					c.Detail += " (renewed when it expires)"
				} else if !exp.IsZero() && time.Now().After(exp) {
					c.OK, c.Fix = false, "den mcp login "+s.Name
					c.Detail += " that has expired"
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// lookHostPath finds a host server's command as its PATH would.
func lookHostPath(command string) (string, error) {
	for _, dir := range filepath.SplitList(mcpclient.HostPath) {
		p := filepath.Join(dir, command)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// browserChecks report the agent's browser: the programs it needs, and
// what its Chromium uses when one runs (in any den process). None is
// fatal: without a browser, the agent has no browser_use.
func browserChecks(cfg *config.Config, dataDir, agent string) []sandbox.Check {
	if !cfg.Agent(agent).BrowserOn() {
		return []sandbox.Check{{Name: "browser", OK: true, Detail: "off for agent " + agent + " (agents." + agent + ".browser = false)"}}
	}
	b, err := browser.New(browser.Options{Dir: filepath.Join(dataDir, "agents", agent, "browser"), Chromium: cfg.Browser.Chromium})
	if err != nil {
		return []sandbox.Check{{Name: "browser", Detail: err.Error()}}
	}
	defer b.Close()
	checks := b.Check()
	m, err := session.BrowserMemory(dataDir, agent)
	c := sandbox.Check{Name: "browser memory", OK: err == nil}
	switch {
	case err != nil:
		c.Detail = err.Error()
	case !m.Running:
		c.Detail = "not running (Chromium starts at the agent's first browser action, and stops when idle)"
	default:
		c.Detail = fmt.Sprintf("%s in %d processes (resident %s, shared pages counted in each)", config.FormatBytes(m.PSS), m.Processes, config.FormatBytes(m.RSS))
	}
	if err == nil {
		c.Detail += "; " + browserLimit(cfg.Browser)
	}
	return append(checks, c)
}

// browserLimit says what bounds the memory of the agent's Chromium.
func browserLimit(b config.Browser) string {
	memory, _, err := b.Limits()
	switch {
	case err != nil:
		return err.Error()
	case memory < 0:
		return "no limit ([browser] memory = \"unlimited\")"
	case !cgroup.Detect().Usable():
		return "no limit: den cannot make cgroups here (see resource limits)"
	case memory == 0:
		memory = browser.DefaultMemory
	}
	return "limit " + config.FormatBytes(memory) + " ([browser] memory)"
}
