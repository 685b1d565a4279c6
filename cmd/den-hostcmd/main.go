// Command den-hostcmd is the program behind den's host commands inside
// an agent's computer. It is bound read-only at
// /usr/local/bin/den-hostcmd, and den-open, den-notify and the others
// are symbolic links to it: it sends its argv, working directory,
// selected environment variables and standard input to den over the
// session's socket, and writes back what den answers on stdout and
// stderr, exiting with den's exit code. Run as den-hostcmd itself, its
// first argument names the command.
//
// It uses the standard library only and is built static
// (CGO_ENABLED=0), so that it runs in every rootfs, musl or glibc.
// The protocol is described in den.dev/den/internal/hostcmd.
package main

import (
	"bufio"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"unsafe"

	"den.dev/den/internal/hostcmd/wire"
)

// socketPath is where den's socket is bound inside the computer.
const socketPath = "/run/den-host/hostcmd.sock"

// Exit codes of the host command contract that the program itself
// produces.
const (
	exitError        = 1
	exitUsage        = 2
	exitNotAvailable = 4
)

func main() { os.Exit(run()) }

func run() int {
	args := os.Args
	if len(args) == 0 {
		args = []string{"den-hostcmd"}
	}
	if base(args[0]) == "den-hostcmd" {
		if len(args) < 2 || strings.HasPrefix(args[1], "-") {
			os.Stderr.WriteString("usage: den-hostcmd COMMAND [ARG...]\n" +
				"Runs one of den's host commands (den-open, den-notify, ...); each is also installed under its own name.\n")
			return exitUsage
		}
		args = args[1:]
	}
	path := os.Getenv("DEN_HOSTCMD_SOCKET")
	if path == "" {
		path = socketPath
	}
	conn, err := dial(path)
	if err != nil {
		os.Stderr.WriteString(base(args[0]) + ": host commands are not available here: cannot reach den at " + path + ": " + err.Error() + "\n")
		return exitNotAvailable
	}
	cwd, _ := os.Getwd()
	tty := isTerminal(0)
	req := wire.AppendRequest(nil, wire.Request{Args: args, Cwd: cwd, Env: selectEnv(os.Environ()), StdinTTY: tty})
	if len(req) > wire.MaxRequest {
		os.Stderr.WriteString(base(args[0]) + ": arguments too long (more than 1 MiB); pass large input on stdin\n")
		return exitUsage
	}
	if err := wire.WriteFrame(conn, wire.TypeRequest, req); err != nil {
		os.Stderr.WriteString(base(args[0]) + ": sending to den: " + err.Error() + "\n")
		return exitError
	}
	// Standard input streams on its own; the exit frame ends the
	// program whether or not it was all read.
	go sendStdin(conn, tty)
	return receive(base(args[0]), conn)
}

// receive copies den's output frames to stdout and stderr and returns
// the exit code.
func receive(name string, conn *os.File) int {
	r := wire.NewReader(bufio.NewReaderSize(conn, 64<<10))
	for {
		typ, p, err := r.Next()
		if err != nil {
			if err == io.EOF {
				os.Stderr.WriteString(name + ": den closed the connection without an exit status\n")
			} else {
				os.Stderr.WriteString(name + ": reading from den: " + err.Error() + "\n")
			}
			return exitError
		}
		switch typ {
		case wire.TypeStdout:
			os.Stdout.Write(p)
		case wire.TypeStderr:
			os.Stderr.Write(p)
		case wire.TypeExit:
			code, err := wire.ParseExit(p)
			if err != nil {
				os.Stderr.WriteString(name + ": " + err.Error() + "\n")
				return exitError
			}
			return code
		default:
			os.Stderr.WriteString(name + ": unexpected frame from den\n")
			return exitError
		}
	}
}

// sendStdin streams standard input, then an end-of-file frame. A
// terminal is not read: its input belongs to whoever types.
func sendStdin(conn *os.File, tty bool) {
	buf := make([]byte, wire.HeaderSize+32<<10)
	if !tty {
		for {
			n, err := os.Stdin.Read(buf[wire.HeaderSize:])
			if n > 0 {
				h := wire.Header(wire.TypeStdin, n)
				copy(buf, h[:])
				if _, err := conn.Write(buf[:wire.HeaderSize+n]); err != nil {
					return
				}
			}
			if err != nil {
				break
			}
		}
	}
	h := wire.Header(wire.TypeStdinEOF, 0)
	conn.Write(h[:])
}

func dial(path string) (*os.File, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path})
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "den"), nil
}

// selectEnv keeps the variables a host command may use: the terminal,
// the locale, the time zone and den's own.
func selectEnv(env []string) []string {
	var out []string
	for _, e := range env {
		k, _, ok := strings.Cut(e, "=")
		if ok && wire.SelectedEnv(k) {
			out = append(out, e)
		}
	}
	return out
}

func isTerminal(fd int) bool {
	var t syscall.Termios
	_, _, errno := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TCGETS, uintptr(unsafe.Pointer(&t)))
	return errno == 0
}

func base(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}
