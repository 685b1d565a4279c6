package rootfs

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseSource(t *testing.T) {
	valid := []struct {
		in   string
		want Source
	}{
		{"alpine", Source{Kind: Alpine}},
		{"alpine:3.21", Source{Kind: Alpine, Version: "3.21"}},
		{"alpine:3.21.3", Source{Kind: Alpine, Version: "3.21.3"}},
		{"debian", Source{Kind: Debian}},
		{"debian:bookworm", Source{Kind: Debian, Version: "bookworm"}},
		{"debian:trixie", Source{Kind: Debian, Version: "trixie"}},
		{"ubuntu", Source{Kind: Ubuntu}},
		{"ubuntu:noble", Source{Kind: Ubuntu, Version: "noble"}},
		{"tar:/srv/base.tar.zst", Source{Kind: Tar, Path: "/srv/base.tar.zst"}},
		{"tar:rel/a:b.tgz", Source{Kind: Tar, Path: "rel/a:b.tgz"}},
		{"dir:/srv/root", Source{Kind: Dir, Path: "/srv/root"}},
		{"busybox", Source{Kind: Busybox}},
	}
	for _, tc := range valid {
		got, err := ParseSource(tc.in)
		if err != nil {
			t.Errorf("ParseSource(%q): %v", tc.in, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("ParseSource(%q) (-want +got):\n%s", tc.in, diff)
		}
		if got.String() != tc.in {
			t.Errorf("ParseSource(%q).String() = %q", tc.in, got.String())
		}
	}
	invalid := []string{
		"", "alpine:", "alpine:latest", "alpine:3", "alpine:v3.21", "alpine:3.21.3.1",
		"debian:", "debian:Bookworm", "debian:../x", "ubuntu:no ble",
		"tar", "tar:", "dir", "dir:", "busybox:1.35", "arch", "Alpine", "docker:alpine",
	}
	for _, in := range invalid {
		_, err := ParseSource(in)
		if !errors.Is(err, ErrUnknownSource) {
			t.Errorf("ParseSource(%q) = %v, want ErrUnknownSource", in, err)
		}
	}
	_, err := ParseSource("zfs:pool")
	if want := "alpine[:VERSION], debian[:SUITE], ubuntu[:SUITE], tar:PATH, dir:PATH, busybox"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v does not list the valid forms", err)
	}
	if DefaultSource().String() != "alpine" {
		t.Errorf("DefaultSource() = %v", DefaultSource())
	}
}
