package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// Backup is den serve's scheduled backups (see docs/backup.md):
//
//	[backup]
//	every = "24h"             # unset or "0": none
//	dir = "/mnt/usb/den"      # default DATA/backups
//	keep = 7                  # the newest 7 are kept (default)
//	exclude_computers = false # leave the agents' root filesystems out
//	with_secrets = false      # keep the keys, the token, logins (guard the folder)
type Backup struct {
	Every            string `toml:"every"`
	Dir              string `toml:"dir"`
	Keep             int    `toml:"keep"`
	ExcludeComputers bool   `toml:"exclude_computers"`
	WithSecrets      bool   `toml:"with_secrets"`
}

// DefaultBackupKeep is how many scheduled backups are kept when keep
// is unset.
const DefaultBackupKeep = 7

// Interval parses Every: 0 when scheduled backups are off.
func (b Backup) Interval() (time.Duration, error) {
	switch strings.TrimSpace(b.Every) {
	case "", "0", "never":
		return 0, nil
	}
	d, err := time.ParseDuration(b.Every)
	if err != nil || d < time.Second {
		return 0, fmt.Errorf("%q is not a duration of a second or more, such as 24h", b.Every)
	}
	return d, nil
}

// Kept is how many scheduled backups are kept.
func (b Backup) Kept() int {
	if b.Keep == 0 {
		return DefaultBackupKeep
	}
	return b.Keep
}

// Folder is where scheduled backups go: Dir, else DATA/backups.
func (b Backup) Folder(dataDir string) string {
	if b.Dir != "" {
		return b.Dir
	}
	return filepath.Join(dataDir, "backups")
}

func (b Backup) validate(path string, data []byte) error {
	at := func(k string) string {
		return fmt.Sprintf("%s:%d: backup.%s", path, lineOf(data, toml.Key{"backup", k}), k)
	}
	if _, err := b.Interval(); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalid, at("every"), err)
	}
	if b.Keep < 0 {
		return fmt.Errorf("%w: %s: %d: want 1 or more", ErrInvalid, at("keep"), b.Keep)
	}
	if b.Dir != "" && !filepath.IsAbs(b.Dir) {
		return fmt.Errorf("%w: %s %q: want an absolute path", ErrInvalid, at("dir"), b.Dir)
	}
	return nil
}
