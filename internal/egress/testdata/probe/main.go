// Command probe tries one way out of a computer's network, for
// package egress's tests: it runs inside the computer (statically
// linked: the busybox computer has no libc) and prints "ok: WHAT" or
// "error: WHY".
//
//	probe http URL [HOST]        GET URL (with the Host header HOST)
//	probe https URL CAFILE [HEADER:VALUE]...  GET over TLS trusting CAFILE
//	probe tls ADDR SNI CAFILE    a TLS handshake, then one line
//	probe tcp ADDR               connect, then one line
//	probe say ADDR               connect, send a line, then one line
//	probe udp ADDR               send one datagram
//	probe dns udp|tcp SERVER NAME  ask SERVER for NAME's addresses
//	probe raw                    open a raw socket
//	probe bench URL CAFILE N [ADDR]  N GETs, each on a new connection (to
//	                             ADDR instead of the URL's host): "ok: NANOSECONDS"
//	probe fetch URL              GET, reading the body: "ok: BYTES NANOSECONDS"
//	probe self                   connect to a listener on its own loopback
//	probe ws URL CAFILE [HEADER:VALUE]...  a WebSocket, offering permessage-deflate:
//	                             send a text message "den-secret:API_TOKEN" and a
//	                             ping, then print each message until the server
//	                             closes (runs of 16 '.' or more as "[.xN]")
//	probe wsecho URL CAFILE N SIZE  a WebSocket: N binary messages of SIZE bytes,
//	                             each read back: "ok: NANOSECONDS"
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/coder/websocket"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Println("error: usage")
		os.Exit(2)
	}
	msg, err := probe(os.Args[1], os.Args[2:])
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println("ok:", msg)
}

const timeout = 20 * time.Second

func probe(what string, a []string) (string, error) {
	switch what {
	case "http":
		req, err := http.NewRequest("GET", a[0], nil)
		if err != nil {
			return "", err
		}
		if len(a) > 1 {
			req.Host = a[1]
		}
		c := &http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: nil}}
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b))), nil
	case "https":
		pem, err := os.ReadFile(a[1])
		if err != nil {
			return "", err
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		req, err := http.NewRequest("GET", a[0], nil)
		if err != nil {
			return "", err
		}
		for _, h := range a[2:] {
			k, v, _ := strings.Cut(h, ":")
			req.Header.Add(k, strings.TrimSpace(v))
		}
		c := &http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool}}}
		resp, err := c.Do(req)
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(b))), nil
	case "tls":
		pem, err := os.ReadFile(a[2])
		if err != nil {
			return "", err
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		d := &net.Dialer{Timeout: timeout}
		c, err := tls.DialWithDialer(d, "tcp", a[0], &tls.Config{ServerName: a[1], RootCAs: pool})
		if err != nil {
			return "", err
		}
		defer c.Close()
		return line(c)
	case "tcp":
		c, err := net.DialTimeout("tcp", a[0], timeout)
		if err != nil {
			return "", err
		}
		defer c.Close()
		return line(c)
	case "say":
		c, err := net.DialTimeout("tcp", a[0], timeout)
		if err != nil {
			return "", err
		}
		defer c.Close()
		if _, err := c.Write([]byte("hello\n")); err != nil {
			return "", err
		}
		return line(c)
	case "udp":
		c, err := net.Dial("udp", a[0])
		if err != nil {
			return "", err
		}
		defer c.Close()
		if _, err := c.Write([]byte("den-probe")); err != nil {
			return "", err
		}
		return "sent", nil
	case "dns":
		r := &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, a[0], a[1])
		}}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		addrs, err := r.LookupHost(ctx, a[2])
		if err != nil {
			return "", err
		}
		return strings.Join(addrs, " "), nil
	case "bench":
		pem, err := os.ReadFile(a[1])
		if err != nil {
			return "", err
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		var n int
		fmt.Sscan(a[2], &n)
		tr := &http.Transport{Proxy: nil, DisableKeepAlives: true, TLSClientConfig: &tls.Config{RootCAs: pool}}
		if len(a) > 3 {
			tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, network, a[3])
			}
		}
		c := &http.Client{Timeout: timeout, Transport: tr}
		start := time.Now()
		for range n {
			resp, err := c.Get(a[0])
			if err != nil {
				return "", err
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return fmt.Sprint(time.Since(start).Nanoseconds()), nil
	case "fetch":
		c := &http.Client{Transport: &http.Transport{Proxy: nil, DisableCompression: true}}
		start := time.Now()
		resp, err := c.Get(a[0])
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil {
			return "", err
		}
		return fmt.Sprint(n, " ", time.Since(start).Nanoseconds()), nil
	case "raw":
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_ICMP)
		if err != nil {
			return "", err
		}
		syscall.Close(fd)
		return "raw socket", nil
	case "self":
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		defer l.Close()
		go func() {
			c, err := l.Accept()
			if err == nil {
				c.Write([]byte("self\n"))
				c.Close()
			}
		}()
		c, err := net.DialTimeout("tcp", l.Addr().String(), timeout)
		if err != nil {
			return "", err
		}
		defer c.Close()
		return line(c)
	case "ws":
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		c, err := dialWS(ctx, a[0], a[1], a[2:])
		if err != nil {
			return "", err
		}
		defer c.CloseNow()
		return talkWS(ctx, c)
	case "wsecho":
		var n, size int
		fmt.Sscan(a[2], &n)
		fmt.Sscan(a[3], &size)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		c, err := dialWS(ctx, a[0], a[1], nil)
		if err != nil {
			return "", err
		}
		defer c.CloseNow()
		c.SetReadLimit(int64(size))
		msg := make([]byte, size)
		for i := range msg {
			msg[i] = byte('a' + i%26)
		}
		start := time.Now()
		for range n {
			if err := c.Write(ctx, websocket.MessageBinary, msg); err != nil {
				return "", err
			}
			if _, b, err := c.Read(ctx); err != nil || len(b) != size {
				return "", fmt.Errorf("echo of %d bytes: %v", len(b), err)
			}
		}
		elapsed := time.Since(start)
		c.Close(websocket.StatusNormalClosure, "")
		return fmt.Sprint(elapsed.Nanoseconds()), nil
	}
	return "", fmt.Errorf("unknown probe %q", what)
}

