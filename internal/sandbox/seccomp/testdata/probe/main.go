// Command probe runs inside the sandbox for the seccomp tests. With no
// arguments it makes each probed syscall directly, with arguments chosen to
// be harmless (bad pointers, bad descriptors, bad flags), and prints one line
// per call: the probe name, a tab, and the errno (0 for success). With
// "spawn" it forks and execs /bin/true and starts threads; with "i386" it
// makes a getpid through the i386 ABI (amd64 only) and prints the result.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A call is one probed syscall.
type call struct {
	name string
	nr   uintptr
	args [6]uintptr
}

// bad is an address no process maps.
const bad = 1

// Personality flags (linux/personality.h), absent from x/sys/unix.
const (
	addrNoRandomize = 0x0040000
	readImpliesExec = 0x0400000
)

// missing is a NUL-terminated path that does not exist. It is a package
// variable so that the pointer passed as a uintptr stays reachable.
var missing = []byte("/nonexistent-den-probe\x00")

func main() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "spawn":
			spawn()
		case "i386":
			i386()
		default:
			fmt.Fprintf(os.Stderr, "probe: unknown mode %q\n", os.Args[1])
			os.Exit(2)
		}
		return
	}
	for _, c := range append(calls(), archCalls()...) {
		_, _, errno := unix.RawSyscall6(c.nr, c.args[0], c.args[1], c.args[2], c.args[3], c.args[4], c.args[5])
		fmt.Printf("%s\t%d\n", c.name, errno)
	}
}

