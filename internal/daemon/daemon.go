// Package daemon wires den serve: the store, the runtime that owns the
// sessions, the HTTP API behind its auth guard, TLS, and the order in
// which they start and stop. It is the one place where the subsystems
// meet; cmd/den's command line only parses flags and calls it.
//
// Start: the store opens (migrating it), the runtime starts and, once a
// second, repairs sessions a killed den left running and runs queued
// messages; Web Push (unless [server] push = false) loads or makes its
// key and follows the events it sends; the guard loads (or makes) the
// token; the daily memory rollups and the scheduled backups ([backup]
// in the config) start; den's MCP server is made, to serve /mcp; the
// listener opens; the scheduler (package schedule, wired in
// schedule.go) takes the lead of the data dir's jobs.
// Stop (the context of Serve ends, on SIGTERM): the listener closes and
// event streams end, the scheduler starts nothing more, the rollups and
// backups stop (a backup midway leaves no file), running turns end at
// their next turn boundary within Options.Grace (the rest are canceled
// and their calls recorded; scheduled runs among them are recorded
// interrupted, to run again at the next start), pushes in flight are
// canceled, computers stop, the store closes.
package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/mcpserver"
	"den.dev/den/internal/metrics"
	"den.dev/den/internal/push"
	"den.dev/den/internal/schedule"
	"den.dev/den/internal/secret"
	"den.dev/den/internal/server"
	"den.dev/den/internal/server/auth"
	"den.dev/den/internal/server/tlscert"
	"den.dev/den/internal/session"
	"den.dev/den/internal/store"
	"den.dev/den/internal/webpush"
)

// DefaultListen is where den serve listens unless told otherwise.
const DefaultListen = "127.0.0.1:7700"

// Options configure a daemon.
type Options struct {
	DataDir    string
	ConfigPath string
	Config     *config.Config
	// Computer opens an agent's computer (see session.Options).
	Computer func(ctx context.Context, agent string) (*computer.Computer, computer.SessionOptions, error)
	// Listen is host:port ("" for the config's, else DefaultListen).
	Listen string
	// TLS: SelfSigned makes and keeps a certificate for the host's
	// names; CertFile and KeyFile name the user's own.
	SelfSigned        bool
	CertFile, KeyFile string
	// Grace is how long running turns get to reach a turn boundary when
	// den stops (default 20 s, inside systemd's 30 s stop timeout).
	Grace   time.Duration
	Version string
	Log     *slog.Logger
	// Env reads DEN_TOKEN (os.Getenv if nil).
	Env func(string) string
}

// Daemon is a running den serve.
type Daemon struct {
	o       Options
	st      *store.Store
	rt      *session.Runtime
	srv     *server.Server
	guard   *auth.Guard
	http    *http.Server
	ln      net.Listener
	tls     bool
	tlsInfo tlscert.Info
	log     *slog.Logger
	lock    *os.File // DATA/serve.lock, held while serving

	streams    context.Context // request contexts: ended at stop, so event streams end
	endStreams context.CancelFunc

	metrics  *metrics.Metrics
	observed *session.Subscription // every event, for the metrics
	counted  chan struct{}         // closed when the metrics stop counting

	push    *push.Service         // nil when push = false
	pushed  *session.Subscription // the events push sends
	pushing chan struct{}         // closed when push stops reading them

	endRollups context.CancelFunc // stops the daily memory rollups
	rolling    chan struct{}      // closed when they stopped

	endBackups   context.CancelFunc // stops the scheduled backups
	backingUp    chan struct{}      // closed when they stopped
	sched        *schedule.Engine
	book         *schedule.Book
	runner       *runner
	changes      *session.Subscription // changes to jobs, which wake the scheduler
	endScheduler context.CancelFunc    // ends its planning
	scheduling   chan struct{}         // closed when it stopped

	once sync.Once
}

