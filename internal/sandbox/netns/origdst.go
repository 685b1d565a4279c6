package netns

import (
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// soOriginalDst is SO_ORIGINAL_DST (and IP6T_SO_ORIGINAL_DST, the same
// number at SOL_IPV6).
const soOriginalDst = 80

// OriginalDst is where the computer meant a connection to go that one
// of Net's TCP listeners accepted: the address before the redirect. A
// connection the computer made to the listener itself (not redirected)
// reports the listener's own address.
func OriginalDst(c net.Conn) (netip.AddrPort, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return netip.AddrPort{}, fmt.Errorf("netns: original destination: %T is not a socket", c)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("netns: original destination: %w", err)
	}
	local, _ := netip.ParseAddrPort(c.LocalAddr().String())
	var ap netip.AddrPort
	var gerr error
	err = rc.Control(func(fd uintptr) {
		if local.Addr().Is4() || local.Addr().Is4In6() {
			var sa unix.RawSockaddrInet4
			size := uint32(unsafe.Sizeof(sa))
			gerr = getsockopt(fd, unix.SOL_IP, unsafe.Pointer(&sa), &size)
			if gerr == nil {
				ap = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), netPort(&sa.Port))
			}
			return
		}
		var sa unix.RawSockaddrInet6
		size := uint32(unsafe.Sizeof(sa))
		gerr = getsockopt(fd, unix.SOL_IPV6, unsafe.Pointer(&sa), &size)
		if gerr == nil {
			ap = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr).Unmap(), netPort(&sa.Port))
		}
	})
	if err == nil {
		err = gerr
	}
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("netns: original destination: %w", err)
	}
	return ap, nil
}

func getsockopt(fd uintptr, level int, p unsafe.Pointer, size *uint32) error {
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, fd, uintptr(level), soOriginalDst, uintptr(p), uintptr(unsafe.Pointer(size)), 0)
	if e != 0 {
		return e
	}
	return nil
}

// netPort reads a port kept in network byte order.
func netPort(p *uint16) uint16 {
	b := (*[2]byte)(unsafe.Pointer(p))
	return uint16(b[0])<<8 | uint16(b[1])
}
