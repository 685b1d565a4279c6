// Package sandbox runs commands in an agent's computer: a rootfs in a
// sandbox started by a Backend (bwrap, proot; one subpackage each).
//
// A Session is one running sandbox. Its main process is a small POSIX sh
// supervisor that starts, on den's request, the session's persistent
// shell and fresh processes; all of them talk to den through FIFOs in a
// control folder that is bound read-only at /run/den, so nothing inside
// can redirect den's own file operations. The supervisor outliving the
// shell is what lets a shell that died be restarted while background
// processes keep running.
//
// Invariants:
//   - Fail closed: Start returns an error wrapping ErrUnavailable when
//     the sandbox cannot start; nothing runs outside it.
//   - Run (the persistent shell) keeps exported variables and the
//     directory between calls; after each command the shell reports its
//     exported environment, directory and exit status on a control FIFO
//     behind a random marker, so output can never fake an end, and a new
//     shell is brought back to that state after a restart.
//   - A timeout or cancellation ends the command's whole process tree,
//     found from the host: descendants, processes carrying the command's
//     tag in their environment (which survives setsid and double forks),
//     and what the shell forked since the command began. SIGTERM first,
//     SIGKILL after the grace time; pids are re-checked to belong to the
//     sandbox before each signal.
//   - Output is cleaned (escapes stripped, progress lines folded, valid
//     UTF-8) and capped in memory; the full combined output of a capped
//     command is written to the session's offload folder.
//   - Close ends every process in the computer.
//
// Session methods are safe for concurrent use: Run calls are
// serialised, Exec calls run side by side.
package sandbox
