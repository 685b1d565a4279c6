package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/daemon"
	"den.dev/den/internal/event"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/server/auth"
	"den.dev/den/internal/session"
	"den.dev/den/internal/store"
)

// Version is den's version, as the health route and den serve report it.
var Version = "0.10.0-dev"

func serveCmd(g *globals) *cobra.Command {
	var listen, tlsMode, cert, key string
	c := &cobra.Command{
		Use:   "serve",
		Short: "Run den as a daemon: the HTTP API and event streams for every face",
		Long: `Run den's daemon: it owns the sessions, runs their turns, and serves the
HTTP API (docs/server.md) on --listen (default 127.0.0.1:7700, or the
config's server.listen). Every route but /api/v1/health needs the token
(den token prints it). On a terminal, den serve prints the URL that logs a
browser in; den open opens it. Stop it with Ctrl-C or SIGTERM: running
turns end at their next turn boundary.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if (cert == "") != (key == "") {
				return usageError{errors.New("--tls-cert and --tls-key go together")}
			}
			if tlsMode != "" && tlsMode != "self-signed" {
				return usageError{fmt.Errorf("--tls %q: want self-signed", tlsMode)}
			}
			if tlsMode != "" && cert != "" {
				return usageError{errors.New("--tls self-signed and --tls-cert exclude each other")}
			}
			return serve(cmd.Context(), g, listen, tlsMode == "self-signed", cert, key)
		},
	}
	c.Flags().StringVar(&listen, "listen", "", "address to listen on, host:port (default 127.0.0.1:7700)")
	c.Flags().StringVar(&tlsMode, "tls", "", `"self-signed": serve https with a certificate den makes for this machine's names`)
	c.Flags().StringVar(&cert, "tls-cert", "", "serve https with this certificate (PEM)")
	c.Flags().StringVar(&key, "tls-key", "", "the certificate's private key (PEM)")
	return c
}

func serve(ctx context.Context, g *globals, listen string, selfSigned bool, cert, key string) error {
	cfg, err := g.config()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(g.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	d, err := daemon.New(daemon.Options{
		DataDir: DataDir(g.dataDir), ConfigPath: g.configFile(), Config: cfg,
		Computer: func(ctx context.Context, agentName string) (*computer.Computer, computer.SessionOptions, error) {
			return (&computerFlags{agent: agentName}).open(ctx, g)
		},
		Listen: listen, SelfSigned: selfSigned, CertFile: cert, KeyFile: key, Version: Version, Log: log,
	})
	if err != nil {
		return err
	}
	addr := d.Addr().String()
	tlsOn, info := d.TLS()
	log.Info("den serve: listening", "url", d.BaseURL(), "version", Version)
	if !daemon.Loopback(addr) && !tlsOn {
		fmt.Fprintf(g.stderr, "den: warning: listening on %s without TLS: the token and everything you send cross the network in clear text, "+
			"readable by anyone on it. Use --tls self-signed, or Tailscale or a reverse proxy with TLS (docs/server.md).\n", addr)
	}
	if info.Fingerprint != "" {
		fmt.Fprintf(g.stderr, "den: TLS certificate %s (SHA-256), valid until %s; compare it when your phone asks\n",
			info.Fingerprint, info.NotAfter.Format("2006-01-02"))
	}
	// The login URL holds the token: only ever on a terminal, never in a
	// log or the journal.
	if isTerminal(g.stdout) {
		for _, base := range reachURLs(d.BaseURL(), addr) {
			u, err := d.LoginURL(base)
			if err != nil {
				return err
			}
			fmt.Fprintf(g.stdout, "open on your devices: %s\n", u)
		}
	} else {
		fmt.Fprintln(g.stderr, "den: the login URL is printed only on a terminal: run den open, or den token")
	}
	return d.Serve(ctx)
}

// reachURLs are the URLs by which the daemon at addr can be reached:
// the base itself, or, when it listens on every address, this machine's
// name and its LAN addresses.
func reachURLs(base, addr string) []string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return []string{base}
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsUnspecified() {
		return []string{base}
	}
	scheme := strings.SplitN(base, "://", 2)[0]
	urls := []string{scheme + "://" + net.JoinHostPort("127.0.0.1", port)}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok || n.IP.IsLoopback() || n.IP.IsLinkLocalUnicast() || (ip.To4() != nil && n.IP.To4() == nil) {
			continue
		}
		urls = append(urls, scheme+"://"+net.JoinHostPort(n.IP.String(), port))
	}
	return urls
}

