// Package browser is an agent's web browser: headless Chromium, run in
// the agent's computer's namespaces and driven over the DevTools
// protocol, with pages described for a model as indexed elements and
// text, and actions (navigate, click, type, scroll, ...) that say what
// they did.
//
// A Browser belongs to an agent; each session of the agent gets a
// Session from it, with tabs of its own, and calls Do with an Action.
// Chromium starts with the first action that needs it, and stops after
// Options.Idle without use; tabs close after Options.TabIdle. Its
// profile (cookies, logins, site data) lives in Options.Dir and
// persists; it is the agent's, never the user's own.
//
// # Where Chromium runs
//
// Chromium runs on the host, in a bubblewrap sandbox of its own joined
// (with nsenter, util-linux) to the user and network namespaces of the
// session's computer: localhost in the browser is the computer's own,
// so the agent opens the web apps it runs there, and the computer's
// network policy applies (off: only that loopback; on: den's egress
// proxy, under the agent's policy, without the host's loopback; the
// computer's own CA is trusted, see Options.TrustSPKI). den reads the namespaces from the
// computer's first process, pinned by a pidfd, and checks by inode,
// once Chromium answers, that its sandbox is in exactly those.
// nsenter runs as the computer's root (the owner of its user
// namespace); setns into a user namespace needs a single-threaded
// process, which den, a Go program, never is.
//
// Inside, Chromium runs as uid 1000 of a user namespace nested in the
// computer's, where that uid is the computer's root: never host root,
// and never root in its own namespace, so Chromium's own sandbox stays
// on (no --no-sandbox). It sees the host's /usr, libraries, fonts and
// certificates read-only; its own /proc, /dev, /tmp, pid, ipc and uts
// namespaces; its profile (read-write), a downloads staging folder
// (read-write) and an uploads folder (read-only), all under
// Options.Dir; and nothing else of the host: not the user's home, not
// den's data, not the computer's files. It talks to den over
// --remote-debugging-pipe: no port is open. It dies with den
// (--die-with-parent, started from den's launcher thread).
//
// One Chromium serves the agent at a time, in one computer: a session
// whose computer is another moves it there, and the other sessions'
// tabs close; each session's next result says why its tabs went.
//
// # What a page can and cannot do
//
// Treat every page as hostile: it was written by whoever the model was
// talked into visiting, and it may try to mislead the model, to make
// den act on the wrong thing, or to reach the host.
//
//   - An index acts on the element the snapshot showed, or on nothing:
//     each index keeps its DOM node (backend id), role and name, checked
//     before any action; a changed element or a page that navigated
//     gives a Stale result with a fresh snapshot, never a click
//     elsewhere. A click lands at the element's centre only when a hit
//     test there reaches it (or its label); a covered element is not
//     clicked.
//   - den's own scripts run in an isolated world: what a page does to
//     its globals and prototypes does not change what den reads.
//   - Passwords, card numbers (by field and by Luhn-valid value, in
//     fields and in text) and one-time codes are never in a snapshot or
//     in readable text; cookie values are never in Result.Text.
//   - Pages cannot stall den: every action has a timeout (a navigation
//     the server never answers is stopped, a script that never ends is
//     terminated), dialogs are answered, a renderer that crashed or
//     stopped answering is replaced, a Chromium that died is started
//     again, and each is said in the next result.
//   - Downloads land in the session's /workspace/downloads under a name
//     made safe (one path element, no control characters), through
//     hostfs, which follows no link the computer or Chromium planted;
//     a download over Options.MaxDownload is cancelled.
//   - file: URLs are refused (they would show the browser's own
//     profile), and so are schemes other than http, https, data and
//     den:// (which den serves itself from the session's Resolver).
//
// What it does not promise: a page can show the model anything in its
// text (the model must not trust it); a page that is the agent's own
// target can do what any page can in the computer's network; the
// computer and Chromium share a uid (the computer's root), and a
// compromised Chromium is in the computer's network namespace but not
// in its pid or mount namespaces; memory is not capped (no control
// group of its own).
//
// # Results
//
// Do returns a Result for everything the model can act on, with a Code
// (Done, or why not) and Text for the model; its error is only for a
// cancelled context or a closed Session. A result carries, once each,
// the notes of what happened meanwhile (a restarted tab or browser, a
// dialog answered, a tab closed for idleness, the user's operating the
// page) and the downloads that finished.
//
// # Snapshots
//
// A snapshot walks Chromium's accessibility tree (shadow DOM included,
// same-origin iframes spliced in) in reading order: one line per
// interactive element, "[N] role "name"" with its state (checked,
// selected, expanded, disabled, required, invalid, readonly) and value,
// headings as Markdown, and the text between them. It is cut into pages
// of Options.SnapshotSize characters (about 4,000 tokens); a snapshot
// with page 2 and on pages through the latest snapshot without taking
// a new one, so its indexes stay valid. Before a page is described den
// waits, bounded, for it to settle: no request in flight, its DOM still.
//
// # Takeover
//
// The web face streams a session's current tab with Screencast, and
// lets the user drive it with TakeControl, Input and ReleaseControl;
// meanwhile the agent's actions wait (at most Options.TakeoverWait),
// then answer with the page as the user left it instead of acting.
//
// # Concurrency
//
// A Browser's and a Session's methods are safe for concurrent use. A
// session's actions run one at a time; different sessions' run side by
// side in their own tabs. Takeover methods may be called while an
// action runs. Every goroutine the package starts ends by Close.
package browser
