package auth

import (
	"net/http"
	"os"
	"strings"
	"testing"
)

func TestHost(t *testing.T) {
	h := newHarness(t, false, func(o *Options) {
		o.AllowedHosts = []string{"*.example.ts.net", "Den.Example:7700"}
	})
	name, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	short, _, _ := strings.Cut(strings.ToLower(name), ".")
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"localhost:7700", true},
		{"localhost", true},
		{"LOCALHOST.", true},
		{"app.localhost:3000", true},
		{"127.0.0.1", true},
		{"127.8.9.10:7700", true},
		{"[::1]:7700", true},
		{"[::1]", true},
		{"192.168.1.5", true},
		{"192.168.1.5:7700", true},
		{"[fe80::1%25eth0]:7700", true},
		{name, true},
		{short + ".local:7700", true},
		{"phone.example.ts.net", true},
		{"a.b.example.ts.net:443", true},
		{"den.example", true},
		{"den.example:80", true},
		{"evil.example", false},
		{"evil.example:7700", false},
		{"example.ts.net", false},
		{"evilexample.ts.net", false},
		{"localhost.evil.example", false},
		{"127.0.0.1.evil.example", false},
		{short + ".evil.example", false},
		{"den.example.evil", false},
	} {
		t.Run(tc.host, func(t *testing.T) {
			for _, target := range []string{"/x", "/api/v1/health"} {
				r := h.do(nil, "GET", target, withHost(tc.host), withBearer(h.token))
				if tc.ok {
					if r.code != http.StatusOK {
						t.Errorf("GET %s: %d %s, want 200", target, r.code, r.body)
					}
					continue
				}
				if r.code != http.StatusMisdirectedRequest || r.errCode(t) != "misdirected" {
					t.Errorf("GET %s: %d %s, want 421 misdirected", target, r.code, r.body)
				}
				if !strings.Contains(r.body, "server.allowed_hosts") {
					t.Errorf("421 body %s does not say how to allow the name", r.body)
				}
			}
		})
	}
}

func TestNewRefusesBadAllowedHost(t *testing.T) {
	for _, bad := range []string{"", "*", "*.", "ev*l.example", "http://den.example", "a b"} {
		if _, err := New(Options{DataDir: t.TempDir(), Env: noEnv, AllowedHosts: []string{bad}}); err == nil {
			t.Errorf("AllowedHosts %q accepted", bad)
		}
	}
}
