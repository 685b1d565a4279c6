// Package computer manages agents' persistent computers under den's
// data dir: provisioning each agent's rootfs (once, atomically), the
// per-agent and per-session folders bound into it, control groups for
// resource limits, and starting a session's sandbox with the chosen
// backend. Reset, export and import act on the rootfs as a whole.
//
// A computer is shared by its agent's sessions: what one session
// installs, every later session sees. Each session gets its own
// /workspace, /den/attachments, /den/offloads and /den/browser; two
// sessions of one agent never see each other's folders.
//
// Methods of Manager and Computer are safe for concurrent use; the
// filesystem is the only shared state.
package computer
