package egress

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"den.dev/den/internal/secret"
)

// The computer's TLS towards a host a secret is bound to ends at den
// (with a certificate of the computer's CA), which reads each HTTP
// request, puts the secret's value where the binding says, and sends
// the request on over TLS of its own, verifying the real host's
// certificate. Everything else is relayed untouched, encrypted end to
// end.

// bound returns the secrets bound to host.
func (n *Net) bound(host string) []secret.Secret {
	if n.s.Secrets == nil {
		return nil
	}
	var out []secret.Secret
	for _, s := range n.s.Secrets() {
		if s.Binds(host) {
			out = append(out, s)
		}
	}
	return out
}

// intercept serves one TLS connection of the computer to a host with
// secrets: HTTP/1.1 inside, each request sent on with the secrets.
func (n *Net) intercept(c net.Conn, h hello, rec *Record, secrets []secret.Secret) {
	cc := &counted{Conn: &replay{Conn: c, head: bytes.NewReader(h.head)}}
	defer func() { rec.Out, rec.In = cc.read.Load(), cc.written.Load() }()
	tc, err := n.handshake(cc, rec.Host)
	if err != nil {
		rec.Error = err.Error()
		return
	}
	target := rec.Host
	if rec.Port != 443 {
		target = hostPort(rec.Host, rec.Port)
	}
	var injected atomic.Bool
	vals := values(secrets)
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			// Whatever Host the computer sent, the request goes to the
			// name the policy allowed and den connected to.
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = "https", target, ""
			// Bodies come back plain, so that den can mask the values;
			// so do WebSocket frames (no permessage-deflate).
			pr.Out.Header.Del("Accept-Encoding")
			pr.Out.Header.Del("Sec-WebSocket-Extensions")
			if inject(pr.Out, secrets) {
				injected.Store(true)
			}
		},
		Transport:     n.p.transport,
		FlushInterval: -1,
		ModifyResponse: func(r *http.Response) error {
			if r.StatusCode == http.StatusSwitchingProtocols {
				maskHeader(r.Header, vals)
				return maskUpgrade(r, vals)
			}
			mask(r, vals)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			var why refusal
			if errors.As(err, &why) {
				w.Header().Set("Connection", "close")
				w.WriteHeader(http.StatusBadGateway)
				fmt.Fprintln(w, why)
				return
			}
			w.WriteHeader(http.StatusBadGateway)
			fmt.Fprintf(w, "den: could not reach %s for you: %v\n", target, err)
		},
		ErrorLog: log.New(io.Discard, "", 0),
	}
	serveConn(n.ctx, tc, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// After an upgrade den could mask nothing but WebSocket.
		if why := refuseUpgrade(r); why != "" {
			rp.ErrorHandler(w, r, why)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	if injected.Load() {
		rec.Secrets = true
	}
}

// handshake ends the computer's TLS at den, as host.
func (n *Net) handshake(c net.Conn, host string) (*tls.Conn, error) {
	cert, err := n.s.CA.leaf(host)
	if err != nil {
		return nil, fmt.Errorf("certificate for %s: %w", host, err)
	}
	tc := tls.Server(c, &tls.Config{Certificates: []tls.Certificate{*cert}, NextProtos: []string{"http/1.1"}, MinVersion: tls.VersionTLS12})
	ctx, cancel := context.WithTimeout(n.ctx, waitHello)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("TLS with the computer (does it trust den's CA?): %w", err)
	}
	return tc, nil
}

// denyPage answers a refused TLS connection with a 403 that says why,
// over TLS with a certificate of the computer's CA (which the computer
// trusts), so that a client shows the reason, not a reset.
func (n *Net) denyPage(c net.Conn, h hello, rec Record) {
	tc, err := n.handshake(&replay{Conn: c, head: bytes.NewReader(h.head)}, h.name)
	if err != nil {
		return
	}
	body := Denied(rec) + "\n"
	serveConn(n.ctx, tc, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Den-Egress", "denied")
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusForbidden)
		io.WriteString(w, body)
	}))
}

// serveConn serves HTTP on c until the computer closes it (or ctx
// ends), and returns once every handler has returned.
func serveConn(ctx context.Context, c net.Conn, h http.Handler) {
	l := &oneConn{c: c, done: make(chan struct{})}
	var handlers sync.WaitGroup
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			handlers.Add(1)
			defer handlers.Done()
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          log.New(io.Discard, "", 0),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed || s == http.StateHijacked {
				l.Close()
			}
		},
	}
	stop := context.AfterFunc(ctx, func() { srv.Close() })
	defer stop()
	srv.Serve(l)
	handlers.Wait()
	c.Close()
}

// oneConn is a listener that accepts c once, then waits until closed.
type oneConn struct {
	c    net.Conn
	once sync.Once
	took atomic.Bool
	done chan struct{}
}

func (l *oneConn) Accept() (net.Conn, error) {
	if l.took.CompareAndSwap(false, true) {
		return l.c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConn) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneConn) Addr() net.Addr { return l.c.LocalAddr() }

// counted counts the bytes read from and written to a connection.
type counted struct {
	net.Conn
	read, written atomic.Int64
}