// New starts everything but the serving loop: the listener is open when
// it returns.
func New(o Options) (*Daemon, error) {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Grace <= 0 {
		o.Grace = 20 * time.Second
	}
	cfg := o.Config
	if o.Listen == "" {
		o.Listen = cfg.Server.Listen
	}
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if !o.SelfSigned && o.CertFile == "" {
		o.SelfSigned = cfg.Server.TLS == "self-signed"
		o.CertFile, o.KeyFile = cfg.Server.TLSCert, cfg.Server.TLSKey
	}
	idle, err := cfg.Server.IdleStopAfter()
	if err != nil {
		return nil, err
	}
	proxies, err := cfg.Server.Proxies()
	if err != nil {
		return nil, err
	}
	d := &Daemon{o: o, log: o.Log}
	ok := false
	defer func() {
		if !ok {
			d.close()
		}
	}()
	if d.lock, err = lockServe(o.DataDir); err != nil {
		return nil, err
	}
	if d.st, err = store.Open(filepath.Join(o.DataDir, "den.db")); err != nil {
		return nil, err
	}
	d.rt, err = session.New(session.Options{Store: d.st, DataDir: o.DataDir, Config: cfg, Computer: o.Computer,
		Holder: "den serve", IdleStop: idle, Watch: true, Devices: true, Version: o.Version, Log: o.Log})
	if err != nil {
		return nil, err
	}
	d.rt.Sync()
	last, err := d.rt.LastEventID(context.Background())
	if err != nil {
		return nil, err
	}
	d.count(last)
	if err := d.newScheduler(); err != nil {
		return nil, err
	}
	if cfg.Server.PushOn() {
		if err := d.startPush(last); err != nil {
			return nil, err
		}
	}
	var tlsConfig *tls.Config
	if o.SelfSigned || o.CertFile != "" {
		if tlsConfig, err = d.loadTLS(); err != nil {
			return nil, err
		}
		d.tls = true
	}
	d.guard, err = auth.New(auth.Options{DataDir: o.DataDir, Env: o.Env, TLS: d.tls, AllowedHosts: cfg.Server.AllowedHosts,
		TrustedProxies: proxies, Public: server.IsPublic,
		Report: func(err error) { o.Log.Error("the token file cannot be used", "err", err) }})
	if err != nil {
		return nil, err
	}
	rctx, cancel := context.WithCancel(context.Background())
	d.endRollups, d.rolling = cancel, make(chan struct{})
	go func() {
		defer close(d.rolling)
		d.rollups(rctx)
	}()
	bctx, cancelBackups := context.WithCancel(context.Background())
	d.endBackups, d.backingUp = cancelBackups, make(chan struct{})
	go func() {
		defer close(d.backingUp)
		d.backups(bctx)
	}()
	mcp := mcpserver.New(mcpserver.Options{Runtime: d.rt, Version: o.Version, Log: o.Log})
	d.srv = server.New(server.Options{Runtime: d.rt, Store: d.st, ConfigPath: o.ConfigPath, Reload: d.reload,
		Version: o.Version, Log: o.Log, Metrics: d.metrics, Push: d.push, RotateToken: d.guard.Rotate, MCP: mcp,
		Secrets: secret.Open(o.DataDir), Schedules: d.book})
	d.streams, d.endStreams = context.WithCancel(context.Background())
	d.http = &http.Server{
		Handler:           d.logged(d.guard.Wrap(d.srv.Handler())),
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       5 * time.Minute, // uploads from a phone on a slow link
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return d.streams },
		ErrorLog:          slog.NewLogLogger(o.Log.Handler(), slog.LevelWarn),
	}
	if d.ln, err = net.Listen("tcp", o.Listen); err != nil {
		return nil, fmt.Errorf("listen on %s: %w", o.Listen, err)
	}
	if tlsConfig != nil {
		d.ln = tls.NewListener(d.ln, tlsConfig)
	}
	d.lock.Truncate(0)
	fmt.Fprintf(d.lock, "pid %d %s\n", os.Getpid(), d.BaseURL())
	d.startScheduler(last)
	ok = true
	return d, nil
}

