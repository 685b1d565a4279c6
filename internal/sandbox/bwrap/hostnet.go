package bwrap

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"den.dev/den/internal/sandbox"
	"den.dev/den/internal/sandbox/launch"
	"den.dev/den/internal/sandbox/netns"
)

// StartOnHost starts cmd, a program of the host's (an MCP server den
// runs on the host), in a network namespace of its own whose one way
// out is eg, as a computer's is: every connection it makes leaves
// through den under eg's policy, and the host's loopback, its other
// programs' abstract sockets and every other route are out of its
// reach. Everything else stays the host's: its files, its users, its
// processes. Run as root, the program keeps uid 0 but no capability,
// so that it cannot join another namespace; as an ordinary user, it
// runs as that user (without its supplementary groups) in a user
// namespace of its own, with no capability over its network.
//
// cmd must not have been started; StartOnHost runs it through bwrap
// (its Path and Args change; its environment, directory, files and
// SysProcAttr stay). The program starts only once its network is in
// place. stop stops serving the network: call it once cmd has been
// waited for.
func (b *Backend) StartOnHost(ctx context.Context, cmd *exec.Cmd, eg sandbox.Egress) (stop func(), err error) {
	if eg == nil {
		return nil, errors.New("bwrap: StartOnHost needs an egress")
	}
	if _, err := b.checkVersion(); err != nil {
		return nil, err
	}
	if _, err := os.Stat("/etc/resolv.conf"); err != nil {
		// bwrap would make the file on the host to bind over it.
		return nil, fmt.Errorf("bwrap: the host has no /etc/resolv.conf to hide from the program: %w", err)
	}
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("bwrap: pipe: %w", err)
	}
	defer infoR.Close()
	gate, err := netns.NewGate()
	if err != nil {
		infoW.Close()
		return nil, fmt.Errorf("bwrap: %w", err)
	}
	defer gate.Open()
	infoFD := 3 + len(cmd.ExtraFiles)
	cmd.ExtraFiles = append(cmd.ExtraFiles, infoW, gate.File())
	args := []string{b.path, "--dev-bind", "/", "/", "--unshare-net", "--die-with-parent",
		"--info-fd", strconv.Itoa(infoFD), "--ro-bind-data", strconv.Itoa(infoFD + 1), "/etc/resolv.conf"}
	if b.uid == 0 {
		args = append(args, "--cap-drop", "ALL", "--")
	} else {
		// The network namespace belongs to a user namespace whose root
		// is the user: den's helper joins it as that root, with the
		// capabilities it needs there. The program runs as the user
		// in a second user namespace below it, holding none over the
		// first (a program that is root where its network is made
		// could undo it).
		args = append(args, "--unshare-user", "--uid", "0", "--gid", "0", "--cap-add", "ALL", "--",
			b.path, "--dev-bind", "/", "/", "--unshare-user", "--uid", strconv.Itoa(b.uid), "--gid", strconv.Itoa(b.gid), "--die-with-parent", "--")
	}
	program := cmd.Path
	cmd.Args = append(append(args, program), cmd.Args[1:]...)
	cmd.Path = b.path
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	err = launch.Start(cmd)
	infoW.Close()
	gate.File().Close()
	if err != nil {
		return nil, fmt.Errorf("bwrap: start %s: %w", program, err)
	}
	childFD := -1
	fail := func(err error) (func(), error) {
		// bwrap's child does not die with bwrap until it is about to
		// run the program (its parent-death signal goes when it
		// changes user): kill it too.
		if childFD >= 0 {
			unix.PidfdSendSignal(childFD, unix.SIGKILL, nil, 0)
		}
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	child, err := readInfo(infoR)
	if err != nil {
		return fail(fmt.Errorf("%w: bwrap: %v", sandbox.ErrUnavailable, err))
	}
	if childFD, err = unix.PidfdOpen(child, 0); err != nil {
		return fail(fmt.Errorf("bwrap: %w", err))
	}
	defer unix.Close(childFD)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := gate.Wait(wctx); err != nil {
		return fail(fmt.Errorf("%w: bwrap: %v", sandbox.ErrUnavailable, err))
	}
	n, err := netns.Attach(wctx, child, netns.Options{})
	if err != nil {
		if errors.Is(err, netns.ErrUnavailable) {
			err = fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
		}
		return fail(fmt.Errorf("bwrap: network: %w", err))
	}
	stopServing := eg.Serve(n.TCP, n.DNS)
	if err := gate.Open(); err != nil {
		stopServing()
		n.Close()
		return fail(fmt.Errorf("bwrap: %w", err))
	}
	return func() {
		stopServing()
		n.Close()
	}, nil
}
