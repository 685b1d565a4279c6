package netns_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/sandbox/netns"
)

// roleEnv, set to "dial", runs the test binary as a client inside a
// sandbox: it tries each address in its arguments (see dial) and prints
// one line per address.
const roleEnv = "DEN_NETNS_TEST_ROLE"

func TestMain(m *testing.M) {
	netns.MaybeHelper()
	if os.Getenv(roleEnv) == "dial" {
		for _, a := range os.Args[1:] {
			fmt.Printf("%s %s\n", a, dial(a))
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// dial tries addr: "tcp:HOST:PORT" connects and reads a line,
// "udp:HOST:PORT" sends a datagram and reads the answer, "self" connects
// to a listener on the sandbox's own loopback. It returns "ok LINE" or
// "error WHY".
func dial(addr string) string {
	network, rest, _ := strings.Cut(addr, ":")
	if network == "self" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "error " + err.Error()
		}
		defer l.Close()
		go func() {
			if c, err := l.Accept(); err == nil {
				c.Write([]byte("self\n"))
				c.Close()
			}
		}()
		network, rest = "tcp", l.Addr().String()
	}
	c, err := net.DialTimeout(network, rest, 5*time.Second)
	if err != nil {
		return "error " + err.Error()
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	if network == "udp" {
		if _, err := c.Write([]byte("query")); err != nil {
			return "error " + err.Error()
		}
		b := make([]byte, 512)
		n, err := c.Read(b)
		if err != nil {
			return "error " + err.Error()
		}
		return "ok " + string(b[:n])
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "error " + err.Error()
	}
	return "ok " + strings.TrimSpace(line)
}
