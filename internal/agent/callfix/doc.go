// Package callfix repairs a model's malformed tool calls before they
// run, or refuses them with words the model can act on.
//
// Fix takes one call and the tools of the session (a Catalog: names
// and JSON schemas, as *tool.Registry gives them) and returns the call
// to run, a note saying what was repaired, or an *Error. It repairs:
//
//   - the tool's name: case and separators (Shell-Execute), a
//     namespace prefix (functions.shell_execute), a known alias (bash,
//     shell, exec → shell_execute; read_file → file_read; …), the same
//     words in another order (write_file), or edit distance ≤ 2 — each
//     only when it points at exactly one tool;
//   - the JSON: a value cut off in transit is closed up (a cut string
//     closed, a member with no value dropped, missing brackets added);
//     trailing commas, raw line breaks in strings, backslashes that
//     start no escape, Python's True/False/None, extra closing brackets
//     and a Markdown code fence around the arguments are fixed;
//     arguments sent as a JSON string holding the object are decoded;
//   - the values, by the schema: "5" → 5 for integers and numbers (5.0
//     → 5 for integers), "true"/"false" → booleans, numbers and
//     booleans → strings, a string holding a JSON object or array → the
//     object or array, an enum value in the wrong case → the value, and
//     a misnamed field (File_Path, cmd, file_path) → the schema's name
//     when exactly one missing field matches.
//
// # What never runs
//
// Cut-off arguments are refused (ErrTruncated) for file_write and
// file_edit, always: closed up, they would write a silently cut file.
// The model is asked to send the content in smaller pieces (file_write
// with append=true). A shell_execute whose command (or any value) was
// cut is refused too, since part of a command can do the wrong thing
// (half a heredoc writes a cut file). Other tools run with what
// arrived; the note then starts with TruncatedNote and the loop should
// mark the result as an error. JSON that cannot be repaired is
// refused (ErrMalformed) naming the byte, line and column of the
// problem; arguments that still break the schema are refused
// (ErrInvalid), empty arguments for a tool with required fields with
// "Tool call rejected before execution"; an unknown tool gives
// ErrUnknownTool listing the available tools.
//
// # Invariants
//
// Fix never modifies its argument and never panics. When it returns no
// error, the call names a tool of the catalog and its input is one
// JSON object that passes the tool's schema (tool.Schema.Validate); a
// call that needed no repair is returned as is, bytes unchanged.
// Fix keeps no state and is safe for concurrent use.
package callfix
