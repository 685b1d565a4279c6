package rootfs

import (
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"strings"
)

// hostBusybox is the static busybox the busybox source copies.
const hostBusybox = "/bin/busybox"

var busyboxVersionRE = regexp.MustCompile(`BusyBox v([0-9][0-9A-Za-z.+~-]*)`)

// buildBusybox makes a tiny rootfs in dir from the host's static busybox:
// /bin/busybox with every applet linked to it, and a root user.
func buildBusybox(ctx context.Context, dir string) error {
	if err := busybox(ctx, dir); err != nil {
		return fmt.Errorf("rootfs: busybox: %w", err)
	}
	return nil
}

func busybox(ctx context.Context, dir string) error {
	bin := hostBusybox
	if _, err := os.Stat(bin); err != nil {
		if bin, err = exec.LookPath("busybox"); err != nil {
			return fmt.Errorf("%w: %s (install the busybox-static package)", ErrToolMissing, hostBusybox)
		}
	}
	if err := checkStatic(bin); err != nil {
		return err
	}
	list, err := exec.CommandContext(ctx, bin, "--list").Output()
	if err != nil {
		return fmt.Errorf("%s --list: %w", bin, err)
	}
	help, _ := exec.CommandContext(ctx, bin, "--help").CombinedOutput()
	version := "unknown"
	if m := busyboxVersionRE.FindSubmatch(help); m != nil {
		version = string(m[1])
	}

	r, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	for _, d := range []string{"bin", "sbin", "usr/bin", "usr/sbin", "etc", "var/tmp", "home", "run", "mnt"} {
		if err := r.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if err := copyInto(r, bin, "bin/busybox", 0o755); err != nil {
		return err
	}
	for name := range strings.FieldsSeq(string(list)) {
		if name == "busybox" || strings.ContainsAny(name, "/.") {
			continue // never replace the binary itself with a link to it
		}
		if err := r.Symlink("busybox", "bin/"+name); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	files := []struct {
		name, data string
		mode       fs.FileMode
	}{
		{"etc/passwd", "root:x:0:0:root:/root:/bin/sh\n", 0o644},
		{"etc/group", "root:x:0:\n", 0o644},
		{"etc/shells", "/bin/sh\n/bin/ash\n", 0o644},
		{"etc/os-release", fmt.Sprintf("NAME=BusyBox\nID=busybox\nVERSION_ID=%s\nPRETTY_NAME=\"BusyBox %s\"\n", version, version), 0o644},
	}
	for _, f := range files {
		if err := r.WriteFile(f.name, []byte(f.data), f.mode); err != nil {
			return err
		}
	}
	return nil
}

// checkStatic refuses a dynamically linked busybox, which would not run
// inside a rootfs without its libraries.
func checkStatic(bin string) error {
	f, err := elf.Open(bin)
	if err != nil {
		return fmt.Errorf("%s: %w", bin, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%w: %s is dynamically linked (install the busybox-static package)", ErrToolMissing, bin)
		}
	}
	return nil
}

// copyInto copies the host file src to name inside r.
func copyInto(r *os.Root, src, name string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := r.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Chmod(mode)
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
