//go:build !386 && !arm

package hostfs

import "golang.org/x/sys/unix"

// sysSetgroups is setgroups(2) with 32-bit gids.
const sysSetgroups = unix.SYS_SETGROUPS
