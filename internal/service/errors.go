package service

import "errors"

var (
	// ErrNoSystemd is returned, wrapped, when systemctl is missing or
	// systemd is not running this machine.
	ErrNoSystemd = errors.New("systemd is not available here: run `den serve` under another supervisor instead " +
		"(runit, s6, OpenRC, supervisord, or a container's restart policy)")

	// ErrNotInstalled is returned, wrapped, by Uninstall when the unit
	// file is absent and by Status when systemd knows no den.service.
	ErrNotInstalled = errors.New("den.service is not installed")

	// ErrSecret is returned, wrapped with the variable's name, for an
	// Options.Env entry whose name looks like a secret.
	ErrSecret = errors.New("looks like a secret, and unit files are world-readable")

	// ErrInvalid wraps every other refusal of Options: a relative path, a
	// value the unit file cannot carry, an invalid name.
	ErrInvalid = errors.New("invalid service options")
)
