// Package files serves a session's files over HTTP: the computer's
// /workspace to list, download and upload, /den/attachments to
// attach files to a conversation, and every folder a den:// URL names
// (package resource) to read. The daemon's route table mounts
// Handler's methods:
//
//	GET  /api/v1/sessions/{id}/files/{path...}      Handler.Get (also HEAD)
//	PUT  /api/v1/sessions/{id}/files/{path...}      Handler.Put
//	POST /api/v1/sessions/{id}/attachments          Handler.Attach
//	GET  /api/v1/sessions/{id}/attachments/{name}   Handler.GetAttachment
//	GET  /api/v1/sessions/{id}/offloads/{name}      Handler.GetOffload
//	GET  /api/v1/resources?url=den://...&session=ID Handler.Resource (or &agent=NAME)
//
// The {path...} pattern matches the workspace root too (an empty
// path); a second pattern for ".../files/" would conflict with it.
//
// # Contract
//
// The computer can change its folders at any moment and is treated as
// hostile: every file operation goes through package hostfs, so no
// symbolic link is followed anywhere on a path, no named pipe, socket
// or device is opened, and a swap between a check and a use changes
// nothing that is read or written. A request naming a path with a
// symbolic link or a special file on it is refused (403, code
// "refused"); a ".." component (encoded or not), an absolute path or a
// NUL byte is a bad request (400); a missing file is 404. A listing
// shows a symbolic link as a link, with its text, and never looks at
// what it leads to.
//
// Downloads stream from the opened file (ranges included) with
// X-Content-Type-Options: nosniff and a sandboxing
// Content-Security-Policy, as attachments unless ?inline=1 asks
// otherwise for a type that cannot run script in den's origin (images
// other than SVG, text/plain, PDF). HTML asked for inline is inline
// only when the browser says it loads it into a frame (Sec-Fetch-Dest:
// iframe), where the policy's sandbox runs none of its scripts and
// gives it an origin of its own: a preview. SVG and everything else
// are always attachments (an <img> shows an SVG all the same, and runs
// nothing in it).
//
// Resource serves what a den:// URL names, read in the folders of the
// session given (session=ID: the session's own folders and its
// agent's), or of the agent given (agent=NAME, for the agent's folders
// only, without a session); a session's kind without a session, both
// or neither, or a bad URL is a bad request, and an unknown session or
// agent, or a folder the computer does not have yet, is 404. Files and
// folders are served as Get serves the workspace's.
//
// Uploads stream to disk into a temporary file that is renamed into
// place, so a reader sees the old file or the new one; a body over the
// limit (Handler.Limit, MaxUpload by default) or one cut short leaves
// nothing behind, the folders a PUT made for it included. Attachments
// never overwrite: a name that is taken gets "-2", "-3" and so on.
// Whatever den makes for the computer belongs to Folders.Owner.
//
// # Errors
//
// Handlers return errors for the server to answer as JSON: an *Error
// carries its status and code; the errors of Folders come back as they
// are (one wrapping store.ErrNotFound for a session that does not
// exist), and so does the *http.MaxBytesError of a body over the
// limit. Anything else is den's own failure.
//
// # Concurrency
//
// A Handler's methods are safe for concurrent use; each request opens
// its own folders.
package files
