package netns

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// MinVersion is the oldest slirp4netns den runs: --netns-type,
// --userns-path, --enable-sandbox and --enable-seccomp all exist from
// 0.4.0 (--disable-host-loopback, --ready-fd and --exit-fd are older).
// Debian 12 ships 1.2.0.
const MinVersion = "0.4.0"

const (
	install = "install slirp4netns (Debian/Ubuntu: apt-get install slirp4netns)"
	tunFix  = "chmod 0666 /dev/net/tun, udev's default (creating a device still needs CAP_NET_ADMIN in a network namespace)"
)

// slirpPath is path, or slirp4netns found on PATH when path is "".
func slirpPath(path string) (string, error) {
	if path == "" {
		p, err := exec.LookPath("slirp4netns")
		if err != nil {
			return "", fmt.Errorf("netns: %w: slirp4netns not found: %s", ErrUnavailable, install)
		}
		return p, nil
	}
	if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", fmt.Errorf("netns: %w: %s is not an executable slirp4netns: %s", ErrUnavailable, path, install)
	}
	return path, nil
}

var (
	versionRE  = regexp.MustCompile(`(?m)^slirp4netns version (\d+)\.(\d+)(?:\.(\d+))?`)
	libslirpRE = regexp.MustCompile(`(?m)^libslirp: (\S+)`)
)

// Version runs `slirp4netns --version` and returns its version, and the
// whole output (which names libslirp and libseccomp).
func Version(path string) (version, output string, err error) {
	out, err := exec.Command(path, "--version").Output()
	if err != nil {
		return "", "", fmt.Errorf("netns: %s --version: %w", path, err)
	}
	m := versionRE.FindStringSubmatch(string(out))
	if m == nil {
		return "", "", fmt.Errorf("netns: %s --version: unexpected output %q", path, strings.TrimSpace(string(out)))
	}
	v := m[1] + "." + m[2]
	if m[3] != "" {
		v += "." + m[3]
	}
	return v, string(out), nil
}

func versionLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			return x < y
		}
	}
	return false
}

// Check reports whether Attach can work on this host, for den doctor:
// slirp4netns on PATH and its version, whether it was built with
// seccomp, and /dev/net/tun, which an unprivileged slirp4netns must be
// able to open.
// ok is false when Attach cannot work here; when it is true, fix may
// still say how slirp4netns could run with less privilege.
func Check() (ok bool, detail, fix string) {
	path, err := slirpPath("")
	if err != nil {
		return false, "slirp4netns not found on PATH, so the computer cannot have a network", install
	}
	v, out, err := Version(path)
	if err != nil {
		return false, err.Error(), install
	}
	if versionLess(v, MinVersion) {
		return false, fmt.Sprintf("%s is version %s, older than %s", path, v, MinVersion), "upgrade slirp4netns to " + MinVersion + " or newer"
	}
	detail = fmt.Sprintf("%s %s", path, v)
	if m := libslirpRE.FindStringSubmatch(out); m != nil {
		detail += ", libslirp " + m[1]
	}
	var fixes []string
	if !strings.Contains(out, "libseccomp:") {
		detail += "; built without libseccomp, so it runs without --enable-seccomp"
		fixes = append(fixes, "a slirp4netns built with libseccomp (Debian's is) also confines itself with seccomp")
	}
	var st unix.Stat_t
	if err := unix.Stat("/dev/net/tun", &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR {
		return false, detail + "; no /dev/net/tun character device", "load the tun module (modprobe tun); in a container, pass /dev/net/tun in"
	}
	if os.Geteuid() != 0 {
		if ok, why := tunUsable(uint32(os.Geteuid()), uint32(os.Getegid())); !ok {
			return false, detail + "; " + why + ", which den's user cannot open", tunFix
		}
	} else if st.Mode&0o006 != 0o006 {
		detail += fmt.Sprintf("; /dev/net/tun has mode %#o, so slirp4netns runs as root instead of as the sandbox's user", st.Mode&0o777)
		fixes = append(fixes, tunFix)
	}
	return true, detail, strings.Join(fixes, "; ")
}
