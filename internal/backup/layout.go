package backup

import (
	"strings"

	"den.dev/den/internal/sandbox"
)

// Names of the archive's own entries and folders.
const (
	ManifestName = "manifest.json"
	SumsName     = "SHA256SUMS"
	configDir    = "config/"
	dataDir      = "data/"
)

// Config files the archive may hold, beside the config file.
const (
	configFile = "config.toml"
	mcpFile    = "mcp.json"
	envFile    = "env" // the service's environment, with the model keys
)

// kind says whose files a part holds, and so what an entry may be and
// who owns it.
type kind int

const (
	// denFiles are den's own: folders and regular files only, owned by
	// den; restore drops setuid and setgid bits.
	denFiles kind = iota
	// hostFiles are a program's folder on the host (an MCP server's
	// home): symbolic and hard links too, owned by den.
	hostFiles
	// computerFiles are a computer's: links and FIFOs too, owners as
	// the computer sees them.
	computerFiles
)

// part is one thing of the data dir.
type part struct {
	name     string // below DATA, or below DATA/agents/AGENT
	kind     kind
	tree     bool // a folder, else one file
	secret   bool // only with Secrets
	computer bool // the computer proper: left out with ExcludeComputers
}

// dataParts are the data dir's parts beside den.db and the agents.
var dataParts = []part{
	{name: "token", secret: true},
	{name: "tls", tree: true, secret: true},
	{name: "push", tree: true, secret: true},
	{name: "mcp/tokens", tree: true, secret: true},
	{name: "mcp/home", kind: hostFiles, tree: true, secret: true},
	// The secrets den substitutes in the computers' requests, and each
	// agent's computer's CA (its key signs for any host).
	{name: "secrets.json", secret: true},
	{name: "egress", tree: true, secret: true},
}

// dbName is the database in the data dir.
const dbName = "den.db"

// skipData are the data dir's entries den makes again or that are of
// one run only: left out without a word.
var skipData = map[string]bool{
	"den.db-wal": true, "den.db-shm": true, "den.db-journal": true, "serve.lock": true, "schedule.lock": true,
	"locks": true, "run": true, "cache": true, "bin": true, "idmap.json": true, "backups": true,
}

// skipMCP are the folders of DATA/mcp left out: the tools' lists are a
// cache.
var skipMCP = map[string]bool{"catalog": true}

// agentParts are the parts of an agent's folder beside its sessions.
var agentParts = []part{
	{name: "computer.json", computer: true},
	{name: "rootfs", kind: computerFiles, tree: true, computer: true},
	{name: "home.saved", kind: computerFiles, tree: true, computer: true},
	{name: "memory", kind: computerFiles, tree: true},
	{name: "skills", kind: computerFiles, tree: true},
	{name: "shared", kind: computerFiles, tree: true},
	{name: "browser", kind: computerFiles, tree: true, secret: true},
	{name: "skills.lock"},
	{name: "skills.pristine", tree: true},
	{name: "skill-drafts", tree: true},
}

// sessionsDir is the folder of an agent's sessions' folders.
const sessionsDir = "sessions"

// sessionParts are the folders of one session: each a computer's tree.
func sessionParts() []part {
	var out []part
	for _, d := range sandbox.SessionDirs {
		out = append(out, part{name: d.Name, kind: computerFiles, tree: true})
	}
	return out
}

// skipAgent reports whether an entry of an agent's folder is one of
// den's temporaries or leftovers (a rootfs being built or reset), the
// lock that running sessions hold on the computer (den makes it
// again), or the computer's undo checkpoints: they hold this machine's
// host ids and can be as large as the computer again; a restored
// computer starts a history of its own.
func skipAgent(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "rootfs.old-") || name == "checkpoints" || name == "use.lock"
}

func findPart(parts []part, name string) (part, bool) {
	for _, p := range parts {
		if p.name == name {
			return p, true
		}
	}
	return part{}, false
}
