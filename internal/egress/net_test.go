package egress_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"den.dev/den/internal/egress"
	"den.dev/den/internal/egress/egresstest"
	"den.dev/den/internal/sandbox/sandboxtest"
)

// The names the tests' computers ask for. Den's DNS answers them with
// its own addresses; Options.Hosts sends den, not the computer, to the
// test's servers on the host's loopback.
const (
	allowed = "allowed.example"
	denied  = "denied.example"
	wild    = "sub.wild.example"
	db      = "db.example"
)

// fixture is a computer with an allowlist and the servers it may and
// may not reach.
type fixture struct {
	box                 *box
	recs                *records
	httpOK, httpNo      *server
	tlsOK, tlsNo, rawDB *server
}

func newFixture(t *testing.T, mode egress.Mode, ask func(ctx context.Context, host string, port int) (bool, string, error)) *fixture {
	t.Helper()
	ca := egresstest.NewCA(t)
	f := &fixture{recs: &records{}}
	f.httpOK, f.httpNo = httpServer(t, "allowed-http"), httpServer(t, "denied-http")
	f.tlsOK = lineServer(t, "allowed-tls", ca.Leaf(t, allowed, "*.wild.example"))
	f.tlsNo = lineServer(t, "denied-tls", ca.Leaf(t, denied))
	f.rawDB = lineServer(t, "db", nil)
	p := egress.New(egress.Options{Hosts: map[string]string{
		allowed + ":80":  f.httpOK.addr,
		denied + ":80":   f.httpNo.addr,
		allowed + ":443": f.tlsOK.addr,
		wild + ":443":    f.tlsOK.addr,
		denied + ":443":  f.tlsNo.addr,
		db + ":5432":     f.rawDB.addr,
	}})
	pol, err := egress.ParsePolicy(string(mode), []string{allowed, "*.wild.example:443", db + ":5432"})
	if err != nil {
		t.Fatal(err)
	}
	f.box = startBox(t, p.Net(egress.Scope{Agent: "tester", Session: "s1", Policy: pol, Record: f.recs.add, Ask: ask}))
	if err := os.WriteFile(filepath.Join(f.box.env.Workspace, "ca.pem"), ca.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	sandboxtest.Own(t, filepath.Join(f.box.env.Workspace, "ca.pem"))
	return f
}

// TestAllowlist: with an allowlist, the computer reaches the allowed
// names (over HTTP, TLS and a protocol whose server speaks first) and
// nothing else by any route: without proxy variables, to a hard-coded
// address (den goes by the name the client sends, and refuses a bare
// address), over IPv6, through another DNS server (den answers every
// query), over UDP or a raw socket. Each connection is recorded, and a
// refused HTTP request says how to allow it.
func TestAllowlist(t *testing.T) {
	f := newFixture(t, egress.Allowlist, nil)
	b := f.box

	t.Run("http allowed", func(t *testing.T) {
		out := b.probe(t, "http", "http://"+allowed+"/")
		if !strings.Contains(out, "ok: 200 "+f.httpOK.token) {
			t.Fatalf("GET http://%s/: %s", allowed, out)
		}
		rec := f.recs.wait(t, allowed, 80)
		if !rec.Allowed || rec.Protocol != "http" || rec.In == 0 || rec.Out == 0 || rec.Agent != "tester" || rec.Session != "s1" {
			t.Errorf("record of an allowed request: %+v", rec)
		}
	})
	t.Run("http denied", func(t *testing.T) {
		out := b.probe(t, "http", "http://"+denied+"/")
		if !strings.Contains(out, "ok: 403") || !strings.Contains(out, denied) || !strings.Contains(out, "den network allow --agent tester "+denied) {
			t.Errorf("GET http://%s/: want a 403 naming the domain and how to allow it, got %s", denied, out)
		}
		if rec := f.recs.wait(t, denied, 80); rec.Allowed || rec.By != "policy" || rec.Mode != egress.Allowlist {
			t.Errorf("record of a denied request: %+v", rec)
		}
	})
	t.Run("tls allowed", func(t *testing.T) {
		if out := b.probe(t, "tls", allowed+":443", allowed, "/workspace/ca.pem"); out != "ok: "+f.tlsOK.token {
			t.Errorf("TLS to %s: %s", allowed, out)
		}
		if rec := f.recs.wait(t, allowed, 443); !rec.Allowed || rec.Protocol != "tls" {
			t.Errorf("record: %+v", rec)
		}
	})
	t.Run("tls wildcard", func(t *testing.T) {
		if out := b.probe(t, "tls", wild+":443", wild, "/workspace/ca.pem"); out != "ok: "+f.tlsOK.token {
			t.Errorf("TLS to %s: %s", wild, out)
		}
	})
	t.Run("tls denied", func(t *testing.T) {
		if out := b.probe(t, "tls", denied+":443", denied, "/workspace/ca.pem"); !strings.HasPrefix(out, "error:") {
			t.Errorf("TLS to %s: %s", denied, out)
		}
		if rec := f.recs.wait(t, denied, 443); rec.Allowed {
			t.Errorf("record: %+v", rec)
		}
	})
	t.Run("hard-coded address, denied name", func(t *testing.T) {
		if out := b.probe(t, "tls", "192.0.2.10:443", denied, "/workspace/ca.pem"); !strings.HasPrefix(out, "error:") {
			t.Errorf("TLS to 192.0.2.10 as %s: %s", denied, out)
		}
	})
	t.Run("hard-coded address, allowed name", func(t *testing.T) {
		// den connects to the name, not to the address the computer
		// chose.
		if out := b.probe(t, "tls", "192.0.2.11:443", allowed, "/workspace/ca.pem"); out != "ok: "+f.tlsOK.token {
			t.Errorf("TLS to 192.0.2.11 as %s: %s", allowed, out)
		}
	})
	t.Run("hard-coded address, no name", func(t *testing.T) {
		if out := b.probe(t, "say", "192.0.2.12:80"); !strings.HasPrefix(out, "error:") {
			t.Errorf("a bare connection to 192.0.2.12:80: %s", out)
		}
		if rec := f.recs.wait(t, "192.0.2.12", 80); rec.Allowed {
			t.Errorf("record: %+v", rec)
		}
	})
	t.Run("address den did not give", func(t *testing.T) {
		if out := b.probe(t, "say", "198.18.200.200:80"); !strings.HasPrefix(out, "error:") {
			t.Errorf("198.18.200.200:80: %s", out)
		}
		if rec := f.recs.wait(t, "198.18.200.200", 80); rec.Allowed || rec.By != "address" {
			t.Errorf("record: %+v", rec)
		}
	})
	t.Run("ipv6", func(t *testing.T) {
		out := b.probe(t, "http", "http://[2001:db8::1]/", denied)
		if !strings.Contains(out, "ok: 403") {
			t.Errorf("GET over IPv6 as %s: %s", denied, out)
		}
		out = b.probe(t, "http", "http://[2001:db8::1]/", allowed)
		if !strings.Contains(out, "ok: 200 "+f.httpOK.token) {
			t.Errorf("GET over IPv6 as %s: %s", allowed, out)
		}
		if out := b.probe(t, "say", "[2001:db8::2]:5432"); !strings.HasPrefix(out, "error:") {
			t.Errorf("a bare IPv6 connection: %s", out)
		}
	})
	t.Run("server speaks first", func(t *testing.T) {
		if out := b.probe(t, "tcp", db+":5432"); out != "ok: "+f.rawDB.token {
			t.Errorf("%s:5432: %s", db, out)
		}
		if rec := f.recs.wait(t, db, 5432); !rec.Allowed || rec.Protocol != "tcp" {
			t.Errorf("record: %+v", rec)
		}
	})
	t.Run("allowed port only", func(t *testing.T) {
		if out := b.probe(t, "tcp", db+":5433"); !strings.HasPrefix(out, "error:") {
			t.Errorf("%s:5433: %s", db, out)
		}
	})
	t.Run("dns elsewhere", func(t *testing.T) {
		// Every query reaches den, whatever server it names, and den
		// answers with an address of its own range.
		for _, args := range [][]string{{"udp", "192.0.2.53:53"}, {"tcp", "192.0.2.53:53"}, {"udp", "10.0.2.3:53"}} {
			out := b.probe(t, append([]string{"dns"}, append(args, denied)...)...)
			addr, err := netip.ParseAddr(strings.TrimPrefix(out, "ok: "))
			if err != nil || !netip.MustParsePrefix("198.18.0.0/15").Contains(addr) {
				t.Errorf("dns over %s to %s: %s", args[0], args[1], out)
			}
		}
		if out := b.probe(t, "dns", "udp", "[2001:db8::53]:53", denied); !strings.HasPrefix(out, "error:") {
			t.Errorf("dns over IPv6 UDP: %s", out)
		}
	})
	t.Run("udp", func(t *testing.T) {
		if out := b.probe(t, "udp", "192.0.2.10:9999"); !strings.Contains(out, "operation not permitted") {
			t.Errorf("UDP out: %s", out)
		}
	})
	t.Run("raw socket", func(t *testing.T) {
		if out := b.probe(t, "raw"); !strings.HasPrefix(out, "error:") {
			t.Errorf("raw socket: %s", out)
		}
	})
	t.Run("own loopback", func(t *testing.T) {
		if out := b.probe(t, "self"); out != "ok: self" {
			t.Errorf("the computer's own loopback: %s", out)
		}
	})
	if n := f.httpNo.hits.Load() + f.tlsNo.hits.Load(); n != 0 {
		t.Errorf("the denied servers were reached %d times", n)
	}
}

// TestOpen: the open policy lets every name out, and still never the
// host's loopback or its own addresses (a name den resolves there, or
// an address the computer names), which only Options.Hosts reaches.
func TestOpen(t *testing.T) {
	f := newFixture(t, egress.Open, nil)
	b := f.box
	if out := b.probe(t, "http", "http://"+denied+"/"); !strings.Contains(out, "ok: 200 "+f.httpNo.token) {
		t.Errorf("GET http://%s/ with the open policy: %s", denied, out)
	}
	if rec := f.recs.wait(t, denied, 80); !rec.Allowed || rec.Mode != egress.Open {
		t.Errorf("record: %+v", rec)
	}
	_, port, _ := strings.Cut(f.httpNo.addr, ":")
	hits := f.httpNo.hits.Load()
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port} {
		out := b.probe(t, "http", "http://192.0.2.20:"+port+"/", host)
		if strings.Contains(out, f.httpNo.token) || !strings.Contains(out, "ok: 502") {
			t.Errorf("GET as %s: want den to refuse the host's loopback with a 502, got %s", host, out)
		}
	}
	if f.httpNo.hits.Load() != hits {
		t.Errorf("the host's loopback was reached")
	}
}

