package clitest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestNetwork: under an allowlist, den exec's command cannot reach a
// host the rules do not name (its HTTP request gets den's 403, which
// says how to allow it, and so does stderr); den network log shows the
// refusal; den network allow adds the rule to the config, and the same
// command then reaches the host; den network disallow takes it away.
func TestNetwork(t *testing.T) {
	t.Parallel()
	d := newDen(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "site-token host=%s\n", r.Host)
	})}
	go srv.Serve(l)
	defer srv.Close()
	cfg := d.WriteConfig("config.toml", fmt.Sprintf(`[agents.default]
rootfs = "busybox"
egress = "allowlist"

[network]
hosts = { "site.example:80" = %q }
`, l.Addr().String()))
	fetch := []string{"--config", cfg, "exec", "--", "sh", "-c", `printf 'GET / HTTP/1.0\r\nHost: site.example\r\n\r\n' | nc -w 10 site.example 80`}

	r := d.Run(fetch...)
	hint := "den network allow --agent default site.example"
	if !strings.Contains(r.Stdout, "403 Forbidden") || !strings.Contains(r.Stdout, hint) || !strings.Contains(r.Stderr, hint) {
		t.Fatalf("a host the rules do not name: want den's 403 and the hint on stderr, got %v", r)
	}
	log := d.MustRun("--config", cfg, "network", "log").Stdout
	if !strings.Contains(log, "site.example") || !strings.Contains(log, "denied") {
		t.Errorf("den network log after the refusal:\n%s", log)
	}

	d.MustRun("--config", cfg, "network", "allow", "site.example")
	b, _ := os.ReadFile(cfg)
	if !strings.Contains(string(b), `allow = ["site.example"]`) {
		t.Errorf("the config after den network allow:\n%s", b)
	}
	if show := d.MustRun("--config", cfg, "network").Stdout; !strings.Contains(show, "egress allowlist") || !strings.Contains(show, "allow site.example") {
		t.Errorf("den network: %s", show)
	}
	r = d.Run(fetch...)
	if r.Code != 0 || !strings.Contains(r.Stdout, "site-token host=site.example") {
		t.Fatalf("after den network allow: %v", r)
	}
	lines := strings.Split(strings.TrimSpace(d.MustRun("--config", cfg, "network", "log", "--json", "--limit", "2").Stdout), "\n")
	var last struct {
		Type    string `json:"type"`
		Host    string `json:"host"`
		Port    int    `json:"port"`
		Allowed bool   `json:"allowed"`
		In      int64  `json:"bytes_in"`
		Out     int64  `json:"bytes_out"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &last); err != nil || last.Type != "egress" || last.Host != "site.example" ||
		last.Port != 80 || !last.Allowed || last.In == 0 || last.Out == 0 {
		t.Errorf("den network log --json, newest first: %v %+v\n%s", err, last, lines)
	}
	if denied := d.MustRun("--config", cfg, "network", "log", "--denied").Stdout; strings.Count(strings.TrimSpace(denied), "\n") != 1 || !strings.Contains(denied, "denied") {
		t.Errorf("den network log --denied:\n%s", denied)
	}

	d.MustRun("--config", cfg, "network", "disallow", "site.example")
	if r = d.Run(fetch...); !strings.Contains(r.Stdout, "403 Forbidden") {
		t.Errorf("after den network disallow: %v", r)
	}
}
