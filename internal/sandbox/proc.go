package sandbox

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ProcInfo is what den reads of a host process to find and stop the
// processes a command left behind.
type ProcInfo struct {
	Pid, PPid int
	Start     uint64 // start time, clock ticks since boot
}

// ReadProc reads /proc/PID/stat. ok is false when the process is gone.
func ReadProc(pid int) (ProcInfo, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ProcInfo{}, false
	}
	// The command name is in parentheses and may contain anything; the
	// fields after the last ')' are fixed.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return ProcInfo{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is the state (field 3); ppid is field 4, starttime field 22.
	if len(f) < 20 {
		return ProcInfo{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return ProcInfo{Pid: pid, PPid: ppid, Start: start}, true
}

// AllPids lists the pids in /proc.
func AllPids() []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	pids := make([]int, 0, len(ents))
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// HasEnv reports whether the process's initial environment contains the
// exact entry kv ("NAME=value").
func HasEnv(pid int, kv string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	for _, e := range bytes.Split(b, []byte{0}) {
		if string(e) == kv {
			return true
		}
	}
	return false
}

// NSpid returns the pid of a host process as seen in its innermost pid
// namespace.
func NSpid(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0, false
			}
			n, err := strconv.Atoi(f[len(f)-1])
			return n, err == nil
		}
	}
	return 0, false
}

// PidNS returns the identity of a process's pid namespace.
func PidNS(pid int) (string, bool) {
	s, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/pid")
	return s, err == nil
}

// Descendants returns every process below root (not root itself), given
// a snapshot of processes.
func Descendants(procs []ProcInfo, roots ...int) []int {
	children := make(map[int][]int)
	for _, p := range procs {
		children[p.PPid] = append(children[p.PPid], p.Pid)
	}
	var out []int
	seen := make(map[int]bool)
	queue := append([]int(nil), roots...)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// bootTicks is now, in the clock ticks of /proc/PID/stat's start time.
func bootTicks() uint64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	d := time.Duration(ts.Nano())
	return uint64(d / (time.Second / clockTicks))
}

// clockTicks is USER_HZ, which Linux fixes at 100 for /proc.
const clockTicks = 100