func calls() []call {
	path := uintptr(unsafe.Pointer(&missing[0]))
	pid := uintptr(os.Getpid())
	cs := []call{
		{"getpid", unix.SYS_GETPID, [6]uintptr{}},
		{"mount", unix.SYS_MOUNT, [6]uintptr{bad, bad, bad}},
		{"umount2", unix.SYS_UMOUNT2, [6]uintptr{path}},
		{"pivot_root", unix.SYS_PIVOT_ROOT, [6]uintptr{path, path}},
		{"fsopen", unix.SYS_FSOPEN, [6]uintptr{bad, 0xffff}},
		{"fsconfig", unix.SYS_FSCONFIG, [6]uintptr{^uintptr(0), 0xffff}},
		{"fsmount", unix.SYS_FSMOUNT, [6]uintptr{^uintptr(0), 0xffff}},
		{"fspick", unix.SYS_FSPICK, [6]uintptr{^uintptr(0), bad, 0xffff}},
		{"move_mount", unix.SYS_MOVE_MOUNT, [6]uintptr{^uintptr(0), bad, ^uintptr(0), bad, 0xffff}},
		{"open_tree", unix.SYS_OPEN_TREE, [6]uintptr{^uintptr(0), bad, 0xffff}},
		{"mount_setattr", unix.SYS_MOUNT_SETATTR, [6]uintptr{^uintptr(0), bad, 0, 0, 0}},
		{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT, [6]uintptr{^uintptr(0), bad, 0}},
		{"name_to_handle_at", unix.SYS_NAME_TO_HANDLE_AT, [6]uintptr{^uintptr(0), bad, bad, bad, 0xffff}},
		{"unshare", unix.SYS_UNSHARE, [6]uintptr{0}},
		{"unshare/CLONE_NEWUSER", unix.SYS_UNSHARE, [6]uintptr{unix.CLONE_NEWUSER}},
		{"setns", unix.SYS_SETNS, [6]uintptr{^uintptr(0), 0}},
		// CLONE_SIGHAND without CLONE_VM is EINVAL, so no child is ever made.
		{"clone/plain", unix.SYS_CLONE, [6]uintptr{unix.CLONE_SIGHAND}},
		{"clone/CLONE_NEWNS", unix.SYS_CLONE, [6]uintptr{unix.CLONE_SIGHAND | unix.CLONE_NEWNS}},
		{"clone/CLONE_NEWUTS", unix.SYS_CLONE, [6]uintptr{unix.CLONE_SIGHAND | unix.CLONE_NEWUTS}},
		{"clone/CLONE_NEWIPC", unix.SYS_CLONE, [6]uintptr{unix.CLONE_SIGHAND | unix.CLONE_NEWIPC}},
		{"clone/CLONE_NEWUSER", unix.SYS_CLONE, [6]uintptr{unix.CLONE_SIGHAND | unix.CLONE_NEWUSER}},
		{"clone/CLONE_NEWPID", unix.SYS_CLONE, [6]uintptr{unix.CLONE_SIGHAND | unix.CLONE_NEWPID}},
		{"clone/CLONE_NEWNET", unix.SYS_CLONE, [6]uintptr{unix.CLONE_SIGHAND | unix.CLONE_NEWNET}},
		{"clone/CLONE_NEWCGROUP", unix.SYS_CLONE, [6]uintptr{unix.CLONE_SIGHAND | unix.CLONE_NEWCGROUP}},
		{"clone3", unix.SYS_CLONE3, [6]uintptr{0, 0}},
		{"ptrace", unix.SYS_PTRACE, [6]uintptr{unix.PTRACE_ATTACH, 0x3fffffff}},
		{"process_vm_readv", unix.SYS_PROCESS_VM_READV, [6]uintptr{pid, 0, 0, 0, 0, 0xffff}},
		{"process_vm_writev", unix.SYS_PROCESS_VM_WRITEV, [6]uintptr{pid, 0, 0, 0, 0, 0xffff}},
		{"kexec_load", unix.SYS_KEXEC_LOAD, [6]uintptr{0, 0, 0, 0xffffffff}},
		{"kexec_file_load", unix.SYS_KEXEC_FILE_LOAD, [6]uintptr{^uintptr(0), ^uintptr(0), 0, 0, 0xffff}},
		{"init_module", unix.SYS_INIT_MODULE, [6]uintptr{bad, 0, bad}},
		{"finit_module", unix.SYS_FINIT_MODULE, [6]uintptr{^uintptr(0), bad, 0xffff}},
		{"delete_module", unix.SYS_DELETE_MODULE, [6]uintptr{bad, 0}},
		{"bpf", unix.SYS_BPF, [6]uintptr{0xffff, 0, 0}},
		{"perf_event_open", unix.SYS_PERF_EVENT_OPEN, [6]uintptr{bad, 0, ^uintptr(0), ^uintptr(0), 0}},
		{"userfaultfd", unix.SYS_USERFAULTFD, [6]uintptr{0xffff}},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP, [6]uintptr{0, bad}},
		{"io_uring_enter", unix.SYS_IO_URING_ENTER, [6]uintptr{^uintptr(0), 0, 0, 0, 0, 0}},
		{"io_uring_register", unix.SYS_IO_URING_REGISTER, [6]uintptr{^uintptr(0), 0, 0, 0}},
		{"lookup_dcookie", unix.SYS_LOOKUP_DCOOKIE, [6]uintptr{0, bad, 0}},
		{"keyctl", unix.SYS_KEYCTL, [6]uintptr{0xffff}},
		{"add_key", unix.SYS_ADD_KEY, [6]uintptr{bad, bad, 0, 0, 0}},
		{"request_key", unix.SYS_REQUEST_KEY, [6]uintptr{bad, bad, 0, 0}},
		{"swapon", unix.SYS_SWAPON, [6]uintptr{bad, 0}},
		{"swapoff", unix.SYS_SWAPOFF, [6]uintptr{bad}},
		{"reboot", unix.SYS_REBOOT, [6]uintptr{0, 0, 0, 0}},
		{"acct", unix.SYS_ACCT, [6]uintptr{bad}},
		{"syslog", unix.SYS_SYSLOG, [6]uintptr{0xffff, 0, 0}},
		{"quotactl", unix.SYS_QUOTACTL, [6]uintptr{0xffffff, bad, 0, 0}},
		{"quotactl_fd", unix.SYS_QUOTACTL_FD, [6]uintptr{^uintptr(0), 0xffffff, 0, 0}},
		{"personality/PER_LINUX", unix.SYS_PERSONALITY, [6]uintptr{0}},
		{"personality/query", unix.SYS_PERSONALITY, [6]uintptr{0xffffffff}},
		{"personality/ADDR_NO_RANDOMIZE", unix.SYS_PERSONALITY, [6]uintptr{addrNoRandomize}},
	}
	// Unfiltered, this one succeeds and changes the probe's personality, so
	// it runs last.
	return append(cs, call{"personality/READ_IMPLIES_EXEC", unix.SYS_PERSONALITY, [6]uintptr{readImpliesExec}})
}

// spawn forks and execs /bin/true and runs goroutines on several threads.
func spawn() {
	if err := exec.Command("/bin/true").Run(); err != nil {
		fmt.Fprintf(os.Stderr, "probe: exec /bin/true: %v\n", err)
		os.Exit(1)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			// A locked goroutine that returns takes its thread with it,
			// so the runtime clones fresh threads for the others.
			runtime.LockOSThread()
			_ = unix.Getpid()
		})
	}
	wg.Wait()
	fmt.Println("spawn ok")
}
