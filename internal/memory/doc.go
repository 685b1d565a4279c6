// Package memory is an agent's memory: plain Markdown files in its
// folder, /den/memory inside its computer, that outlive every session.
//
//   - GLOBAL.md holds long-term facts and preferences; SOUL.md, when
//     there is one, the agent's persona. The user and the agent edit
//     them like any file.
//   - YYYY-MM-DD.md is the day's log (the day in the host's time zone):
//     memory_write appends an entry to today's, and den appends the
//     summary of every part of a conversation it compacts, so that what
//     a long session learned survives compaction whatever the model
//     chose to write.
//
// An entry of a log starts with a marker line den writes,
//
//	<!-- den: 2026-12-02T14:03:05+01:00 session=ID message=ID -->
//
// which dates it and names the session and the message that wrote it,
// so that an entry can be found again, shown with its date, and taken
// back when the user deletes or regenerates that message. Text before
// the first marker, and every other file, is split at blank lines.
//
// Every file is indexed for full-text search in den's store (SQLite
// FTS5), read again only when its size or time changed: Sync is one
// listing of the folder and one query when nothing did.
//
// The folder is the computer's, and the computer may be hostile: den
// reads it through hostfs (never following a link, as the computer's
// own root) and writes there as that root; a marker the computer forged
// in a file is taken at its word for dating and searching, and gains it
// nothing else. Text from memory goes to the model as background, never
// as instructions (see Prompt).
//
// A Book is safe for use by several goroutines; den's own writes to a
// file are serialized, but a change the computer makes to the same file
// at the same moment may be lost (the later rename wins).
package memory
