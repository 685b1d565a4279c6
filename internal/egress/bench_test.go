package egress_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/egress"
	"den.dev/den/internal/egress/egresstest"
	"den.dev/den/internal/sandbox/sandboxtest"
	"den.dev/den/internal/secret"
)

// benchServer serves, over HTTPS, a small answer at /, and over HTTP
// size bytes at /big.
func benchServer(b *testing.B, ca *egresstest.CA) (httpsAddr, httpAddr string) {
	tl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/big" {
			io.WriteString(w, "ok\n")
			return
		}
		n, _ := strconv.Atoi(r.URL.Query().Get("mib"))
		w.Header().Set("Content-Length", strconv.Itoa(n<<20))
		for range n {
			w.Write(chunk)
		}
	})
	s1 := &http.Server{Handler: h, TLSConfig: &tls.Config{Certificates: []tls.Certificate{*ca.Leaf(b, "bench.example")}}}
	s2 := &http.Server{Handler: h}
	go s1.ServeTLS(tl, "", "")
	go s2.Serve(hl)
	b.Cleanup(func() { s1.Close(); s2.Close() })
	return tl.Addr().String(), hl.Addr().String()
}

// result parses the probe's "ok: ..." fields.
func result(b *testing.B, out string) []int64 {
	rest, ok := strings.CutPrefix(strings.TrimSpace(out), "ok: ")
	if !ok {
		b.Fatalf("probe: %s", out)
	}
	var vals []int64
	for _, f := range strings.Fields(rest) {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			b.Fatalf("probe: %s", out)
		}
		vals = append(vals, v)
	}
	return vals
}

// BenchmarkHTTPSRequest measures what den adds to an HTTPS request made
// on a new connection from inside a computer: the same client makes the
// same requests to the same server on the host's loopback, once from
// the host directly and once from the computer through den (redirect,
// original destination, the ClientHello's name, den's own connection,
// relay). ms/req-overhead is the difference per request.
//
//	go test ./internal/egress -run '^$' -bench HTTPSRequest -benchtime 500x
func BenchmarkHTTPSRequest(b *testing.B) {
	b.Run("relayed", func(b *testing.B) { benchHTTPS(b, false) })
	// The same towards a host a secret is bound to: den ends the
	// computer's TLS with its CA, puts the value in, and speaks TLS of
	// its own to the server.
	b.Run("secret", func(b *testing.B) { benchHTTPS(b, true) })
}

func benchHTTPS(b *testing.B, withSecret bool) {
	ca := egresstest.NewCA(b)
	httpsAddr, _ := benchServer(b, ca)
	p := egress.New(egress.Options{Hosts: map[string]string{"bench.example:443": httpsAddr}, RootCAs: ca.Pool})
	sc := egress.Scope{Agent: "bench"}
	trusted := ca.PEM
	if withSecret {
		dca, err := egress.LoadCA(filepath.Join(b.TempDir(), "ca"), "bench")
		if err != nil {
			b.Fatal(err)
		}
		s := secret.Secret{Name: "T", Value: "bench-token", Hosts: []string{"bench.example"}}
		s.Validate()
		sc.CA, sc.Secrets, trusted = dca, func() []secret.Secret { return []secret.Secret{s} }, dca.PEM()
	}
	box := startBox(b, p.Net(sc))
	caFile := filepath.Join(box.env.Workspace, "ca.pem")
	os.WriteFile(caFile, trusted, 0o644)
	sandboxtest.Own(b, caFile)
	hostCA := filepath.Join(b.TempDir(), "ca.pem")
	os.WriteFile(hostCA, ca.PEM, 0o644)
	n := strconv.Itoa(b.N)
	b.ResetTimer()
	inside := result(b, box.probe(b, "bench", "https://bench.example/", "/workspace/ca.pem", n))[0]
	b.StopTimer()
	// The same client on the host, straight to the server.
	out, err := exec.Command(probePath(b), "bench", "https://bench.example/", hostCA, n, httpsAddr).CombinedOutput()
	if err != nil {
		b.Fatalf("host probe: %v: %s", err, out)
	}
	direct := result(b, string(out))[0]
	per := func(ns int64) float64 { return float64(ns) / float64(b.N) / 1e6 }
	b.ReportMetric(per(inside), "ms/req-den")
	b.ReportMetric(per(direct), "ms/req-direct")
	b.ReportMetric(per(inside)-per(direct), "ms/req-overhead")
}

// BenchmarkThroughput measures a download from a server on the host's
// loopback into a computer, through den: MB/s is the rate the client
// inside saw.
//
//	go test ./internal/egress -run '^$' -bench Throughput -benchtime 5x
func BenchmarkThroughput(b *testing.B) {
	ca := egresstest.NewCA(b)
	_, httpAddr := benchServer(b, ca)
	p := egress.New(egress.Options{Hosts: map[string]string{"bench.example:80": httpAddr}})
	box := startBox(b, p.Net(egress.Scope{Agent: "bench"}))
	const mib = 1024
	b.SetBytes(mib << 20)
	var total time.Duration
	b.ResetTimer()
	for range b.N {
		v := result(b, box.probe(b, "fetch", fmt.Sprintf("http://bench.example/big?mib=%d", mib)))
		if v[0] != mib<<20 {
			b.Fatalf("got %d bytes", v[0])
		}
		total += time.Duration(v[1])
	}
	b.StopTimer()
	b.ReportMetric(float64(int64(b.N)*mib<<20)/total.Seconds()/1e6, "MB/s-inside")
}
