package netns

import (
	"strings"
	"testing"
)

// TestArgs pins slirp4netns's command line: every flag is a decision
// (see args and doc.go), and a change to one should be deliberate.
func TestArgs(t *testing.T) {
	tests := []struct {
		name string
		h    hardening
		want string
	}{
		{name: "default", h: hardening{sandbox: true, seccomp: true},
			want: "--configure --mtu=65520 --disable-host-loopback --enable-sandbox --enable-seccomp --ready-fd=3 --exit-fd=4 --netns-type=pid --userns-path=/proc/4242/ns/user 4242 tap0"},
		{name: "without seccomp", h: hardening{sandbox: true},
			want: "--configure --mtu=65520 --disable-host-loopback --enable-sandbox --ready-fd=3 --exit-fd=4 --netns-type=pid --userns-path=/proc/4242/ns/user 4242 tap0"},
		{name: "without either", h: hardening{},
			want: "--configure --mtu=65520 --disable-host-loopback --ready-fd=3 --exit-fd=4 --netns-type=pid --userns-path=/proc/4242/ns/user 4242 tap0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(args(4242, defaultMTU, tt.h), " "); got != tt.want {
				t.Errorf("args:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestVersionLess(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"0.3.3", "0.4.0", true},
		{"0.4.0", "0.4.0", false},
		{"1.2.0", "0.4.0", false},
		{"0.4", "0.4.1", true},
	}
	for _, tt := range tests {
		if got := versionLess(tt.a, tt.b); got != tt.want {
			t.Errorf("versionLess(%s, %s) = %v", tt.a, tt.b, got)
		}
	}
}

func TestOneLine(t *testing.T) {
	out := "sent tapfd=7 for tap0\nreceived tapfd=7\ncannot unshare new mount namespace\ncreate_sandbox failed\ndo_slirp is exiting\ndo_slirp failed\nparent failed\n"
	if got, want := oneLine(out), "cannot unshare new mount namespace; create_sandbox failed"; got != want {
		t.Errorf("oneLine = %q, want %q", got, want)
	}
}

func TestResolvConfPadding(t *testing.T) {
	for _, size := range []int{4096, 65536} {
		b := resolvConf(size)
		if len(b) != size || !strings.HasPrefix(string(b), string(ResolvConf())) || b[len(b)-1] != '\n' {
			t.Errorf("resolvConf(%d): %d bytes, %q...", size, len(b), b[:40])
		}
		for line := range strings.Lines(string(b[len(ResolvConf()):])) {
			if !strings.HasPrefix(line, "#") {
				t.Errorf("resolvConf(%d): padding line %q is not a comment", size, line)
			}
		}
	}
}
