package cli

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// interruptible wraps a reader a goroutine will sit in (den's standard
// input) so that its owner can stop it and wait for it: reads of a file
// wait with poll(2) beside a pipe that stop closes, then end with
// io.EOF. Any other reader is returned as is (it ends by itself).
func interruptible(r io.Reader) (io.Reader, func()) {
	f, ok := r.(*os.File)
	if !ok {
		return r, func() {}
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return r, func() {}
	}
	ir := &pollReader{fd: int(f.Fd()), quit: int(pr.Fd()), keep: []*os.File{f, pr}}
	stopped := false
	return ir, func() {
		if !stopped {
			stopped = true
			pw.Close()
		}
	}
}

type pollReader struct {
	fd, quit int
	keep     []*os.File // keeps the descriptors alive
	done     bool
}

func (p *pollReader) Read(b []byte) (int, error) {
	if p.done {
		return 0, io.EOF
	}
	for {
		fds := []unix.PollFd{{Fd: int32(p.fd), Events: unix.POLLIN}, {Fd: int32(p.quit), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, -1); err != nil {
			if err == unix.EINTR {
				continue
			}
			return 0, err
		}
		if fds[1].Revents != 0 {
			p.done = true
			return 0, io.EOF
		}
		if fds[0].Revents != 0 {
			n, err := unix.Read(p.fd, b)
			switch {
			case err == unix.EINTR || err == unix.EAGAIN:
				continue
			case err != nil:
				return 0, err
			case n == 0:
				return 0, io.EOF
			}
			return n, nil
		}
	}
}
