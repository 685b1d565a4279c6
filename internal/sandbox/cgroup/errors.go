package cgroup

import "errors"

var (
	// ErrUnavailable reports that den cannot create cgroups on this host:
	// no cgroup filesystem, cgroup v1 without root, or a cgroup v2 subtree
	// that is not delegated to den's user. The wrapping error says which,
	// and how to fix it.
	ErrUnavailable = errors.New("cgroups unavailable")

	// ErrInvalidName reports a group name that is empty, absolute, contains
	// "." or ".." elements, or uses characters other than letters, digits,
	// '-', '_' and '.'.
	ErrInvalidName = errors.New("invalid cgroup name")

	// ErrNoController reports a limit whose controller (memory, pids or cpu)
	// is not available where den creates groups.
	ErrNoController = errors.New("controller not available")

	// ErrNotEmpty reports a group that still holds processes after Kill
	// gave up, typically because they are stuck in uninterruptible sleep.
	ErrNotEmpty = errors.New("cgroup still has processes")
)