func (c *counted) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (c *counted) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}

// inject puts each secret's value into r where its binding says: into
// the slot (the header, the basic-auth password, the query parameter)
// when the request leaves it empty, or in place of the placeholder when
// the slot holds it. The placeholder anywhere else stays as it is, so
// that a server that echoes a request never shows the value. It
// reports whether a value went in.
func inject(r *http.Request, secrets []secret.Secret) bool {
	used := false
	for _, s := range secrets {
		ph, v := s.Placeholder(), s.Value
		switch {
		case s.Query != "":
			q := r.URL.Query()
			vals, ok := q[s.Query]
			switch {
			case !ok:
				q.Set(s.Query, v)
			case anyHolds(vals, ph):
				for i := range vals {
					vals[i] = strings.ReplaceAll(vals[i], ph, v)
				}
			default:
				continue
			}
			r.URL.RawQuery, used = q.Encode(), true
		case s.Basic != "":
			user, pass, ok := r.BasicAuth()
			switch {
			case r.Header.Get("Authorization") == "":
				r.SetBasicAuth(s.Basic, v)
			case ok && strings.Contains(user+"\x00"+pass, ph):
				r.SetBasicAuth(strings.ReplaceAll(user, ph, v), strings.ReplaceAll(pass, ph, v))
			default:
				continue
			}
			used = true
		default:
			name := s.HeaderName()
			vals := r.Header.Values(name)
			switch {
			case len(vals) == 0:
				r.Header.Set(name, strings.ReplaceAll(s.HeaderTemplate(), secret.ValueToken, v))
			case anyHolds(vals, ph):
				out := make([]string, len(vals))
				for i, x := range vals {
					out[i] = strings.ReplaceAll(x, ph, v)
				}
				r.Header[http.CanonicalHeaderKey(name)] = out
			default:
				continue
			}
			used = true
		}
	}
	return used
}

func anyHolds(vals []string, s string) bool {
	for _, v := range vals {
		if strings.Contains(v, s) {
			return true
		}
	}
	return false
}

// values are the secrets' values, to mask.
func values(secrets []secret.Secret) [][]byte {
	vals := make([][]byte, 0, len(secrets))
	for _, s := range secrets {
		vals = append(vals, []byte(s.Value))
	}
	return vals
}

// mask hides the values in a response from a bound host (a server that
// echoes a request's headers, a redirect that carries a query): each
// occurrence becomes as many '*', so that lengths hold.
func mask(r *http.Response, vals [][]byte) {
	maskHeader(r.Header, vals)
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &masker{r: r.Body, t: newTail(vals)}
	}
}

func maskHeader(h http.Header, vals [][]byte) {
	for k, vs := range h {
		for i, v := range vs {
			h[k][i] = string(maskBytes([]byte(v), vals))
		}
	}
}

func maskBytes(b []byte, vals [][]byte) []byte {
	for _, v := range vals {
		for off := 0; ; {
			i := bytes.Index(b[off:], v)
			if i < 0 {
				break
			}
			i += off
			for j := range v {
				b[i+j] = '*'
			}
			off = i + len(v)
		}
	}
	return b
}

// masker masks values in a stream (a response's body).
type masker struct {
	r   io.ReadCloser
	t   tail
	out []byte // masked, ready
	err error
}

func (m *masker) Read(p []byte) (int, error) {
	for len(m.out) == 0 {
		if m.err != nil {
			if m.out = m.t.flush(); len(m.out) > 0 {
				break
			}
			return 0, m.err
		}
		chunk := make([]byte, 32<<10)
		n, err := m.r.Read(chunk)
		m.out, m.err = m.t.push(chunk[:n]), err
	}
	n := copy(p, m.out)
	m.out = m.out[n:]
	return n, nil
}

func (m *masker) Close() error { return m.r.Close() }

// tail masks values in a stream given to it piece by piece: it holds
// back the last bytes, those that could begin a value split between
// pieces (one byte fewer than the longest value).
type tail struct {
	vals  [][]byte
	keep  int
	buf   []byte // pushed, not yet given out
	spare []byte // what push gave out last
}

func newTail(vals [][]byte) tail {
	keep := 0
	for _, v := range vals {
		keep = max(keep, len(v)-1)
	}
	return tail{vals: vals, keep: keep}
}

// push adds p to the stream and returns the bytes that can no longer be
// part of an unmasked value, masked: all but the last keep pushed. What
// it returns is valid until the next push.
func (t *tail) push(p []byte) []byte {
	t.buf = append(t.buf, p...)
	maskBytes(t.buf, t.vals)
	if len(t.buf) <= t.keep {
		return nil
	}
	cut := len(t.buf) - t.keep
	out := t.buf[:cut:cut]
	t.spare = append(t.spare[:0], t.buf[cut:]...)
	t.buf, t.spare = t.spare, t.buf
	return out
}

// held is how many bytes push holds back now.
func (t *tail) held() int { return len(t.buf) }

// flush ends the stream and returns what push held back, masked, valid
// until the next push (which begins another stream).
func (t *tail) flush() []byte {
	out := t.buf
	t.buf, t.spare = t.spare[:0], t.buf
	return out
}
