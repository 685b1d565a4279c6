// Package privfile keeps den's private files: small files only den's
// user may read, secrets (the daemon's token, the VAPID key, the TLS
// key) and records (the id range), written whole and read only when
// they are still private.
//
// # Contracts
//
//   - Create writes a file once: the content goes to a temporary file in
//     the same folder (mode 0600, O_EXCL), is synced, and is hard-linked
//     to the name, which fails if the name exists. Of several callers
//     (goroutines or processes) creating one name at once, exactly one
//     reports created and every one then reads that caller's content.
//     Where hard links are not allowed (Android's app storage) it renames
//     instead, and that guarantee is lost: the last rename wins.
//   - Replace writes a file whole: temporary file, sync, rename over the
//     name. A reader sees the old content or the new one, never part of
//     either and never no file.
//   - Both make the folder (mode 0700) when it is missing, leave no
//     temporary file behind on success or failure, and sync the folder
//     after the link or rename so that it lasts.
//   - Read opens without following a symbolic link and without blocking
//     on a named pipe, then checks the opened file itself: a regular
//     file, no permission bit for group or others, at most max bytes. A
//     swap of the name between the checks and the read changes nothing.
//     A file that breaks a rule is refused with a *RefusedError (wrapping
//     ErrRefused) that says which rule; it is never changed.
//
// Errors from the file system are the os package's, which name the
// operation and the file; privfile adds no prefix, so the caller wraps
// each error once with its own operation. A *RefusedError's text is the
// broken rule alone ("it is a symbolic link"), to follow the caller's
// name for the file and precede its remedy.
//
// # Concurrency
//
// All functions may be called at once, from goroutines or processes.
// Create and Replace of one name may overlap; the file is always one
// caller's whole content.
package privfile
