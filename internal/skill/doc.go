// Package skill keeps an agent's skills: folders in the Agent Skills
// format (a SKILL.md with YAML frontmatter — name, description, and
// optionally license, allowed-tools, metadata — and any scripts,
// references and assets beside it) that the agent reads in its computer
// at /den/skills/NAME/ and uses when a task calls for one.
//
// # Where skills live
//
// A Catalog is one agent's skills. Their files are in the skills folder
// on the host (DATA/agents/AGENT/skills, bound into the computer at
// /den/skills), which the computer can change at any time: every read
// den makes there goes through package hostfs and follows no link, and
// what den writes there belongs to the computer's root. What den keeps
// of the skills is out of the computer's reach, in the state folder
// (the skills folder's parent by default):
//
//   - skills.lock, JSON, mode 0600, written whole and renamed into place:
//     per skill its origin (installed by den, or made by the agent and
//     in which session den first saw it), its source (folder, archive,
//     or git URL with the path inside and the ref asked for) and the git
//     commit, the content hash of its files (see Hash), install and
//     update times, whether it is enabled (and the sessions it is
//     disabled in), the scan's findings, and when and how often it was
//     used;
//   - skills.pristine/NAME/, a copy of each installed skill's files as
//     installed, from which den shows what changed and restores them.
//
// # What den promises
//
//   - An installed skill is pinned: its content hash is recorded, and
//     a skill whose files no longer match it (a file changed, added or
//     removed, a link planted) is Changed and not offered to the model
//     until the user accepts the change or restores the pristine files.
//   - Every skill is scanned before it is installed, and a skill the
//     agent made is scanned when den first sees it and whenever it
//     changes (see Scan). High findings refuse an install unless the
//     user forces it, and keep an agent's skill from the model until the
//     user accepts it. The scan is a tripwire, not a proof.
//   - Sources are read with limits (a SKILL.md of 256 KiB, a skill of
//     32 MiB in 1000 files, an archive of 128 MiB in 20000 entries):
//     past them a skill is refused or reported Invalid, never read
//     whole. Archives with links, device nodes, absolute paths or ".."
//     are refused; git runs with no user configuration, credentials,
//     prompts or hooks.
//   - A malformed skill is an Invalid entry with the reason, never a
//     failure of the others.
//
// What the hash cannot promise: the model reads a skill's files in the
// computer, which may change them between den's check and the read. The
// check tells the user that a skill was tampered with; it cannot stop a
// computer that is already hostile from lying to its own model.
//
// # Each turn
//
// Catalog.Prompt (List, then Index of the usable entries) builds the
// <available_skills> block of the system prompt: at most 2% of the
// context window (8000 characters at most), skills ranked by most
// recent use. It re-reads a skill's files only when a file's inode,
// size, change time, modification time or mode differs from what the
// catalog saw last, so a catalog should live as long as its agent.
// MarkUsed records a use (ManifestOf tells which skill a path read in
// the computer is the SKILL.md of); uses rank the index.
//
// # Concurrency
//
// A Catalog's methods are safe for concurrent use. Changes to the lock
// file are serialized between processes (den serve and den skills, say)
// by an exclusive flock on the pristine folder, and each re-reads the
// file under the lock before changing it.
package skill
