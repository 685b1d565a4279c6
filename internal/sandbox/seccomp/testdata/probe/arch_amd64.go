package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// x32 is __X32_SYSCALL_BIT, which selects the x32 ABI.
const x32 = 0x40000000

func archCalls() []call {
	return []call{
		{"iopl", unix.SYS_IOPL, [6]uintptr{4}},
		{"ioperm", unix.SYS_IOPERM, [6]uintptr{0xffff0, 0x100, 1}},
		{"uselib", unix.SYS_USELIB, [6]uintptr{bad}},
		{"x32/getpid", x32 | unix.SYS_GETPID, [6]uintptr{}},
		{"x32/mount", x32 | unix.SYS_MOUNT, [6]uintptr{bad, bad, bad}},
	}
}

// int80 makes a syscall through the i386 ABI (int $0x80).
func int80(trap, a1, a2, a3 uintptr) uintptr

// i386 prints the result of getpid (20 in the i386 table) made through int $0x80.
func i386() {
	fmt.Printf("i386 getpid\t%d\n", int(int80(20, 0, 0, 0)))
}
