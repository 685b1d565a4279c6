package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// helperEnv, set to "1", runs den as the helper (see MaybeHelper). An
// environment variable, not an argument: a program that does not know
// the helper mode (a test binary without MaybeHelper) is run with
// arguments that make it do nothing, and Attach then says what is
// missing.
const helperEnv = "DEN_NETNS_HELPER"

// helperTimeout bounds a helper run: a limit for a hang, not an
// expectation (it takes milliseconds).
const helperTimeout = 30 * time.Second

// MaybeHelper runs the helper and exits when den was started as one;
// otherwise it returns at once. den's main calls it first thing, as does
// a test binary that starts sandboxes with the network on as an ordinary
// user.
//
// The helper runs in a sandbox's user and network namespaces (nsenter
// put it there), does Attach's setup and sends the listeners back over
// fd 3 with a status line: "ok", or the error.
func MaybeHelper() {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	os.Exit(help())
}

func help() int {
	sock := os.NewFile(3, "den")
	files, err := setup()
	msg := []byte("ok")
	if err != nil {
		msg = []byte("error: " + err.Error())
	}
	var fds []int
	for _, f := range files {
		fds = append(fds, int(f.Fd()))
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if err := unix.Sendmsg(int(sock.Fd()), msg, oob, nil, 0); err != nil {
		fmt.Fprintln(os.Stderr, "den: network helper:", err)
		return 1
	}
	return 0
}

// viaHelper runs den's helper in the sandbox's user and network
// namespaces through nsenter, and receives the listeners it made.
func viaHelper(ctx context.Context, o Options, userNS, netNS *os.File) ([]*os.File, error) {
	nsenter := o.Nsenter
	if nsenter == "" {
		p, err := exec.LookPath("nsenter")
		if err != nil {
			return nil, fmt.Errorf("%w: nsenter not found: install util-linux", ErrUnavailable)
		}
		nsenter = p
	}
	self := o.Self
	if self == "" {
		p, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("den's own executable: %w", err)
		}
		self = p
	}
	pair, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	// Den's end is non-blocking, so that a deadline can end a wait.
	if err := unix.SetNonblock(pair[0], true); err != nil {
		unix.Close(pair[0])
		unix.Close(pair[1])
		return nil, fmt.Errorf("socketpair: %w", err)
	}
	mine, theirs := os.NewFile(uintptr(pair[0]), "helper"), os.NewFile(uintptr(pair[1]), "den")
	defer mine.Close()
	ctx, cancel := context.WithTimeout(ctx, helperTimeout)
	defer cancel()
	// fd 3 is the socket, 4 and 5 the namespaces. -test.run=^$ makes a
	// test binary that does not know the helper mode run nothing.
	cmd := exec.CommandContext(ctx, nsenter, "--user=/proc/self/fd/4", "--net=/proc/self/fd/5", "--preserve-credentials",
		"--", self, "-test.run=^$")
	cmd.Env = []string{helperEnv + "=1"}
	cmd.Dir = "/"
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.ExtraFiles = []*os.File{theirs, userNS, netNS}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.WaitDelay = time.Second
	err = cmd.Start()
	theirs.Close()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", nsenter, err)
	}
	msg, files, rerr := receive(ctx, mine)
	if rerr != nil {
		cancel() // a helper that sent nothing will not
	}
	werr := cmd.Wait()
	switch {
	case string(msg) == "ok" && len(files) == maxFD:
		return files, nil
	case len(msg) == 0:
		if rerr == nil {
			rerr = werr
		}
		closeAll(files)
		why := strings.TrimSpace(stderr.String())
		if why == "" {
			why = fmt.Sprintf("%s did not answer: it must call netns.MaybeHelper first thing (den's main does)", self)
		}
		return nil, fmt.Errorf("network helper: %v: %s", rerr, why)
	}
	closeAll(files)
	return nil, fmt.Errorf("network helper: %s", strings.TrimPrefix(string(msg), "error: "))
}

// receive reads the helper's status and the files it sent, until ctx
// ends.
func receive(ctx context.Context, sock *os.File) ([]byte, []*os.File, error) {
	stop := context.AfterFunc(ctx, func() { sock.SetReadDeadline(time.Unix(1, 0)) })
	defer stop()
	rc, err := sock.SyscallConn()
	if err != nil {
		return nil, nil, err
	}
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4*maxFD))
	var n, oobn int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		n, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
		return !errors.Is(rerr, unix.EAGAIN)
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, nil, err
	}
	if n == 0 {
		return nil, nil, errors.New("the helper exited without an answer")
	}
	var files []*os.File
	cmsgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return buf[:n], nil, err
	}
	for _, c := range cmsgs {
		fds, err := unix.ParseUnixRights(&c)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			files = append(files, os.NewFile(uintptr(fd), "socket"))
		}
	}
	return buf[:n], files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}
