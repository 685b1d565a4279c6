// Package config reads den's configuration file (TOML, in the XDG
// config dir or given with --config) into a validated Config, and
// changes one setting in it at a time. Every error names the file and,
// where the problem is in the file, the line.
//
// The file is optional: an absent file is an empty Config, and every
// field has a default.
//
//	[sandbox]
//	backend = "bwrap"           # or "proot" (no isolation; never chosen silently)
//
//	[rootfs]
//	alpine_mirror = "https://…/alpine"
//	debian_mirror = "http://…/debian"
//	ubuntu_mirror = "http://…/ubuntu"
//
//	[agents.default]
//	rootfs  = "alpine"          # source used when the computer is first created
//	network = "on"              # or "off": only loopback inside
//	mounts  = ["/home/me/notes:/mnt/notes", "/srv/data:/data:ro"]
//	memory  = "2GiB"            # resource limits (cgroups)
//	pids    = 512
//	cpu_weight = 100
//
//	[profiles.researcher]       # how a sub-agent runs (den-agent run --profile researcher)
//	model = "anthropic/claude-haiku-5-5"
//	tools = ["shell_execute", "file_*", "browser_use"]
//	trust = "restricted"        # never above the parent's
//	budget = "0.50"             # or "200k tokens"
//
//	[subagents]
//	max_running = 3             # a session's sub-agents running at once
//	max_depth = 1               # sub-agents start none of their own
//
//	[mcp_clients.claude-code]   # a client of den's MCP server, by its name
//	agents = ["default"]        # the agents it may use; unset: every agent
//	allow  = ["exec"]           # tools that run without asking
//	ask    = ["write_file"]     # tools that ask the user each time
//	deny   = ["run"]            # tools refused ("*": every tool not listed)
//
// Changing a setting (SetValue, and Set, PlanSet, SetValueIf on top of
// it):
//   - Exactly one key changes. Keys are checked part by part (bare
//     parts, or quoted ones such as permissions."den-config set") and
//     written anew; values are strings, numbers, booleans or arrays of
//     those, encoded by this package. Text from the caller never reaches
//     the file as written, so it cannot add a table or another key.
//   - The edit is checked before it is written: the file before and
//     after must decode to the same tables and values but for the one
//     key, and the result must Load. Otherwise nothing is written.
//   - Comments and every other line stay byte for byte; the file is
//     replaced atomically (a synced temporary file renamed over it) and
//     keeps its mode, 0600 when new.
//   - There is no lock: SetValueIf refuses a change planned against a
//     value the file no longer has, as read just before writing.
//
// Unset removes one key, or one table with everything in it, under the
// same rules: only its lines go, the result is checked the same way
// (decoded before and after, and loaded), and the file is replaced
// atomically. A key that names no setting of Config is ErrBadKey; one
// the file does not set is ErrNoKey.
//
// An agent may change only what AgentSettable allows — its own model
// and instructions — and the caller asks a person first, showing the
// Change PlanSet returns. Everything else that could widen what the
// computer reaches (trust, permissions, mounts, network, limits, the
// sandbox's programs, mirrors, providers, what MCP clients may do) the
// user changes with `den config set` outside the computer.
package config
