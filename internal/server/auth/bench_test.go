package auth

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// benchGuard is a guard in front of an empty handler, with the token
// from a file (watched: one Lstat per request) or from DEN_TOKEN (not
// watched), and a request with the right bearer token.
func benchGuard(b *testing.B, fromEnv bool) (http.Handler, *http.Request) {
	o := Options{DataDir: b.TempDir(), Env: noEnv}
	if fromEnv {
		o.Env = env("bench-token-0123456789abcdefghijklmnop")
	}
	g, err := New(o)
	if err != nil {
		b.Fatal(err)
	}
	tok, err := LoadToken(o.DataDir, o.Env)
	if err != nil {
		b.Fatal(err)
	}
	req := httptest.NewRequest("GET", "http://localhost:7700/api/v1/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	return g.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})), req
}

// BenchmarkBearerFile is an authenticated request with the token file
// watched, BenchmarkBearerEnv the same without the per-request stat:
// their difference is what watching costs.
func BenchmarkBearerFile(b *testing.B) {
	h, req := benchGuard(b, false)
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}

func BenchmarkBearerEnv(b *testing.B) {
	h, req := benchGuard(b, true)
	for b.Loop() {
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
}

// BenchmarkLstat is the stat the watch makes per request.
func BenchmarkLstat(b *testing.B) {
	dir := b.TempDir()
	if _, err := LoadToken(dir, noEnv); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, tokenFile)
	for b.Loop() {
		if _, err := os.Lstat(path); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBearerFileParallel is BenchmarkBearerFile from every CPU, to
// show the watch does not serialize requests.
func BenchmarkBearerFileParallel(b *testing.B) {
	h, req := benchGuard(b, false)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			h.ServeHTTP(httptest.NewRecorder(), req)
		}
	})
}