// dialWS opens a WebSocket to url trusting caFile, with headers, and
// offers permessage-deflate (which den must take out of the request).
func dialWS(ctx context.Context, url, caFile string, headers []string) (*websocket.Conn, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	h := http.Header{}
	for _, kv := range headers {
		k, v, _ := strings.Cut(kv, ":")
		h.Add(k, strings.TrimSpace(v))
	}
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPClient:      &http.Client{Transport: &http.Transport{Proxy: nil, TLSClientConfig: &tls.Config{RootCAs: pool}}},
		HTTPHeader:      h,
		CompressionMode: websocket.CompressionContextTakeover,
	})
	if err != nil {
		if resp != nil && resp.Body != nil {
			b, _ := io.ReadAll(resp.Body)
			return nil, fmt.Errorf("%w: %d %s", err, resp.StatusCode, strings.TrimSpace(string(b)))
		}
		return nil, err
	}
	c.SetReadLimit(1 << 20)
	return c, nil
}

var dots = regexp.MustCompile(`\.{16,}`)

// talkWS sends a text message with a placeholder and a ping, then gives
// every message the server sends, one a line, and how it closed.
func talkWS(ctx context.Context, c *websocket.Conn) (string, error) {
	if err := c.Write(ctx, websocket.MessageText, []byte("den-secret:API_TOKEN")); err != nil {
		return "", err
	}
	pinged := make(chan error, 1)
	go func() { pinged <- c.Ping(ctx) }() // answered while Read below reads
	var lines []string
	for {
		typ, b, err := c.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) {
				return "", fmt.Errorf("%s\n%w", strings.Join(lines, "\n"), err)
			}
			lines = append(lines, fmt.Sprintf("close %d: %s", ce.Code, ce.Reason))
			break
		}
		kind := map[websocket.MessageType]string{websocket.MessageText: "text", websocket.MessageBinary: "binary"}[typ]
		lines = append(lines, kind+": "+dots.ReplaceAllStringFunc(string(b), func(s string) string { return fmt.Sprintf("[.x%d]", len(s)) }))
	}
	if err := <-pinged; err != nil {
		lines = append(lines, "ping: "+err.Error())
	} else {
		lines = append(lines, "ping: pong")
	}
	return strings.Join(lines, "\n"), nil
}

func line(c net.Conn) (string, error) {
	c.SetReadDeadline(time.Now().Add(timeout))
	s, err := bufio.NewReader(c).ReadString('\n')
	if err != nil && s == "" {
		return "", err
	}
	return strings.TrimSpace(s), nil
}
