package seccomp

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

const (
	retAllow = unix.SECCOMP_RET_ALLOW
	retKill  = unix.SECCOMP_RET_KILL_PROCESS
	retEPERM = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
	retNOSYS = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
)

// seccompData lays out a struct seccomp_data for bpf.VM. The VM loads words
// big-endian while the kernel loads them in native order, so each 32-bit
// word is written big-endian at the offset it has in native order.
func seccompData(nr uint32, auditArch arch.AuditArch, args ...uint64) []byte {
	buf := make([]byte, 64)
	binary.BigEndian.PutUint32(buf[0:], nr)
	binary.BigEndian.PutUint32(buf[4:], uint32(auditArch))
	lo, hi := 0, 4
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		lo, hi = 4, 0
	}
	for i, a := range args {
		off := 16 + 8*i
		binary.BigEndian.PutUint32(buf[off+lo:], uint32(a))
		binary.BigEndian.PutUint32(buf[off+hi:], uint32(a>>32))
	}
	return buf
}

// TestDecisions runs the filter in x/net/bpf's VM against hand-made
// seccomp_data, so the policy is checked without a kernel.
func TestDecisions(t *testing.T) {
	info, err := arch.GetInfo("")
	if err != nil {
		t.Skipf("no syscall table for %s: %v", runtime.GOARCH, err)
	}
	insts, err := instructions()
	if err != nil {
		t.Fatal(err)
	}
	vm, err := bpf.NewVM(insts)
	if err != nil {
		t.Fatalf("bpf.NewVM: %v", err)
	}
	nr := func(name string) uint32 {
		n, ok := info.SyscallNames[name]
		if !ok {
			t.Fatalf("no syscall %s on %s", name, info.Name)
		}
		return uint32(n)
	}
	foreign := arch.I386.ID
	if info.ID == arch.I386.ID {
		foreign = arch.X86_64.ID
	}
	type decision struct {
		name string
		data []byte
		want uint32
	}
	tests := []decision{
		{"getpid", seccompData(nr("getpid"), info.ID), retAllow},
		{"read", seccompData(nr("read"), info.ID, 0, 0, 0), retAllow},
		{"chroot", seccompData(nr("chroot"), info.ID), retAllow},
		{"mount", seccompData(nr("mount"), info.ID), retEPERM},
		{"unshare", seccompData(nr("unshare"), info.ID), retEPERM},
		{"clone3", seccompData(nr("clone3"), info.ID), retNOSYS},
		{"io_uring_setup", seccompData(nr("io_uring_setup"), info.ID), retNOSYS},
		{"clone fork", seccompData(nr("clone"), info.ID, uint64(unix.SIGCHLD)), retAllow},
		{"clone thread", seccompData(nr("clone"), info.ID, unix.CLONE_VM|unix.CLONE_FS|unix.CLONE_FILES|unix.CLONE_SIGHAND|unix.CLONE_THREAD|unix.CLONE_SYSVSEM), retAllow},
		{"clone vfork", seccompData(nr("clone"), info.ID, unix.CLONE_VM|unix.CLONE_VFORK|uint64(unix.SIGCHLD)), retAllow},
		{"clone CLONE_NEWUSER", seccompData(nr("clone"), info.ID, unix.CLONE_NEWUSER|uint64(unix.SIGCHLD)), retEPERM},
		{"clone CLONE_NEWNET", seccompData(nr("clone"), info.ID, unix.CLONE_NEWNET), retEPERM},
		{"clone CLONE_NEWCGROUP", seccompData(nr("clone"), info.ID, unix.CLONE_NEWCGROUP), retEPERM},
		{"personality 0", seccompData(nr("personality"), info.ID, 0), retAllow},
		{"personality PER_LINUX32", seccompData(nr("personality"), info.ID, 8), retAllow},
		{"personality query", seccompData(nr("personality"), info.ID, 0xffffffff), retAllow},
		{"personality query -1", seccompData(nr("personality"), info.ID, ^uint64(0)), retAllow},
		{"personality READ_IMPLIES_EXEC", seccompData(nr("personality"), info.ID, 0x0400000), retEPERM},
		{"personality high bits", seccompData(nr("personality"), info.ID, 1<<32), retEPERM},
		{"foreign arch getpid", seccompData(20, foreign), retKill},
		{"foreign arch mount", seccompData(21, foreign), retKill},
	}
	if info.ID == arch.X86_64.ID {
		tests = append(tests, decision{"x32 mount", seccompData(0x40000000|nr("mount"), info.ID), retNOSYS})
	}
	for _, tt := range tests {
		got, err := vm.Run(tt.data)
		if err != nil {
			t.Errorf("%s: run: %v", tt.name, err)
			continue
		}
		if uint32(got) != tt.want {
			t.Errorf("%s: action %#x, want %#x", tt.name, got, tt.want)
		}
	}
}

