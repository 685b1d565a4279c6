// Package rootfs builds the persistent root filesystem of an agent's
// computer: a complete directory tree that the sandbox later binds as "/".
//
// # Sources
//
// ParseSource accepts exactly these spellings:
//
//   - alpine[:VERSION] — the default. The Alpine minirootfs for the host
//     architecture from a mirror (Options.AlpineMirror, default
//     DefaultAlpineMirror). No version means latest-stable; "3.21" means the
//     latest release of that branch (both resolved through the branch's
//     latest-releases.yaml); "3.21.3" names one release, verified against
//     the .sha256 file next to it. Every download is checked against its
//     published SHA-256 before use, and so is every cached copy.
//   - debian[:SUITE] (default bookworm) and ubuntu[:SUITE] (default noble) —
//     `debootstrap --variant=minbase` as root, or `mmdebstrap --mode=unshare`
//     otherwise. The Debian mirror defaults to the one in the host's apt
//     sources. The pristine base is cached as a tarball in Options.CacheDir
//     and extracted from there on later runs instead of bootstrapping again.
//   - tar:PATH — an imported tarball: plain, gzip, bzip2, or (through the
//     external xz and zstd commands) xz and zstd, recognised by content.
//   - dir:PATH — an imported directory, copied; it must neither contain nor
//     lie inside the destination.
//   - busybox — a tiny rootfs made from the host's static busybox (the
//     busybox-static package): for tests and offline use.
//
// When the default source is used (the caller sets Options.FallbackToDebian
// because the user chose nothing) and the Alpine mirror cannot be reached —
// network and DNS errors, timeouts, HTTP 5xx, a mirror without latest-stable,
// but not checksum mismatches or an unknown explicit version — Provision reports the fallback through
// Options.Progress and builds debian instead, from the cached base or with a
// bootstrapper; without either it fails saying what to do.
//
// # Atomicity
//
// Provision never touches an existing destination: it refuses with
// ErrExists, and the caller removes a rootfs explicitly to rebuild it. The
// tree is built in a temporary sibling directory (same file system) named
// ".NAME.tmp-*", set up, and renamed into place with RENAME_NOREPLACE only
// when complete. On any error, including cancellation of the context and a
// full disk (ErrDiskFull), the temporary directory is removed (after
// detaching anything a bootstrapper left mounted in it) and the destination
// does not exist. Cache files are likewise written under temporary names and
// renamed. Source archives and directories are only read.
//
// # Setup
//
// Setup runs after every build and may be run again on an existing tree
// (it is idempotent). It copies the host's /etc/resolv.conf (following a
// host symlink), writes /etc/hosts (localhost, ::1 and the host name "den"),
// /etc/hostname and /etc/profile.d/den.sh (PATH, HOME=/root, LANG=C.UTF-8,
// TERM defaulting to xterm-256color, a "user@den:dir" prompt), makes sure
// /etc/profile reads /etc/profile.d, and creates /root (0700), /tmp (1777),
// /workspace, /den/{attachments,offloads,browser,memory,skills,shared},
// /run/den and /usr/local/bin. It configures the package manager: Alpine's
// /etc/apk/repositories for the installed branch's main and community
// repositories; for apt, /etc/apt/sources.list with the mirror and suite,
// /etc/apt/apt.conf.d/99den (APT::Sandbox::User "root", so apt works in a
// single-uid user namespace, plus non-interactive defaults) and a
// /usr/sbin/policy-rc.d that keeps services from starting. Files are
// replaced by rename, so a symlink in the tree is replaced, never written
// through.
//
// # Extraction safety
//
// Tarballs and directories are written through an os.Root opened on the
// temporary directory, so no entry can create, link or change anything
// outside it: absolute names are confined (the leading "/" is dropped), a
// ".." component rejects the archive (ErrUnsafeArchive), and a path that
// would resolve through a symlink leading outside (absolute, or climbing
// with "..") is refused, whichever entry created the symlink. Symlinks are
// created as they are and never followed when created; hard links must name
// a file inside the tree. Modes including setuid, setgid and sticky, mtimes,
// symlinks, hard links and FIFOs are preserved; owners are preserved only
// when running as root. Device nodes are skipped (the sandbox provides
// /dev), as are sockets; extended attributes and file capabilities are not
// carried over (a Tree keeps them when asked: Tree.KeepXattrs). A corrupt or truncated archive fails with ErrCorrupt, and
// a tree without /bin/sh with ErrNotRootfs.
//
// # Concurrency
//
// Provision and Setup may run concurrently for different destinations.
// Options.Progress is called synchronously from the goroutine that called
// Provision; byte counts arrive at most about ten times a second.
package rootfs
