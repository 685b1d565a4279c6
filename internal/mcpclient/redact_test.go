package mcpclient

import (
	"slices"
	"strings"
	"testing"
)

// TestRedact: env and headers values, OAuth client secrets, url
// passwords and secret-named keys den does not read are emptied; the
// rest of the file is kept, and the result parses.
func TestRedact(t *testing.T) {
	in := `{
  "mcpServers": {
    "github": {"command": "gh-mcp", "args": ["--stdio"], "env": {"GITHUB_TOKEN": "ghp_secret1", "LOG": "debug"}},
    "docs": {"url": "https://u:pw-secret2@docs.example.org/mcp", "headers": {"Authorization": "Bearer secret3"},
             "oauth": {"clientId": "den", "clientSecret": "secret4"}, "vendorOpts": {"apiKey": "secret5", "region": "eu"}}
  },
  "globalShortcut": "Ctrl+Space",
  "auth": {"refresh_token": "secret6"}
}`
	out, keys, err := Redact([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"mcpServers.github.env.GITHUB_TOKEN", "mcpServers.github.env.LOG", "mcpServers.docs.headers.Authorization",
		"mcpServers.docs.oauth.clientSecret", "mcpServers.docs.url", "mcpServers.docs.vendorOpts.apiKey", "auth.refresh_token"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys %q,\nwant %q", keys, want)
	}
	for i := 1; i <= 6; i++ {
		if s := "secret" + string(rune('0'+i)); strings.Contains(string(out), s) {
			t.Errorf("%s is still in:\n%s", s, out)
		}
	}
	for _, s := range []string{`"Ctrl+Space"`, `"region": "eu"`, `"clientId": "den"`, `"https://u@docs.example.org/mcp"`, `"--stdio"`} {
		if !strings.Contains(string(out), s) {
			t.Errorf("%s is gone from:\n%s", s, out)
		}
	}
	f, err := Parse(out)
	if err != nil || len(f.Servers) != 2 || f.Get("github").Env[0] != (KV{"GITHUB_TOKEN", ""}) {
		t.Fatalf("the result: %v, %+v", err, f)
	}
	if _, _, err := Redact([]byte(`{"mcpServers": [`)); err == nil {
		t.Error("a file that does not parse: want an error")
	}
}
