// Package seccomp builds the seccomp filter that den hands to
// bwrap --seccomp FD for every sandboxed command.
//
// [Program] returns the filter as bwrap reads it (an array of 8-byte
// struct sock_filter records in native byte order), [File] returns it in a
// sealed memfd ready for exec.Cmd.ExtraFiles, and [Denied] lists the refused
// syscalls for den doctor.
//
// # Policy
//
// Everything is allowed except a short deny list; the sandbox must still
// run compilers, package managers (chroot stays allowed for them) and
// shells. The list, with the reason for each entry, is the rules table in
// seccomp.go. In short:
//
//   - mounts and the root: mount, umount, umount2, pivot_root, the new mount
//     API (fsopen, fsconfig, fsmount, fspick, move_mount, open_tree,
//     mount_setattr), open_by_handle_at and name_to_handle_at;
//   - namespaces: unshare, setns, and clone when its flags ask for a new
//     namespace (CLONE_NEWNS, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET,
//     NEWCGROUP); a new user namespace would hand back the capabilities
//     that --cap-drop ALL removed;
//   - clone3, with ENOSYS rather than EPERM: its flags live in memory that
//     a filter cannot read, and ENOSYS makes glibc and others fall back to
//     clone, where the flags are checked (Flatpak and Docker do the same);
//   - other processes: ptrace, process_vm_readv, process_vm_writev;
//   - kernel attack surface: kexec_load, kexec_file_load, init_module,
//     finit_module, delete_module, bpf, perf_event_open, userfaultfd,
//     lookup_dcookie, uselib, and io_uring_setup, io_uring_enter and
//     io_uring_register (ENOSYS, so callers fall back to ordinary I/O);
//   - the keyring, which is not namespaced: keyctl, add_key, request_key;
//   - host administration: swapon, swapoff, reboot, acct, syslog, quotactl,
//     quotactl_fd, iopl, ioperm;
//   - personality, except the values Docker allows (0, PER_LINUX32, UNAME26,
//     both, and the 0xffffffff query).
//
// Denied calls fail with EPERM unless noted. Entries that do not exist on
// the running architecture (iopl on arm64) are left out.
//
// A syscall made through a foreign ABI kills the process: the filter is
// written for one architecture's syscall numbers, and on x86_64 an i386
// call (int $0x80) would otherwise get past it. x32 calls on x86_64 (numbers
// with bit 30 set) fail with ENOSYS. go-seccomp-bpf alone allows foreign
// ABIs under a default-allow policy, which is why the filter starts with
// an architecture check of its own.
//
// # What it does not cover
//
// The filter narrows the kernel surface; the boundary is bwrap's namespaces
// and --cap-drop ALL, and many denied calls would fail for lack of a
// capability anyway. The filter does not restrict files, the network (that
// is --unshare-net), resources, or allowed syscalls' arguments other than
// clone's and personality's. It is built for runtime.GOARCH, which must be
// one go-seccomp-bpf has a syscall table for (amd64, arm64, 386, arm).
//
// # Concurrency
//
// The functions keep no state and may be called from any goroutine. Each
// bwrap start needs its own File, since bwrap reads it to the end.
package seccomp
