package terminal

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// openPTY opens a new terminal: master is den's end, in non-blocking
// mode and so on Go's poller, which makes its Close interrupt a Read or
// Write in progress (a blocking file's Close waits for them, and the
// socket's goroutines could then outlive the request); tty is the end
// the shell gets. creack/pty's Open and Setsize put the master back in
// blocking mode (they call Fd), so the few ioctls are made here.
func openPTY() (master, tty *os.File, err error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("terminal: open /dev/ptmx: %w", err)
	}
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("terminal: unlock the terminal: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("terminal: name the terminal: %w", err)
	}
	name := "/dev/pts/" + strconv.Itoa(n)
	tfd, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(fd)
		return nil, nil, fmt.Errorf("terminal: open %s: %w", name, err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), os.NewFile(uintptr(tfd), name), nil
}

// setSize sets the terminal's size (the kernel tells the shell's
// foreground job with SIGWINCH), without taking master off the poller.
func setSize(master *os.File, cols, rows int) error {
	sc, err := master.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	err = sc.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)})
	})
	if err != nil {
		return err
	}
	if ioErr != nil {
		return fmt.Errorf("terminal: resize: %w", ioErr)
	}
	return nil
}