// TestAsk: names the rules do not allow are asked about, once for
// connections that wait together, and the answer decides.
func TestAsk(t *testing.T) {
	var asked atomic.Int64
	var mu sync.Mutex
	hosts := map[string]int{}
	ask := func(ctx context.Context, host string, port int) (bool, string, error) {
		asked.Add(1)
		mu.Lock()
		hosts[host+":"+strconv.Itoa(port)]++
		mu.Unlock()
		return host == denied && port == 80, "user", nil
	}
	f := newFixture(t, egress.Ask, ask)
	b := f.box
	if out := b.probe(t, "http", "http://"+allowed+"/"); !strings.Contains(out, f.httpOK.token) {
		t.Errorf("an allowed name: %s", out)
	}
	if asked.Load() != 0 {
		t.Errorf("asked about a name the rules allow: %v", hosts)
	}
	if out := b.probe(t, "http", "http://"+denied+"/"); !strings.Contains(out, "ok: 200 "+f.httpNo.token) {
		t.Errorf("a name the user allowed: %s", out)
	}
	if out := b.probe(t, "tls", denied+":443", denied, "/workspace/ca.pem"); !strings.HasPrefix(out, "error:") {
		t.Errorf("a name the user refused: %s", out)
	}
	if rec := f.recs.wait(t, denied, 443); rec.Allowed || rec.By != "user" {
		t.Errorf("record: %+v", rec)
	}
	if asked.Load() != 2 {
		t.Errorf("asked %d times, want 2: %v", asked.Load(), hosts)
	}
}
