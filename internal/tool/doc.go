// Package tool is what the model can do with its computer: the Tool
// contract, the Registry that validates and runs calls, and den's
// built-in tools.
//
// # Contract
//
// A Tool describes itself (Spec: name, description, JSON Schema of its
// input object), says whether a call is read-only, and runs a call
// against an Env: the session's Computer (a sandbox.Session) and whether
// the model can see images. Two kinds of failure stay apart:
//   - what the model can act on (a missing file, a bad argument, a
//     non-unique old_string, a failing command) is a Result with IsError
//     set, worded so the model can fix its next call;
//   - what ends the turn (the computer is closed, ctx was canceled) is a
//     Go error.
//
// The Registry stands between the model and the tools. Before a tool
// runs, an unknown tool name, input that is not one JSON object, and
// input that breaks the tool's schema (missing required field, wrong
// type, unknown field, value out of range or not in the enum) each
// become an error result that names the field and the problem. Every
// tool accepts an optional tool_title string, a short label for the
// user (see Title); the registry adds it to each schema it shows and
// removes it before validation. A null given for an optional field
// counts as leaving it out. A panic in a tool becomes an error result.
//
// Schemas use the subset of JSON Schema that Schema validates: object,
// properties, required, type string/integer/number/boolean/array/object,
// items, enum, minimum, maximum and additionalProperties false.
//
// # Tools
//
//   - shell_execute(command, timeout?): a command in the persistent
//     shell; output, then "[exit code: N]" and the sandbox's note. Output
//     over ShellMaxChars characters keeps its beginning and end and the
//     whole of it is saved under /den/offloads, whose path is given.
//   - file_read(path, offset?, lines?, max_chars?): a range of lines of
//     a text file under a header (path, bytes, "lines A-B of N", the next
//     offset when more follows), cut on a line boundary; binary files
//     are reported, not shown.
//   - file_write(path, content, append?): exact bytes, parent folders
//     created.
//   - file_edit(path, old_string, new_string, replace_all?): an exact,
//     unique (or, with replace_all, every) occurrence replaced; the file
//     keeps its mode.
//   - read_image(path): PNG, JPEG, GIF or WebP, scaled to at most
//     ImageMaxEdge px, as an image part; an error result when the model
//     cannot see images.
//
// Paths are inside the computer; relative ones start at /workspace and
// ~ is /root. File tools read and write through commands in the
// computer (busybox, Alpine and Debian alike), never through den's view
// of the host's folders, so they see what the agent's shell sees.
// When the file is in a folder den:// URLs name (/workspace, /den/...;
// see package resource), the result of file_read, file_write,
// file_edit and read_image ends with a text part holding a newline and
// the file's den:// URL, which the model can write in its answer to
// show the user the file.
//
// # Concurrency
//
// A Registry is safe for concurrent use. The caller decides what runs
// at once and says so with Call's concurrent flag:
//   - file_read and read_image are read-only (Tool.ReadOnly) and may run
//     beside anything that does not write the files they read;
//   - shell_execute is not read-only, but a caller may still batch
//     independent shell calls: a concurrent call runs as a fresh process
//     (Computer.Exec) starting from the shell's exported environment and
//     directory, a sequential one in the persistent shell
//     (Computer.Run), where its cd and exports persist;
//   - the file tools always run their commands as fresh processes: they
//     need none of the shell's state and must not be changed by it.
//
// The registry never reorders anything: calls run when Call is called.
// Writes (file_write, file_edit, shell commands) must therefore be run
// by the caller in the order the model made them; file_edit reads,
// edits and writes back, so two edits of one file running at once
// would lose one of them.
package tool
