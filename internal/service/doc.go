// Package service installs `den serve` as a systemd service: Unit renders
// den.service, Install writes it and has systemd enable and start it,
// Status reports on it and Uninstall stops, disables and removes it. It
// backs `den service install|status|uninstall [--user | --system]`.
//
// A --user service runs in the user's own systemd manager, from
// ~/.config/systemd/user, and stops at logout unless lingering is enabled
// (Install says which). A --system service runs from /etc/systemd/system,
// as root or as the account Options.RunAs names.
//
// Invariants:
//   - The unit holds no secrets. Environment variables whose names look
//     like secrets are refused; keys belong in the optional EnvironmentFile
//     (%h/.config/den/env, or /etc/den/env for --system), which the user
//     creates with mode 0600.
//   - Every value that reaches the unit is quoted and escaped by systemd's
//     own rules (systemd.syntax(7) "Quoting", systemd.service(5) "Command
//     lines"), so den receives exactly the arguments and values given.
//     Values those rules cannot carry (NUL bytes, control characters other
//     than tab and newline, invalid UTF-8) are refused.
//   - The unit file is written atomically, mode 0644.
//   - systemctl and loginctl failures carry their standard error. Without
//     systemctl, or on a machine systemd did not boot, the error is
//     ErrNoSystemd, which says to run `den serve` under another
//     supervisor.
//
// The functions keep no state between calls; calls for one unit directory
// must not overlap.
package service
