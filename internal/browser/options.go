package browser

import (
	"fmt"
	"path/filepath"
	"time"

	"den.dev/den/internal/sandbox/cgroup"
)

// Defaults of Options.
const (
	DefaultMaxTabs      = 5
	DefaultTabIdle      = 30 * time.Minute
	DefaultIdle         = 10 * time.Minute
	DefaultTimeout      = 30 * time.Second
	MaxTimeout          = 5 * time.Minute
	DefaultTakeoverWait = 5 * time.Minute
	DefaultMaxDownload  = 1 << 30
	DefaultSnapshotSize = 16000 // characters per snapshot page: about 4,000 tokens
	DefaultMemory       = 2 << 30
	DefaultPids         = 4096
)

// Options configure an agent's Browser.
type Options struct {
	// Dir is the host folder of the agent's browser
	// (DATA/agents/AGENT/browser): profile/ holds its cookies, logins
	// and site data, downloads/ what Chromium downloads until den hands
	// it to the session, uploads/ the files given to pages. Only den and
	// Chromium see it; the computer never does.
	Dir string

	// Chromium, Bwrap and Nsenter name the programs; empty means found
	// on this host.
	Chromium, Bwrap, Nsenter string

	// TrustSPKI are base64 SHA-256 hashes of public keys whose
	// certificates Chromium accepts as if a root it trusts had signed
	// them (--ignore-certificate-errors-spki-list): the computer's own
	// CA, with which den speaks TLS for hosts a secret is bound to.
	TrustSPKI []string

	// MaxTabs is the number of tabs a session may have open (5).
	MaxTabs int
	// TabIdle closes a tab no action used for that long (30 min).
	TabIdle time.Duration
	// Idle stops Chromium when no action used it for that long (10 min).
	Idle time.Duration
	// Timeout bounds an action that sets none (30 s); no action runs
	// longer than MaxTimeout.
	Timeout time.Duration
	// TakeoverWait is how long an agent's action waits while the user
	// controls the browser (5 min).
	TakeoverWait time.Duration
	// MaxDownload is the largest download kept (1 GiB); a larger one is
	// cancelled.
	MaxDownload int64
	// SnapshotSize is the characters of a snapshot page (16,000: about
	// 4,000 tokens).
	SnapshotSize int

	// Group makes a control group with limits l for one run of
	// Chromium: each start gets a new group, removed when that Chromium
	// stops. A page that uses more memory than the limit gets its
	// renderer (or Chromium) killed by the kernel inside the group, and
	// the next result says the tab (or the browser) crashed. nil, or an
	// error (logged once), runs Chromium without limits of its own.
	Group func(l cgroup.Limits) (*cgroup.Group, error)
	// Memory bounds the memory of all of Chromium's processes together
	// (2 GiB; negative: no limit), and Pids their processes and threads
	// (4096), when Group is set.
	Memory, Pids int64

	// Log receives Chromium's and den's diagnostics about the browser;
	// nil discards them.
	Log func(string)
}

func (o *Options) fill() error {
	if o.Dir == "" || !filepath.IsAbs(o.Dir) {
		return fmt.Errorf("browser: folder %q must be an absolute path", o.Dir)
	}
	if o.MaxTabs <= 0 {
		o.MaxTabs = DefaultMaxTabs
	}
	if o.TabIdle <= 0 {
		o.TabIdle = DefaultTabIdle
	}
	if o.Idle <= 0 {
		o.Idle = DefaultIdle
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	o.Timeout = min(o.Timeout, MaxTimeout)
	if o.TakeoverWait <= 0 {
		o.TakeoverWait = DefaultTakeoverWait
	}
	if o.MaxDownload <= 0 {
		o.MaxDownload = DefaultMaxDownload
	}
	if o.SnapshotSize <= 0 {
		o.SnapshotSize = DefaultSnapshotSize
	}
	if o.Memory == 0 {
		o.Memory = DefaultMemory
	}
	if o.Pids <= 0 {
		o.Pids = DefaultPids
	}
	return nil
}

// limits are the limits of Chromium's group.
func (o *Options) limits() cgroup.Limits {
	return cgroup.Limits{MemoryBytes: max(o.Memory, 0), Pids: o.Pids}
}

func (o *Options) logf(format string, args ...any) {
	if o.Log != nil {
		o.Log(fmt.Sprintf(format, args...))
	}
}
