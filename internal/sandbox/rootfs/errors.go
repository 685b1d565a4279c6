package rootfs

import "errors"

// Sentinel errors. Provision and Setup wrap them once with the operation, so
// callers test them with errors.Is.
var (
	// ErrUnknownSource is returned by ParseSource for a spelling it does not
	// know; the message lists the valid forms.
	ErrUnknownSource = errors.New("unknown rootfs source")

	// ErrExists means the destination already exists. Provision never
	// replaces a rootfs; the caller removes it explicitly first.
	ErrExists = errors.New("destination already exists")

	// ErrChecksum means a download (or a cached copy) did not match its
	// published SHA-256.
	ErrChecksum = errors.New("checksum mismatch")

	// ErrUnreachable means a mirror could not be reached: a network or DNS
	// error, a timeout, or an HTTP 5xx answer.
	ErrUnreachable = errors.New("mirror unreachable")

	// ErrNotFound means the mirror answered but does not have the requested
	// release (HTTP 404, or no minirootfs entry in the release list).
	ErrNotFound = errors.New("release not found")

	// ErrUnsafeArchive means an archive entry tried to leave the destination
	// (a ".." component, or a path that resolves through a symlink pointing
	// outside).
	ErrUnsafeArchive = errors.New("unsafe archive entry")

	// ErrCorrupt means an archive could not be read: bad compression, a
	// truncated stream or an invalid tar header.
	ErrCorrupt = errors.New("corrupt archive")

	// ErrNotRootfs means the result has no /bin/sh, so it cannot serve as an
	// agent's computer (often an archive with an extra top-level folder).
	ErrNotRootfs = errors.New("not a root filesystem")

	// ErrOverlap means a dir: source and the destination contain each other.
	ErrOverlap = errors.New("source and destination overlap")

	// ErrToolMissing means an external program (xz, zstd, debootstrap,
	// mmdebstrap, busybox) is not installed.
	ErrToolMissing = errors.New("required tool missing")

	// ErrDiskFull means the disk holding the destination or the cache ran
	// out of space.
	ErrDiskFull = errors.New("no space left on the disk")
)
