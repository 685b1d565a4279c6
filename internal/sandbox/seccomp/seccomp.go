package seccomp

import (
	"encoding/binary"
	"fmt"
	"os"

	seccompbpf "github.com/elastic/go-seccomp-bpf"
	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// namespaceFlags are the clone(2) flags that create a new namespace.
// CLONE_NEWTIME (0x80) is absent on purpose: in clone(2) that bit belongs to
// the exit signal (CSIGNAL), and only clone3 and unshare accept it, both of
// which are denied outright.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWCGROUP

// personalities are the personality(2) arguments that stay allowed, the same
// set Docker's default profile allows: PER_LINUX, PER_LINUX32, UNAME26 alone
// and with PER_LINUX32, and the query value 0xffffffff (also as -1 widened to
// 64 bits, since the filter compares all 64 bits of the register).
var personalities = []uint64{0x0, 0x8, 0x20000, 0x20008, 0xffffffff, 0xffffffffffffffff}

// A rule is one entry of the denied table.
type rule struct {
	name   string
	errno  unix.Errno
	when   []seccompbpf.Condition // nil: every call; else calls matching all of them
	qual   string                 // when in words, for Denied
	reason string
}

// rules is the denied table. Entries whose syscall does not exist on the
// running architecture (iopl on arm64, say) are left out of the program.
// Everything not listed here is allowed.
var rules = []rule{
	// Mounts and the root: the sandbox's view of the filesystem is fixed by
	// bwrap before the filter is installed; nothing inside may change it.
	{name: "mount", errno: unix.EPERM, reason: "changes the mount table; the filesystem view is bwrap's"},
	{name: "umount", errno: unix.EPERM, reason: "uncovers what bwrap mounted over (absent on x86_64 and arm64)"},
	{name: "umount2", errno: unix.EPERM, reason: "uncovers what bwrap mounted over"},
	{name: "pivot_root", errno: unix.EPERM, reason: "swaps the root filesystem"},
	{name: "fsopen", errno: unix.EPERM, reason: "new mount API: mount by another route"},
	{name: "fsconfig", errno: unix.EPERM, reason: "new mount API: mount by another route"},
	{name: "fsmount", errno: unix.EPERM, reason: "new mount API: mount by another route"},
	{name: "fspick", errno: unix.EPERM, reason: "new mount API: reconfigures existing mounts"},
	{name: "move_mount", errno: unix.EPERM, reason: "new mount API: attaches or moves mounts"},
	{name: "open_tree", errno: unix.EPERM, reason: "new mount API: clones mount trees"},
	{name: "mount_setattr", errno: unix.EPERM, reason: "new mount API: flips read-only and other mount flags"},
	{name: "open_by_handle_at", errno: unix.EPERM, reason: "opens files by handle, bypassing path lookup (the Shocker escape)"},
	{name: "name_to_handle_at", errno: unix.EPERM, reason: "the other half of open_by_handle_at"},

	// Namespaces: a new user namespace hands back every capability that
	// --cap-drop took away, and it is the entry point of most kernel exploits.
	{name: "unshare", errno: unix.EPERM, reason: "creates namespaces (a user namespace regains all capabilities)"},
	{name: "setns", errno: unix.EPERM, reason: "joins other namespaces"},
	{
		name:   "clone",
		errno:  unix.EPERM,
		when:   []seccompbpf.Condition{{Argument: 0, Operation: seccompbpf.BitsSet, Value: namespaceFlags}},
		qual:   "with CLONE_NEW* flags",
		reason: "creates namespaces like unshare; plain fork and threads stay allowed",
	},
	{name: "clone3", errno: unix.ENOSYS, reason: "its flags sit in memory the filter cannot read; ENOSYS makes libc fall back to clone"},

	// Other processes' memory.
	{name: "ptrace", errno: unix.EPERM, reason: "reads and writes other processes; a classic seccomp bypass on old kernels"},
	{name: "process_vm_readv", errno: unix.EPERM, reason: "reads other processes' memory"},
	{name: "process_vm_writev", errno: unix.EPERM, reason: "writes other processes' memory"},

	// The kernel itself.
	{name: "kexec_load", errno: unix.EPERM, reason: "loads a new kernel"},
	{name: "kexec_file_load", errno: unix.EPERM, reason: "loads a new kernel"},
	{name: "init_module", errno: unix.EPERM, reason: "loads kernel code"},
	{name: "finit_module", errno: unix.EPERM, reason: "loads kernel code"},
	{name: "delete_module", errno: unix.EPERM, reason: "unloads kernel code"},
	{name: "bpf", errno: unix.EPERM, reason: "loads programs into the kernel; large attack surface"},
	{name: "perf_event_open", errno: unix.EPERM, reason: "kernel profiling; large attack surface and information leaks"},
	{name: "userfaultfd", errno: unix.EPERM, reason: "stalls kernel page faults, a staple of race exploits"},
	{name: "io_uring_setup", errno: unix.ENOSYS, reason: "large attack surface, and its operations bypass seccomp; ENOSYS makes callers fall back"},
	{name: "io_uring_enter", errno: unix.ENOSYS, reason: "see io_uring_setup"},
	{name: "io_uring_register", errno: unix.ENOSYS, reason: "see io_uring_setup"},
	{name: "lookup_dcookie", errno: unix.EPERM, reason: "kernel profiling helper (removed in Linux 6.8)"},
	{name: "uselib", errno: unix.EPERM, reason: "obsolete library loader (x86 only)"},

	// Keyrings are not namespaced: keys leak between sandbox and host.
	{name: "keyctl", errno: unix.EPERM, reason: "kernel keyring is not namespaced"},
	{name: "add_key", errno: unix.EPERM, reason: "kernel keyring is not namespaced"},
	{name: "request_key", errno: unix.EPERM, reason: "kernel keyring is not namespaced"},

	// Host administration.
	{name: "swapon", errno: unix.EPERM, reason: "host swap"},
	{name: "swapoff", errno: unix.EPERM, reason: "host swap"},
	{name: "reboot", errno: unix.EPERM, reason: "host power state"},
	{name: "acct", errno: unix.EPERM, reason: "host process accounting"},
	{name: "syslog", errno: unix.EPERM, reason: "kernel log: leaks addresses"},
	{name: "quotactl", errno: unix.EPERM, reason: "host disk quotas"},
	{name: "quotactl_fd", errno: unix.EPERM, reason: "host disk quotas"},
	{name: "iopl", errno: unix.EPERM, reason: "raw I/O port access (x86 only)"},
	{name: "ioperm", errno: unix.EPERM, reason: "raw I/O port access (x86 only)"},
	{
		name:   "personality",
		errno:  unix.EPERM,
		when:   personalityConditions(),
		qual:   "other than the default and 32-bit personalities",
		reason: "flags such as READ_IMPLIES_EXEC and ADDR_NO_RANDOMIZE weaken exploit mitigations",
	},
}

// personalityConditions matches a personality(2) argument outside personalities.
func personalityConditions() []seccompbpf.Condition {
	conds := make([]seccompbpf.Condition, len(personalities))
	for i, p := range personalities {
		conds[i] = seccompbpf.Condition{Argument: 0, Operation: seccompbpf.NotEqual, Value: p}
	}
	return conds
}

// active returns the rules whose syscall exists on the architecture.
func active(info *arch.Info) []rule {
	var out []rule
	for _, r := range rules {
		if _, ok := info.SyscallNames[r.name]; ok {
			out = append(out, r)
		}
	}
	return out
}

// Denied lists, in table order, the syscalls that the filter refuses on the
// running architecture. A name carries a note in parentheses when only some
// calls are refused or the errno is not EPERM, as in "clone3 (ENOSYS)".
// Calls from a foreign architecture are not listed: they kill the process.
func Denied() []string {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range active(info) {
		s := r.name
		switch {
		case r.qual != "":
			s += " (" + r.qual + ")"
		case r.errno != unix.EPERM:
			s += " (" + unix.ErrnoName(r.errno) + ")"
		}
		out = append(out, s)
	}
	return out
}

// Program returns the filter as bwrap --seccomp reads it: an array of
// struct sock_filter, 8 bytes each in native byte order. It is built for the
// architecture den runs on (runtime.GOARCH); an architecture without a
// syscall table in go-seccomp-bpf (x86_64, arm64, 386 and arm have one) is
// an error.
func Program() ([]byte, error) {
	insts, err := instructions()
	if err != nil {
		return nil, err
	}
	raw, err := bpf.Assemble(insts)
	if err != nil {
		return nil, fmt.Errorf("seccomp: assemble: %w", err)
	}
	out := make([]byte, 0, 8*len(raw))
	for _, in := range raw {
		out = binary.NativeEndian.AppendUint16(out, in.Op)
		out = append(out, in.Jt, in.Jf)
		out = binary.NativeEndian.AppendUint32(out, in.K)
	}
	return out, nil
}

// instructions builds the filter: an architecture check that kills the
// process on a foreign ABI, then go-seccomp-bpf's policy.
//
// go-seccomp-bpf alone is not enough here: when the architecture does not
// match it jumps to the default action, which is allow, so on x86_64 an
// int 0x80 (i386) syscall would slip past every rule written for x86_64
// numbers. Its own x32 check (syscall numbers with bit 30 set get ENOSYS)
// stays; the prefix below covers every other ABI.
func instructions() ([]bpf.Instruction, error) {
	info, err := arch.GetInfo("")
	if err != nil {
		return nil, fmt.Errorf("seccomp: %w", err)
	}
	policy := seccompbpf.Policy{DefaultAction: seccompbpf.ActionAllow, Syscalls: groups(active(info))}
	body, err := policy.Assemble()
	if err != nil {
		return nil, fmt.Errorf("seccomp: assemble policy: %w", err)
	}
	const archOffset = 4 // offsetof(struct seccomp_data, arch)
	prefix := []bpf.Instruction{
		bpf.LoadAbsolute{Off: archOffset, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: uint32(info.ID), SkipTrue: 1},
		bpf.RetConstant{Val: unix.SECCOMP_RET_KILL_PROCESS},
	}
	return append(prefix, body...), nil
}

// groups turns rules into go-seccomp-bpf groups, one per errno.
//
// The action is SECCOMP_RET_ERRNO with the errno in its low bits, given
// explicitly: go-seccomp-bpf turns a bare ActionErrno into EPERM and has no
// field for another errno, but passes any other value through.
func groups(rs []rule) []seccompbpf.SyscallGroup {
	var out []seccompbpf.SyscallGroup
	index := map[unix.Errno]int{}
	for _, r := range rs {
		i, ok := index[r.errno]
		if !ok {
			i = len(out)
			index[r.errno] = i
			out = append(out, seccompbpf.SyscallGroup{
				Action: seccompbpf.ActionErrno | seccompbpf.Action(r.errno),
			})
		}
		g := &out[i]
		if r.when == nil {
			g.Names = append(g.Names, r.name)
		} else {
			g.NamesWithCondtions = append(g.NamesWithCondtions, seccompbpf.NameWithConditions{Name: r.name, Conditions: r.when})
		}
	}
	return out
}

// File returns a sealed memfd holding Program, positioned at offset 0, for
// bwrap --seccomp FD. Pass it as exec.Cmd.ExtraFiles[i] (then FD is 3+i); it
// is close-on-exec in den and ExtraFiles clears that in the child. bwrap
// reads it to the end and the offset is shared with den's copy, so each
// bwrap start needs its own File. The caller closes it after Cmd.Start.
//
// A memfd rather than a pipe: it has no size limit, needs no writer
// goroutine, and its seals keep the sandbox from rewriting the filter.
func File() (*os.File, error) {
	prog, err := Program()
	if err != nil {
		return nil, err
	}
	fd, err := unix.MemfdCreate("den-seccomp", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("seccomp: memfd_create: %w", err)
	}
	f := os.NewFile(uintptr(fd), "den-seccomp")
	if err := fill(f, prog); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// fill writes prog to the memfd f, seals it and rewinds it.
func fill(f *os.File, prog []byte) error {
	if _, err := f.Write(prog); err != nil {
		return fmt.Errorf("seccomp: write filter: %w", err)
	}
	seals := unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(f.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		return fmt.Errorf("seccomp: seal filter: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		return fmt.Errorf("seccomp: rewind filter: %w", err)
	}
	return nil
}