func (d *Daemon) loadTLS() (*tls.Config, error) {
	var cert tls.Certificate
	var err error
	if d.o.CertFile != "" {
		if cert, err = tls.LoadX509KeyPair(d.o.CertFile, d.o.KeyFile); err != nil {
			return nil, fmt.Errorf("TLS certificate: %w", err)
		}
	} else {
		cert, d.tlsInfo, err = tlscert.LoadOrCreate(filepath.Join(d.o.DataDir, "tls"), tlscert.HostNames(), time.Now())
		if err != nil {
			return nil, err
		}
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// count feeds the metrics every event after last: this daemon's and
// those of den run and den chat on the same data dir.
func (d *Daemon) count(last int64) {
	d.metrics = metrics.New()
	d.observed = d.rt.Subscribe("", last, nil)
	d.counted = make(chan struct{})
	go func() {
		defer close(d.counted)
		for {
			e, err := d.observed.Next(context.Background())
			if err != nil {
				if !errors.Is(err, session.ErrClosed) {
					d.log.Warn("metrics: events not read", "err", err)
				}
				return
			}
			d.metrics.Observe(e)
		}
	}()
}

// stopCounting ends the metrics' subscription and waits for it.
func (d *Daemon) stopCounting() {
	if d.observed != nil {
		d.observed.Close()
		<-d.counted
	}
}

// pushClient posts to push services: it follows no redirect (a push
// service answers, it does not send elsewhere), and each attempt has a
// deadline.
func pushClient() *http.Client {
	return &http.Client{
		Transport:     http.DefaultTransport.(*http.Transport).Clone(),
		Timeout:       30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// startPush loads (or makes) the VAPID key and sends the events after
// last that make notifications to the subscribed browsers. Its own
// goroutine reads them; sending never holds it up.
func (d *Daemon) startPush(last int64) error {
	keys, err := webpush.LoadKeys(filepath.Join(d.o.DataDir, "push"))
	if err != nil {
		return fmt.Errorf("%w (or set [server] push = false)", err)
	}
	d.push = push.New(push.Options{Store: d.st, Keys: keys, Client: pushClient(), Log: d.log,
		Contact: func() string { return d.rt.Config().Server.PushContact },
		InUse:   func() bool { return d.rt.Devices().InUse(time.Now()) }})
	d.pushed = d.rt.Subscribe("", last, d.pushWanted)
	d.pushing = make(chan struct{})
	go func() {
		defer close(d.pushing)
		for {
			e, err := d.pushed.Next(context.Background())
			if err != nil {
				if !errors.Is(err, session.ErrClosed) {
					d.log.Warn("push: events not read", "err", err)
				}
				return
			}
			d.push.Handle(e)
		}
	}()
	return nil
}

// stopPush ends push's subscription, waits for its reader, then cancels
// the sends in flight and waits for them.
func (d *Daemon) stopPush() {
	if d.pushed != nil {
		d.pushed.Close()
		<-d.pushing
	}
	if d.push != nil {
		d.push.Close()
	}
}

// reload reads the config file again after the API changed it.
func (d *Daemon) reload() error {
	cfg, err := config.Load(d.o.ConfigPath, false)
	if err != nil {
		return err
	}
	d.rt.SetConfig(cfg)
	return nil
}

// logged logs each request: method, path (never the query, which may
// hold a token), status and duration.
func (d *Daemon) logged(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		d.log.Info("request", "method", r.Method, "path", r.URL.Path, "status", rec.status,
			"ms", time.Since(start).Milliseconds(), "client", d.guard.ClientIP(r).String())
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Serve serves until ctx ends, then stops everything in order.
func (d *Daemon) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- d.http.Serve(d.ln) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	d.Stop()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Stop stops serving and closes everything; it is safe to call more
// than once.
func (d *Daemon) Stop() {
	d.once.Do(func() {
		d.log.Info("den serve: stopping", "grace", d.o.Grace.String())
		d.endStreams()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		d.http.Shutdown(sctx)
		cancel()
		d.stopRollups()
		d.stopBackups()
		d.stopPlanning()
		d.rt.Shutdown(d.o.Grace)
		d.waitScheduler()
		d.stopCounting()
		d.stopPush()
		d.st.Close()
		d.lock.Close()
		d.log.Info("den serve: stopped")
	})
}

// stopRollups ends the memory rollups and waits for them.
func (d *Daemon) stopRollups() {
	if d.endRollups != nil {
		d.endRollups()
		<-d.rolling
	}
}

// stopBackups ends the scheduled backups (a backup midway leaves no
// file) and waits for them.
func (d *Daemon) stopBackups() {
	if d.endBackups != nil {
		d.endBackups()
		<-d.backingUp
	}
}

// close undoes a New that failed halfway.
func (d *Daemon) close() {
	d.stopRollups()
	d.stopBackups()
	if d.lock != nil {
		d.lock.Close()
	}
	if d.ln != nil {
		d.ln.Close()
	}
	d.stopCounting()
	d.stopPush()
	if d.rt != nil {
		d.rt.Close()
	}
	if d.st != nil {
		d.st.Close()
	}
}

// Addr is the address listened on.
func (d *Daemon) Addr() net.Addr { return d.ln.Addr() }

// BaseURL is the daemon's URL on this machine.
func (d *Daemon) BaseURL() string {
	scheme := "http"
	if d.tls {
		scheme = "https"
	}
	return scheme + "://" + d.ln.Addr().String()
}

// TLS reports whether the daemon serves https, and the self-signed
// certificate's facts when it made one.
func (d *Daemon) TLS() (bool, tlscert.Info) { return d.tls, d.tlsInfo }

// LoginURL is url (a way to reach the daemon, such as the machine's LAN
// address) with the token: to open once on each device.
func (d *Daemon) LoginURL(url string) (string, error) { return d.guard.LoginURL(url) }

// Loopback reports whether addr (host:port) listens on loopback only.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Runtime is the daemon's runtime.
func (d *Daemon) Runtime() *session.Runtime { return d.rt }

// Routes is the API's route table.
func (d *Daemon) Routes() []server.Route { return d.srv.Routes() }

// lockServe takes DATA/serve.lock: one den serve per data dir. The
// kernel releases it when den ends, however it ends.
func lockServe(dataDir string) (*os.File, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dataDir, serveLock), os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("den serve: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		b := make([]byte, 200)
		n, _ := f.ReadAt(b, 0)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("another den serve runs on %s (%s)", dataDir, strings.TrimSpace(string(b[:n])))
		}
		return nil, fmt.Errorf("den serve: lock %s: %w", serveLock, err)
	}
	return f, nil
}

const serveLock = "serve.lock"

// Lock takes the data dir's lock as den serve does, for a command that
// must not run beside a den serve (den restore): it fails while one
// runs, and none starts until release is called.
func Lock(dataDir string) (release func(), err error) {
	f, err := lockServe(dataDir)
	if err != nil {
		return nil, err
	}
	f.Truncate(0)
	fmt.Fprintf(f, "pid %d\n", os.Getpid())
	return func() { f.Close() }, nil
}

// Serving reports whether a den serve runs on dataDir, and its URL.
func Serving(dataDir string) (bool, string) {
	f, err := os.OpenFile(filepath.Join(dataDir, serveLock), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false, ""
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err == nil {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return false, ""
	}
	b := make([]byte, 200)
	n, _ := f.ReadAt(b, 0)
	fields := strings.Fields(string(b[:n]))
	if len(fields) == 3 {
		return true, fields[2]
	}
	return true, ""
}
