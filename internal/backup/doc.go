// Package backup writes den's state into one archive while den runs,
// and restores such an archive into an empty data dir.
//
// # The archive
//
// A gzip-compressed tar stream (den-backup-*.tar.gz), read and written
// as a stream: nothing is held whole in memory. Its entries, in order:
//
//	manifest.json          what the archive holds (Manifest): den's version, the
//	                       database's schema version, whether it holds secrets
//	                       and computers, the agents, the secrets left out
//	config/config.toml     the config file; secrets emptied unless Secrets
//	config/mcp.json        the MCP servers' file, likewise
//	config/env             the service's environment file beside them (Secrets only)
//	data/den.db            a consistent snapshot of the database (store.Snapshot)
//	data/agents/AGENT/...  each agent's memory, skills, shared folder, sessions'
//	                       folders, skill state, and computer (its rootfs)
//	data/token, data/tls/, data/push/, data/mcp/tokens/, data/mcp/home/,
//	data/agents/AGENT/browser/   den's secrets, and the agents' browser
//	                       profiles with their logins (Secrets only)
//	SHA256SUMS             last: the SHA-256 of every file, as sha256sum writes it
//
// What is left out: caches and what den makes again (DATA/cache, the
// host-command binary, control folders, locks), the id range record
// (the computers' files are recorded as the computer sees them, root
// being 0, and given to the new machine's ids), the folders a user
// mounts into a computer, and files named by the config (TLS
// certificates of one's own, instructions files).
//
// # While den runs
//
// The database is copied with VACUUM INTO, one read transaction: every
// committed transaction is in it whole, or not at all. Files are read
// one at a time while sessions may change them: each is copied whole
// as it was when read (a file truncated meanwhile is padded to the size
// it had), a file swapped for another kind is left out with a warning,
// never followed, and a file that went is left out. A computer running
// a command during the backup is therefore copied as a crash would
// leave it, file by file; stop its sessions for an exact copy.
//
// # Restore
//
// Restore refuses, before writing anything: an archive whose first
// entry is not a manifest, of a newer format or a newer database
// schema; a data dir that holds data, or a config file that exists,
// unless Force (the old ones are then moved aside, never deleted). It
// writes into a staging folder inside the data dir and moves the
// result into place only when every entry was written and every file
// matched its SHA-256: a failed restore leaves the data dir as it was.
// While writing it refuses names that are absolute or hold "..", names
// outside den's layout, device nodes and other special files, hard
// links to another tree, and symbolic links anywhere but in a
// computer's files (where they are made and never followed, each tree
// confined by an os.Root). Setuid and setgid bits are kept only on the
// computer's files.
//
// Extended attributes travel in PAX records (SCHILY.xattr.NAME): user.*
// ones, and trusted.* and security.* ones where den can read them (as
// root); system.* (access control lists, which name host ids) do not.
// A file capability (security.capability) names the root it holds
// for: it is recorded as the computer sees it and given to the
// restored computer's root, and dropped on den's own files. Restore
// sets them on each entry without following a link, and warns once
// for each name it cannot set.
//
// WriteFile keeps its disk's free space: it refuses a backup whose
// files (before compression, an upper bound) could leave less than 5%
// of the disk, at least 1 GiB, and stops one during which the free
// space falls under that, looking every 64 MiB written. A backup
// stopped, or failed otherwise, leaves no file.
//
// Verify reads an archive whole through the same reader and checks,
// and writes nothing: an archive it accepts is one Restore accepts,
// but for the data dir it would write into and the database opening.
//
// Owners: as root, the computer's files go to the ids the new machine
// gives its computers (see package idmap), and den's own files to den;
// as an ordinary user every file belongs to that user, which is root
// inside the computer (owners other than root inside are not kept).
package backup
