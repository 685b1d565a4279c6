// Package resource is den's name for the agent's files: den:// URLs,
// which every face understands. The model writes one in its answer to
// show the user a file of its computer; the web face previews it, the
// CLI prints where it is on the host, and the server's
// /api/v1/resources route serves it.
//
//	den://workspace/PATH     /workspace/PATH         the session's
//	den://attachments/PATH   /den/attachments/PATH   the session's
//	den://offloads/PATH      /den/offloads/PATH      the session's
//	den://browser/PATH       /den/browser/PATH       the session's
//	den://memory/PATH        /den/memory/PATH        the agent's
//	den://skills/NAME/PATH   /den/skills/NAME/PATH   the agent's
//	den://shared/PATH        /den/shared/PATH        the agent's
//
// A URL names a kind of folder and a path beneath it; whose folder it
// is (which session, which agent) comes from where the URL is used, as
// a relative path's meaning does. A guest path outside these folders
// has no den:// URL.
//
// # Contract
//
// Parse is strict, because a URL comes from the model's text, which a
// page it read may have written: the scheme and the kind are exact and
// lower case; the path is percent-decoded once (so "%2e%2e" is "..",
// and refused, while "%252e" is the name "%2e"); after decoding no
// component is empty, ".", or "..", none holds a NUL or another
// control character or invalid UTF-8, and the lengths stay within
// MaxURL, MaxPath and MaxName. A raw space, control character, "?",
// "#", or any other character a URL's path may not hold unescaped
// (RFC 3986) is refused: a den:// URL has no query and no fragment.
// One trailing "/" is allowed ("den://workspace/out/" names the folder
// out); "den://workspace" and "den://workspace/" name the folder
// itself.
//
// For every URL u that Parse returns, Parse(u.String()) is u, and
// FromGuest(u.Guest()) is u. A valid URL says nothing of what is on
// disk: whoever reads the file still reads it as the computer's
// (through package hostfs: no symbolic link followed).
//
// The package holds no state; its functions are safe for concurrent
// use.
package resource
