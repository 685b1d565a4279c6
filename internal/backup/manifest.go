package backup

import (
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Format is the version of the archive's layout this den writes, and
// the newest it restores.
const Format = 1

// maxManifest bounds the manifest restore reads.
const maxManifest = 4 << 20

// Manifest is the archive's first entry: what it holds.
type Manifest struct {
	Format int `json:"format"`
	// Den is the version of the den that wrote the archive.
	Den string `json:"den_version"`
	// Schema is the database's schema version (its user_version); 0
	// when the data dir had no database.
	Schema  int       `json:"schema_version"`
	Created time.Time `json:"created"`
	Host    string    `json:"host,omitempty"` // the machine's name
	// Secrets says the archive holds den's secrets: the config's keys,
	// the token, the TLS and VAPID keys, MCP servers' OAuth tokens and
	// homes, the agents' browser profiles. Guard it like the keys.
	Secrets bool `json:"secrets"`
	// Computers says the archive holds the agents' computers (their
	// root filesystems); without, a restored agent gets a new one.
	Computers bool `json:"computers"`
	// Live says a den serve ran on the data dir while it was copied.
	Live bool `json:"live"`
	// Owners is how the computers' files record their owners: "inside",
	// as the computer sees them (root is 0).
	Owners string `json:"owners"`
	// Agents are the agents whose folders the archive holds.
	Agents []string `json:"agents"`
	// Sessions is how many sessions the database holds; nil in an
	// archive without a database, or from a den that did not count them.
	Sessions *int `json:"sessions,omitempty"`
	// Config lists the config files it holds (config.toml, mcp.json,
	// env).
	Config []string `json:"config,omitempty"`
	// Redacted lists the config keys whose values were left out (set
	// them again after a restore), as config.toml:KEY or mcp.json:KEY.
	Redacted []string `json:"redacted,omitempty"`
	// LeftOut names what of the data dir is not in the archive, and why.
	LeftOut []string `json:"left_out,omitempty"`
}

// ReadManifest reads the manifest at the start of an archive: den's
// gzip-compressed tar stream. Restore checks it the same way.
func ReadManifest(r io.Reader) (Manifest, error) {
	a, err := openArchive(r)
	if err != nil {
		return Manifest{}, err
	}
	defer a.close()
	return a.manifest()
}

// check refuses what this den cannot restore.
func (m Manifest) check(schema int) error {
	switch {
	case m.Format < 1:
		return fmt.Errorf("%w: the manifest has no format", ErrNotBackup)
	case m.Format > Format:
		return fmt.Errorf("%w: the archive has format %d, this den reads up to %d (written by den %s): upgrade den", ErrTooNew, m.Format, Format, m.Den)
	case m.Schema > schema:
		return fmt.Errorf("%w: its database has schema %d, this den knows up to %d (written by den %s): upgrade den", ErrTooNew, m.Schema, schema, m.Den)
	case m.Owners != "inside":
		return fmt.Errorf("%w: owners recorded as %q", ErrNotBackup, m.Owners)
	}
	for _, name := range m.Config {
		if name != configFile && name != mcpFile && name != envFile {
			return fmt.Errorf("%w: config file %q", ErrUnsafe, name)
		}
	}
	return nil
}

func (m Manifest) marshal() []byte {
	b, _ := json.MarshalIndent(m, "", "  ")
	return append(b, '\n')
}