func TestProgram(t *testing.T) {
	prog, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	if len(prog) == 0 || len(prog)%8 != 0 {
		t.Fatalf("len(Program()) = %d, want a positive multiple of 8", len(prog))
	}
	if n := len(prog) / 8; n > unix.BPF_MAXINSNS {
		t.Fatalf("%d instructions, kernel limit %d", n, unix.BPF_MAXINSNS)
	}
	// The first record loads seccomp_data.arch: BPF_LD|BPF_W|BPF_ABS, k=4.
	if op, k := binary.NativeEndian.Uint16(prog), binary.NativeEndian.Uint32(prog[4:]); op != unix.BPF_LD|unix.BPF_W|unix.BPF_ABS || k != 4 {
		t.Errorf("first record op=%#x k=%d, want a load of the arch field", op, k)
	}
	t.Logf("%d bytes, %d instructions", len(prog), len(prog)/8)
}

func TestFile(t *testing.T) {
	want, err := Program()
	if err != nil {
		t.Fatal(err)
	}
	f, err := File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("File holds %d bytes, differing from Program's %d", len(got), len(want))
	}
	if _, err := f.WriteAt([]byte{0}, 0); err == nil {
		t.Error("writing the sealed filter succeeded")
	}
}

func TestDenied(t *testing.T) {
	denied := Denied()
	for _, want := range []string{"mount", "unshare", "ptrace", "clone3 (ENOSYS)", "clone (with CLONE_NEW* flags)"} {
		if !slices.Contains(denied, want) {
			t.Errorf("Denied() lacks %q: %q", want, denied)
		}
	}
	if slices.Contains(denied, "chroot") {
		t.Error("Denied() lists chroot, which package managers need")
	}
}

