// Package hostfs is the one place where den, on the host, reads and
// writes files in folders that an agent's computer can write: the
// session's workspace, attachments, offloads and the like. The computer
// is treated as hostile: at any moment it can plant symbolic links,
// named pipes, sockets and device nodes there, or swap one entry for
// another between a check and a use.
//
// # Contract
//
// A Dir is an open folder den owns or trusts by its path (following
// symbolic links in that path is fine); everything beneath it is
// untrusted. Against a hostile tree beneath a Dir, hostfs promises:
//
//   - No symbolic link is ever followed beneath a Dir, in any component
//     of a path, the last one included, and neither are /proc's magic
//     links; ".." and absolute paths are refused before the kernel sees
//     them. Paths are resolved by openat2(2) with RESOLVE_BENEATH,
//     RESOLVE_NO_SYMLINKS and RESOLVE_NO_MAGICLINKS, or, on kernels
//     without openat2, by a walk of openat(O_PATH|O_NOFOLLOW) calls that
//     refuses the same things.
//   - No named pipe, socket or device node is ever opened for reading:
//     a path is first opened with O_PATH (which opens nothing) and
//     checked with fstat, and only that very inode, if it is a regular
//     file, is then opened for reading, through /proc/self/fd. A swap
//     after the check cannot change what is read. The read open is
//     non-blocking, so a lease the computer holds on the file cannot
//     stall den either.
//   - Create never reuses an existing name (O_CREAT|O_EXCL|O_NOFOLLOW:
//     an existing file, folder or symbolic link, dangling or not, is
//     ErrExists), and the owner and mode of a new file are set on its
//     descriptor, never by name.
//   - WriteFile writes a fresh temporary file and renames it into
//     place relative to the Dir; a rename replaces whatever entry is at
//     the name (a planted symbolic link included) without following it.
//   - ReadFileAs makes the kernel check permissions as the computer's
//     root (its host uid, gid and groups) rather than as den, on an OS
//     thread of its own that is discarded afterwards, so a file the
//     computer could not read itself is not read for it, and den's own
//     credentials never change.
//
// # Limits
//
// A hard link is not a symbolic link: it is the file itself, under a
// second name, and hostfs reads it like any other regular file. The
// computer can make a hard link only to a file it can already reach on
// the same filesystem (and, with the kernel's protected_hardlinks
// setting, the default on every major distribution, only to a file it
// owns or can read and write), so a hard link gives it nothing it did
// not already have — except that den, reading with its own rights
// rather than through ReadFileAs, may read a linked file the computer
// could not read. Use ReadFileAs when that matters.
//
// Mounts beneath a Dir are crossed: the computer cannot mount anything
// the host sees, so any mount there is the host's own. The names a Dir
// shows in messages (Path, and the name given to OpenDirNamed) are for
// people; operations use the Dir's descriptor, never its path.
//
// hostfs needs Linux and /proc mounted on the host (for the reopen
// through /proc/self/fd).
//
// # Concurrency
//
// A Dir's methods are safe for concurrent use. Close may race with
// them: a call already running keeps the folder's descriptor open until
// it returns, and calls after Close fail. Files returned by Open and
// Create belong to the caller.
package hostfs
