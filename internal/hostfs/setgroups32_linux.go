//go:build 386 || arm

package hostfs

import "golang.org/x/sys/unix"

// sysSetgroups is setgroups(2) with 32-bit gids; on these platforms
// SYS_SETGROUPS takes 16-bit ones.
const sysSetgroups = unix.SYS_SETGROUPS32