// requireBwrap returns bwrap's path. A missing bwrap fails the test under
// CI=true and skips it elsewhere.
func requireBwrap(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("bwrap")
	if err == nil {
		return path
	}
	const msg = "bwrap not found; install the Debian package bubblewrap"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// buildProbe compiles testdata/probe into a temporary directory.
func buildProbe(t *testing.T) string {
	t.Helper()
	gotool, err := exec.LookPath("go")
	if err != nil {
		gotool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	out := filepath.Join(t.TempDir(), "probe")
	cmd := exec.CommandContext(t.Context(), gotool, "build", "-o", out, "./testdata/probe")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build probe: %v\n%s", err, b)
	}
	return out
}

// sandbox runs args under bwrap as den does, plus the bwrap flags in extra,
// with the probe mounted at /tmp/probe, and returns the combined output. With
// filter false it leaves out --seccomp, for a control run.
func sandbox(t *testing.T, bwrap, probe string, filter bool, extra []string, args ...string) (string, error) {
	t.Helper()
	bw := []string{
		"--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp",
		"--ro-bind", probe, "/tmp/probe",
		"--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
	}
	bw = append(bw, extra...)
	cmd := exec.CommandContext(t.Context(), bwrap)
	if filter {
		f, err := File()
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		cmd.ExtraFiles = []*os.File{f}
		bw = append(bw, "--seccomp", "3")
	}
	cmd.Args = append(append(append(cmd.Args, bw...), "--"), args...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// parseProbe reads the probe's "name\terrno" lines.
func parseProbe(t *testing.T, out string) map[string]unix.Errno {
	t.Helper()
	got := map[string]unix.Errno{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		name, num, ok := strings.Cut(sc.Text(), "\t")
		n, err := strconv.Atoi(num)
		if !ok || err != nil {
			t.Fatalf("probe printed %q", sc.Text())
		}
		got[name] = unix.Errno(n)
	}
	return got
}

// expectations maps each probe to the errno it must see under the filter.
// Every unconditional rule on this architecture is one probe of its own
// name; the conditional rules and the allowed neighbours are listed here.
func expectations(t *testing.T) map[string]unix.Errno {
	t.Helper()
	info, err := arch.GetInfo("")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]unix.Errno{
		"getpid":                        0,
		"unshare/CLONE_NEWUSER":         unix.EPERM,
		"clone/plain":                   unix.EINVAL, // reaches the kernel, which rejects the flags
		"personality/PER_LINUX":         0,
		"personality/query":             0,
		"personality/ADDR_NO_RANDOMIZE": unix.EPERM,
		"personality/READ_IMPLIES_EXEC": unix.EPERM,
	}
	for _, f := range []string{"NEWNS", "NEWUTS", "NEWIPC", "NEWUSER", "NEWPID", "NEWNET", "NEWCGROUP"} {
		want["clone/CLONE_"+f] = unix.EPERM
	}
	for _, r := range active(info) {
		if r.when == nil {
			want[r.name] = r.errno
			continue
		}
		covered := false
		for k := range want {
			covered = covered || strings.HasPrefix(k, r.name+"/")
		}
		if !covered {
			t.Fatalf("conditional rule %s has no probe", r.name)
		}
	}
	if info.ID == arch.X86_64.ID {
		want["x32/getpid"] = unix.ENOSYS
		want["x32/mount"] = unix.ENOSYS
	}
	return want
}

// TestSandbox installs the filter with bwrap --seccomp and checks what the
// sandboxed processes can and cannot do.
func TestSandbox(t *testing.T) {
	bwrap := requireBwrap(t)
	probe := buildProbe(t)
	run := func(t *testing.T, args ...string) (string, error) {
		t.Helper()
		return sandbox(t, bwrap, probe, true, nil, args...)
	}

	t.Run("status", func(t *testing.T) {
		out, err := run(t, "cat", "/proc/self/status")
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !strings.Contains(out, "\nSeccomp:\t2\n") {
			t.Errorf("/proc/self/status lacks Seccomp:\t2:\n%s", out)
		}
	})

	t.Run("unshare", func(t *testing.T) {
		for _, flag := range []string{"-U", "-r", "-n", "-m"} {
			out, err := run(t, "unshare", flag, "true")
			if err == nil {
				t.Errorf("unshare %s true succeeded:\n%s", flag, out)
			} else if !strings.Contains(out, "Operation not permitted") {
				t.Errorf("unshare %s true: %v, want EPERM:\n%s", flag, err, out)
			}
		}
	})

	t.Run("mount", func(t *testing.T) {
		// As uid 0, else mount(8) refuses before making the syscall. This
		// cannot tell the filter from --cap-drop; the syscalls probe can.
		uid0 := []string{"--uid", "0", "--gid", "0"}
		out, err := sandbox(t, bwrap, probe, true, uid0, "mount", "-t", "tmpfs", "none", "/tmp")
		if err == nil {
			t.Fatalf("mount succeeded:\n%s", out)
		}
		// util-linux words EPERM either way, depending on its version.
		if !strings.Contains(out, "Operation not permitted") && !strings.Contains(out, "permission denied") {
			t.Errorf("mount: %v, want EPERM:\n%s", err, out)
		}
	})

	t.Run("syscalls", func(t *testing.T) {
		out, err := run(t, "/tmp/probe")
		if err != nil {
			t.Fatalf("probe: %v\n%s", err, out)
		}
		got := parseProbe(t, out)
		if diff := cmp.Diff(expectations(t), got); diff != "" {
			t.Errorf("errno per probe (-want +got):\n%s", diff)
		}

		// The same probe without the filter must see other answers where
		// the arguments make that certain, so the EPERMs above are the
		// filter's and not --cap-drop's.
		out, err = sandbox(t, bwrap, probe, false, nil, "/tmp/probe")
		if err != nil {
			t.Fatalf("control probe: %v\n%s", err, out)
		}
		control := parseProbe(t, out)
		for _, name := range []string{
			"mount", "unshare", "setns", "clone3", "ptrace", "process_vm_readv", "keyctl",
			"clone/CLONE_NEWUSER", "clone/CLONE_NEWNS", "clone/CLONE_NEWNET", "personality/READ_IMPLIES_EXEC",
		} {
			if control[name] == got[name] {
				t.Errorf("%s: errno %d with and without the filter", name, got[name])
			}
		}
		var same []string
		for name, e := range control {
			if e == got[name] && e != 0 && name != "clone/plain" {
				same = append(same, name+"="+unix.ErrnoName(e))
			}
		}
		slices.Sort(same)
		t.Logf("denied by the kernel even without the filter: %s", strings.Join(same, " "))
	})

	t.Run("ordinary work", func(t *testing.T) {
		script := `set -e
ls / >/dev/null
cat /etc/passwd >/dev/null
test "$(echo hi | tr h H)" = Hi
sh -c 'exit 3' || test $? -eq 3
(cd /tmp && echo x >f && test "$(cat f)" = x)
echo pid=$$
`
		out, err := run(t, "sh", "-c", script)
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		if !strings.Contains(out, "pid=") {
			t.Errorf("no pid printed:\n%s", out)
		}
		out, err = run(t, "/tmp/probe", "spawn")
		if err != nil || !strings.Contains(out, "spawn ok") {
			t.Errorf("probe spawn: %v\n%s", err, out)
		}
	})

	t.Run("libc threads", func(t *testing.T) {
		// glibc 2.34+ makes threads with clone3 and must fall back to clone.
		py, err := exec.LookPath("/usr/bin/python3")
		if err != nil {
			const msg = "no /usr/bin/python3 to start libc threads: install the Debian package python3"
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
		out, err := run(t, py, "-c", "import threading; t = threading.Thread(target=print, args=('thread ok',)); t.start(); t.join()")
		if err != nil || !strings.Contains(out, "thread ok") {
			t.Errorf("python3 thread: %v\n%s", err, out)
		}
	})

	t.Run("i386", func(t *testing.T) {
		if runtime.GOARCH != "amd64" {
			t.Skip("the i386 ABI probe is amd64 only")
		}
		out, err := sandbox(t, bwrap, probe, false, nil, "/tmp/probe", "i386")
		if err != nil || !strings.Contains(out, "i386 getpid\t") || strings.Contains(out, "\t-") {
			if os.Getenv("CI") == "true" {
				t.Fatalf("the kernel does not run i386 syscalls (no IA32 emulation), so the filter's i386 rules go untested: %v %q", err, out)
			}
			t.Skipf("the kernel does not run i386 syscalls (no IA32 emulation): %v %q", err, out)
		}
		out, err = run(t, "/tmp/probe", "i386")
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("i386 getpid under the filter: %v, want the process killed\n%s", err, out)
		}
		// bwrap's init reports a child killed by signal N as exit 128+N.
		if code := exit.ExitCode(); code != 128+int(unix.SIGSYS) {
			t.Errorf("exit code %d, want %d (SIGSYS)\n%s", code, 128+int(unix.SIGSYS), out)
		}
	})
}

func BenchmarkProgram(b *testing.B) {
	for b.Loop() {
		if _, err := Program(); err != nil {
			b.Fatal(err)
		}
	}
}
