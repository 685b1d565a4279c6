// Package cli is den's command line: it parses flags, wires the
// configuration, sandbox backend and computers together, and runs one
// command. cmd/den's main calls Main and nothing else.
//
// Exit codes: a command run in a computer (den exec) exits with that
// command's code (124 on timeout, 130 when interrupted); den's own
// failures exit 125, and bad usage exits 2.
package cli

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"den.dev/den/internal/checkpoint"
	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/egress"
	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/bwrap"
	"den.dev/den/internal/sandbox/netns"
	"den.dev/den/internal/sandbox/proot"
)

// Exit codes of den's own.
const (
	ExitUsage   = 2
	ExitFailure = 125
)

// exitError carries a command's exit code out of cobra.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// Main runs den with os.Args and exits.
func Main() {
	proot.MaybeReaper()
	netns.MaybeHelper()
	checkpoint.MaybeHelper()
	os.Exit(Run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// handleSignals cancels the run on SIGTERM, and on SIGINT unless a
// command took interrupts over (den chat stops the current turn
// instead).
func handleSignals(ctx context.Context, g *globals) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		for {
			select {
			case sig := <-ch:
				g.mu.Lock()
				hook := g.onInterrupt
				g.mu.Unlock()
				if sig == os.Interrupt && hook != nil && hook() {
					continue
				}
				cancel()
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		<-finished
		cancel()
	}
}

// globals are the flags every command takes.
type globals struct {
	dataDir    string
	configPath string
	backend    string
	stdin      io.Reader
	stdout     io.Writer
	stderr     io.Writer

	mu          sync.Mutex
	onInterrupt func() bool // handles SIGINT when set; false: cancel the run
}

// Run runs den with args and returns the exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	g := &globals{stdin: stdin, stdout: stdout, stderr: stderr}
	ctx, stop := handleSignals(ctx, g)
	defer stop()
	root := &cobra.Command{
		Use:           "den",
		Short:         "A self-hosted AI agent with a real, isolated Linux computer",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&g.dataDir, "data-dir", "", "data directory (default $DEN_HOME, else $XDG_DATA_HOME/den)")
	pf.StringVar(&g.configPath, "config", "", "config file (default $XDG_CONFIG_HOME/den/config.toml)")
	pf.StringVar(&g.backend, "backend", "", `sandbox backend: "bwrap" (default) or "proot" (no isolation)`)
	root.AddCommand(approveCmd(g), denyCmd(g), approvalsCmd(g), rulesCmd(g), auditCmd(g), networkCmd(g), secretCmd(g))
	root.AddCommand(runCmd(g), chatCmd(g), sessionsCmd(g), usageCmd(g), configCmd(g), execCmd(g), shCmd(g), doctorCmd(g), computerCmd(g))
	root.AddCommand(serveCmd(g), tokenCmd(g), openCmd(g), attachCmd(g), serviceCmd(g))
	root.AddCommand(memoryCmd(g), skillsCmd(g), scheduleCmd(g))
	root.AddCommand(backupCmd(g), restoreCmd(g))
	// den mcp: the client's commands (mcp.go); a den mcp serve adds
	// itself to the command mcpCmd returns, here.
	mcp := mcpCmd(g)
	root.AddCommand(mcp)
	mcp.AddCommand(mcpServeCmd(g))
	err := root.ExecuteContext(ctx)
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case isUsage(err):
		fmt.Fprintln(stderr, "den:", err)
		return ExitUsage
	default:
		fmt.Fprintln(stderr, "den:", err)
		return ExitFailure
	}
}

// usageError marks bad command-line input.
type usageError struct{ error }

func isUsage(err error) bool {
	var u usageError
	if errors.As(err, &u) {
		return true
	}
	// cobra's own flag and argument errors.
	msg := err.Error()
	for _, p := range []string{"unknown flag", "unknown command", "unknown shorthand", "invalid argument", "flag needs an argument", "accepts ", "requires at least"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}

// rootCAs is the host's certificate authorities and those of files
// (nil when there are no files: the host's, as Go finds them).
func rootCAs(files []string) (*x509.CertPool, error) {
	if len(files) == 0 {
		return nil, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("config: network.ca_files: %w", err)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("config: network.ca_files: %s holds no PEM certificate", f)
		}
	}
	return pool, nil
}

// DataDir resolves the data dir: flag, else $DEN_HOME, else
// $XDG_DATA_HOME/den, else ~/.local/share/den.
func DataDir(flag string) string {
	if flag != "" {
		return flag
	}
	if d := os.Getenv("DEN_HOME"); d != "" {
		return d
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "den")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "share", "den")
}

func (g *globals) config() (*config.Config, error) {
	if g.configPath != "" {
		return config.Load(g.configPath, true)
	}
	return config.Load(config.DefaultPath(), false)
}

// newBackend builds the chosen backend. It never falls back from bwrap
// to proot: an unavailable sandbox is an error that says what to do.
func newBackend(name string, cfg *config.Config) (sandbox.Backend, error) {
	if name == "" {
		name = cfg.Sandbox.Backend
	}
	switch name {
	case "", "bwrap":
		return bwrap.New(cfg.Sandbox.Bwrap)
	case "proot":
		return proot.New(cfg.Sandbox.Proot)
	}
	return nil, usageError{fmt.Errorf("unknown backend %q: want bwrap or proot", name)}
}

// manager wires config, backend and computers.
func (g *globals) manager() (*computer.Manager, *config.Config, error) {
	cfg, err := g.config()
	if err != nil {
		return nil, nil, err
	}
	b, err := newBackend(g.backend, cfg)
	if err != nil {
		return nil, cfg, err
	}
	m, err := computer.New(DataDir(g.dataDir), b)
	if err != nil {
		return nil, cfg, err
	}
	roots, err := rootCAs(cfg.Network.CAFiles)
	if err != nil {
		return nil, cfg, err
	}
	m.Egress = egress.New(egress.Options{Hosts: cfg.Network.Hosts, RootCAs: roots})
	m.RootfsOptions.AlpineMirror = cfg.Rootfs.AlpineMirror
	m.RootfsOptions.DebianMirror = cfg.Rootfs.DebianMirror
	m.RootfsOptions.UbuntuMirror = cfg.Rootfs.UbuntuMirror
	return m, cfg, nil
}