func tokenCmd(g *globals) *cobra.Command {
	var rotate bool
	c := &cobra.Command{
		Use:   "token",
		Short: "Print the daemon's access token (made on first use); --rotate replaces it",
		Long: `Print the token every route of den serve but health needs (as
Authorization: Bearer TOKEN, or once as /?token=TOKEN in a browser, which
then keeps a cookie). It is kept in DATA/token, mode 0600; DEN_TOKEN in
the environment overrides it. --rotate makes a new one: the old token and
every browser logged in with it stop working at once, also on a running
den serve.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := DataDir(g.dataDir)
			if rotate {
				if os.Getenv("DEN_TOKEN") != "" {
					return usageError{errors.New("DEN_TOKEN is set: the token is the environment's, not den's to rotate")}
				}
				t, err := auth.Rotate(dir)
				if err != nil {
					return err
				}
				fmt.Fprintln(g.stdout, t)
				return nil
			}
			t, err := auth.LoadToken(dir, os.Getenv)
			if err != nil {
				return err
			}
			fmt.Fprintln(g.stdout, t)
			return nil
		},
	}
	c.Flags().BoolVar(&rotate, "rotate", false, "replace the token, ending every browser's login")
	return c
}

func openCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "open",
		Short: "Open den's web face in your browser, logged in",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := g.config()
			if err != nil {
				return err
			}
			u, err := localLoginURL(DataDir(g.dataDir), cfg)
			if err != nil {
				return err
			}
			opener, err := exec.LookPath("xdg-open")
			if err != nil {
				fmt.Fprintf(g.stdout, "open this in your browser: %s\n", u)
				return nil
			}
			open := exec.Command(opener, u)
			open.Stdout, open.Stderr = io.Discard, io.Discard
			if err := open.Start(); err != nil {
				return fmt.Errorf("xdg-open: %w", err)
			}
			go open.Wait()
			fmt.Fprintln(g.stdout, "opened den in your browser")
			return nil
		},
	}
}

// localLoginURL is the login URL of the daemon the config describes, as
// this machine reaches it.
func localLoginURL(dataDir string, cfg *config.Config) (string, error) {
	listen := firstNonEmpty(cfg.Server.Listen, daemon.DefaultListen)
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return "", fmt.Errorf("config: server.listen %q: %w", listen, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	scheme := "http"
	if cfg.Server.TLS != "" || cfg.Server.TLSCert != "" {
		scheme = "https"
	}
	t, err := auth.LoadToken(dataDir, os.Getenv)
	if err != nil {
		return "", err
	}
	return scheme + "://" + net.JoinHostPort(host, port) + "/?token=" + t, nil
}

func attachCmd(g *globals) *cobra.Command {
	var follow bool
	c := &cobra.Command{
		Use:   "attach SESSION",
		Short: "Follow a session's events as they happen (den run, den chat or den serve runs it), and answer its approvals",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return attach(cmd.Context(), g, args[0], follow)
		},
	}
	c.Flags().BoolVar(&follow, "follow", false, "keep following after the running turn ends")
	return c
}

func attach(ctx context.Context, g *globals, id string, follow bool) error {
	cfg, err := g.config()
	if err != nil {
		return err
	}
	st, err := g.openStore()
	if err != nil {
		return err
	}
	defer st.Close()
	sess, err := st.GetSession(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return usageError{fmt.Errorf("no session %q", id)}
	}
	if err != nil {
		return err
	}
	rt, err := session.New(session.Options{Store: st, DataDir: DataDir(g.dataDir), Config: cfg, Holder: "den attach",
		Computer: func(context.Context, string) (*computer.Computer, computer.SessionOptions, error) {
			return nil, computer.SessionOptions{}, errors.New("den attach runs no turns")
		}})
	if err != nil {
		return err
	}
	defer rt.Close()
	last, err := rt.LastEventID(ctx)
	if err != nil {
		return err
	}
	if !follow && (sess.Status == "" || sess.Status == event.Idle) {
		fmt.Fprintf(g.stdout, "session %s is idle (%s); --follow waits for its next turn\n", id, sess.Title)
		return nil
	}
	fmt.Fprintf(g.stdout, "following session %s (%s) · Ctrl-C to stop\n", id, sess.Title)
	color := isTerminal(g.stdout)
	view := &chatView{w: g.stdout, color: color}
	readLine, stopReading := lineReader(g.stdin)
	defer stopReading()
	var mu sync.Mutex
	_, prompt := terminalQuestions(view.w, &mu, view.newline, readLine)
	sub := rt.Subscribe(id, last, nil)
	defer sub.Close()
	var asking sync.WaitGroup
	defer asking.Wait()
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	questions := map[string]context.CancelFunc{} // approvals asked on the terminal
	defer func() {
		for _, stop := range questions {
			stop()
		}
	}()
	for {
		e, err := sub.Next(ctx)
		if err != nil {
			return nil // Ctrl-C
		}
		view.emit(e)
		switch e.Type {
		case "approval_request":
			var req permission.ApprovalRequest
			if json.Unmarshal(e.Data, &req) != nil {
				continue
			}
			if !isTerminal(g.stdin) {
				fmt.Fprintf(g.stdout, "  ! approval needed: %s (den approve %s)\n", req.Question(), req.ID)
				continue
			}
			qctx, stop := context.WithCancel(actx)
			questions[req.ID] = stop
			asking.Go(func() {
				ans, err := prompt(qctx, &req)
				if err != nil {
					return
				}
				if _, err := rt.Answer(actx, req.ID, ans.Approve, ans.Scope, "user"); err != nil && !errors.Is(err, store.ErrAnswered) {
					fmt.Fprintln(g.stdout, "  answer not recorded:", err)
				}
			})
		case "approval_resolved":
			// Answered elsewhere: stop asking here.
			var res struct{ ID string }
			if json.Unmarshal(e.Data, &res) == nil && questions[res.ID] != nil {
				questions[res.ID]()
				delete(questions, res.ID)
			}
		case "status":
			var s event.Status
			json.Unmarshal(e.Data, &struct {
				Status *string `json:"status"`
			}{&s.Status})
			if !follow && (s.Status == event.Idle || s.Status == event.Error || s.Status == event.Interrupted) {
				view.newline()
				fmt.Fprintf(g.stdout, "%s\n", view.dim("(the turn ended: "+s.Status+")"))
				return nil
			}
		}
	}
}
