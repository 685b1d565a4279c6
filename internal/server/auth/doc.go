// Package auth is the authentication layer of den's daemon: a Guard
// wraps the HTTP API so that it can face phones on a LAN that other,
// hostile, machines share.
//
// # Credentials
//
// There is one secret, the token: 32 random bytes, base64url-encoded,
// kept in DATA/token with mode 0600 (created on first use, written to a
// temp file with O_EXCL, fsynced and renamed or linked into place). A
// token file that is a symbolic link, not a regular file, or open to
// group or others in any way is refused, never repaired: it may have
// leaked, and the error says to run `den token --rotate`. DEN_TOKEN in
// the environment replaces the file (nothing is written then). Tokens
// shorter than 16 characters, or with spaces or control characters,
// are refused.
//
// A request authenticates with "Authorization: Bearer TOKEN" or with
// the session cookie, which GET /?token=TOKEN (any path, GET or HEAD)
// sets before a 303 to the same URL without the token parameter. The
// cookie is nonce.mac, mac being HMAC-SHA256 of the nonce under a key
// derived (HKDF) from the token: no session table, so sessions survive
// restarts, and Rotate, which replaces the token, ends them all.
// Guard.Rotate does the same from a request: it also switches the guard
// to the new token at once and signs the requesting browser in again
// with a cookie made with it. The
// cookie is HttpOnly, SameSite=Strict, Path=/, lasts 400 days and is
// Secure when the client uses https (Options.TLS, or a trusted proxy's
// X-Forwarded-Proto). A rejected cookie is deleted in the response.
//
// The token file is watched: the guard Lstats it on every request that
// carries credentials (about 0.5 µs, a third of the guard's cost; see
// BenchmarkBearerFile) and re-reads it when its inode, size,
// modification time or mode changed, so a rotation by another process
// takes effect on the next request. An in-place rewrite of the same
// length within one file-timestamp tick would go unseen; Rotate always
// renames, which changes the inode. A file that becomes unusable is
// given to Options.Report, and credentials are answered 503 until it is
// fixed.
//
// # What a request goes through
//
//  1. Host check, on every request: IP literals, localhost and
//     *.localhost, the machine's hostname (and NAME.local) and
//     Options.AllowedHosts pass; anything else is a DNS-rebinding
//     attempt or a misconfiguration: 421.
//  2. Options.Public requests go straight to the handler.
//  3. No credentials: 401 with WWW-Authenticate. A ?token= wins over a
//     bearer header, which wins over the cookie; only one is checked.
//  4. A client with 10 failures in the last minute gets 429 with
//     Retry-After for any credentials, the right ones too. Clients are
//     keyed by Guard.ClientIP (an IPv6 client by its /64), at most 4096
//     of them, the one with the oldest failure evicted first.
//  5. Wrong credentials: 401, counted as a failure.
//  6. A cookie-authenticated request that is not GET, HEAD or OPTIONS,
//     or that asks for a WebSocket upgrade, needs an Origin that names
//     the request's own scheme and Host: 403 otherwise. Bearer requests
//     need none. GET handlers must therefore not change state.
//  7. The handler gets a copy of the request without the bearer header
//     and the session cookie, whose body stops at Options.MaxBody (1 MiB
//     by default); LimitBody changes that for one route, BodyError turns
//     the limit's error into 413.
//
// Errors are JSON, {"error": {"code": "...", "message": "..."}}, codes
// unauthorized, forbidden, misdirected, rate_limited, too_large and
// unavailable.
//
// # Invariants
//
//   - The token never appears in a response, an error or a log (the
//     package logs nothing); the login redirect drops every token
//     parameter. The one exception is Guard.Rotate, which returns the
//     new token to its caller (den's API gives it once to the client
//     that asked for the rotation).
//   - Bearer tokens are compared as SHA-256 sums and MACs as bytes,
//     both with crypto/subtle, so neither value nor length leaks through
//     timing.
//   - X-Forwarded-For and X-Forwarded-Proto are read only from peers in
//     Options.TrustedProxies, X-Real-IP and Forwarded never.
//
// A session cookie, like any cookie, is sent to every port of its host
// name: a service on another port of the same name (one the agent
// started, say) receives it. Serve such services under another name.
//
// # Concurrency
//
// A Guard is safe for concurrent use. Credential checks of one guard
// run under the rate limit's lock (each takes about a microsecond), so
// parallel guesses cannot exceed the limit.
package auth
