package cgroup

import (
	"bufio"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDetect checks Detect against this machine's mount table, read here
// with a second, simpler parser keyed on /proc/cgroups.
func TestDetect(t *testing.T) {
	info := Detect()
	t.Logf("Detect:\n%s", info)

	known := map[string]bool{}
	for _, line := range readLines(t, "/proc/cgroups") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
			known[f[0]] = true
		}
	}
	wantUnified, wantV1 := "", map[string]string{}
	for _, line := range readLines(t, "/proc/self/mountinfo") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		mount, fs := strings.Fields(pre), strings.Fields(post)
		switch fs[0] {
		case "cgroup2":
			if wantUnified == "" {
				wantUnified = mount[4]
			}
		case "cgroup":
			for _, opt := range strings.Split(fs[2], ",") {
				if known[opt] && wantV1[opt] == "" {
					wantV1[opt] = mount[4]
				}
			}
		}
	}
	if info.Unified != wantUnified {
		t.Errorf("Unified = %q, mountinfo says %q", info.Unified, wantUnified)
	}
	if diff := cmp.Diff(wantV1, info.Hierarchies); diff != "" {
		t.Errorf("Hierarchies differ from mountinfo (-want +got):\n%s", diff)
	}

	v1 := wantV1["pids"] != "" || wantV1["memory"] != "" || wantV1["cpu"] != "" || wantV1["freezer"] != ""
	want := None
	switch {
	case wantUnified != "" && v1:
		want = Hybrid
	case wantUnified != "":
		want = V2
	case v1:
		want = V1
	}
	if info.Version != want {
		t.Errorf("Version = %v, mountinfo says %v", info.Version, want)
	}
	if os.Geteuid() == 0 && want != None && !info.Usable() {
		t.Errorf("running as root on %v, but Detect says unusable: %s", want, info.Reason)
	}
	if !info.Usable() && info.Reason == "" {
		t.Errorf("unusable without a reason")
	}
	if info.Usable() && info.Backend != V1 && info.Backend != V2 {
		t.Errorf("Backend = %v, want v1 or v2", info.Backend)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		lines = append(lines, s.Text())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return lines
}

func TestParseMountinfo(t *testing.T) {
	tests := []struct {
		name        string
		mountinfo   string
		wantUnified string
		wantV1      map[string]string
	}{
		{
			name:        "v2",
			mountinfo:   "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n",
			wantUnified: "/sys/fs/cgroup",
			wantV1:      map[string]string{},
		},
		{
			name: "hybrid",
			mountinfo: "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n" +
				"32 31 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:7 - cgroup cgroup rw,cpu,cpuacct\n" +
				"35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n" +
				"39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n" +
				"40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd\n" +
				"41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
			wantUnified: "/sys/fs/cgroup/unified",
			wantV1: map[string]string{
				"cpu":     "/sys/fs/cgroup/cpu,cpuacct",
				"cpuacct": "/sys/fs/cgroup/cpu,cpuacct",
				"memory":  "/sys/fs/cgroup/memory",
				"pids":    "/sys/fs/cgroup/pids",
			},
		},
		{
			name: "bind mount of a subtree, then the root; escaped space",
			mountinfo: "50 40 0:32 /docker/abc /mnt/x rw - cgroup cgroup rw,memory\n" +
				"51 40 0:32 / /mnt/my\\040cgroups rw - cgroup cgroup rw,memory\n",
			wantV1: map[string]string{"memory": "/mnt/my cgroups"},
		},
		{
			name:      "none",
			mountinfo: "22 1 0:21 / /proc rw - proc proc rw\n",
			wantV1:    map[string]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			unified, v1, err := parseMountinfo(strings.NewReader(tt.mountinfo))
			if err != nil {
				t.Fatal(err)
			}
			if unified != tt.wantUnified {
				t.Errorf("unified = %q, want %q", unified, tt.wantUnified)
			}
			if diff := cmp.Diff(tt.wantV1, v1); diff != "" {
				t.Errorf("v1 (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseProcCgroup(t *testing.T) {
	got, err := parseProcCgroup(strings.NewReader(
		"9:name=systemd:/\n4:memory:/process_api/5615\n2:cpu,cpuacct:/a\n0::/user.slice/den.scope\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"name=systemd": "/", "memory": "/process_api/5615", "cpu": "/a", "cpuacct": "/a",
		"": "/user.slice/den.scope",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestValidName(t *testing.T) {
	tests := []struct {
		name string
		ok   bool
	}{
		{"agent-default", true},
		{"agent-default/sess-123", true},
		{"a_b.c/D-9", true},
		{"", false},
		{"../x", false},
		{"a/../x", false},
		{"a/./x", false},
		{"/abs", false},
		{"a//b", false},
		{"a/", false},
		{".hidden", false},
		{"a b", false},
		{"cgroup.procs", false},
		{"memory.max", false},
		{"x/pids.max", false},
		{strings.Repeat("a", 256), false},
	}
	for _, tt := range tests {
		err := validName(tt.name)
		if (err == nil) != tt.ok {
			t.Errorf("validName(%q) = %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidName) {
			t.Errorf("validName(%q) = %v, want ErrInvalidName", tt.name, err)
		}
	}
}

func TestShares(t *testing.T) {
	for weight, want := range map[uint64]string{1: "10", 100: "1024", 200: "2048", 10000: "102400"} {
		if got := shares(weight); got != want {
			t.Errorf("shares(%d) = %s, want %s", weight, got, want)
		}
	}
}

func TestNewUnavailable(t *testing.T) {
	info := Detect()
	if info.Usable() {
		t.Skip("cgroups are usable here")
	}
	if _, err := New("den-test"); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), info.Reason) {
		t.Errorf("New = %v, want ErrUnavailable with %q", err, info.Reason)
	}
}
