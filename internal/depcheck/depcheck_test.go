// Package depcheck holds a test that fails when a package crosses one of
// den's boundaries: the model vocabulary and the sandbox stand alone, so
// that every layer above can use them and they never reach up.
package depcheck

import (
	"os/exec"
	"strings"
	"testing"
)

const mod = "den.dev/den/internal/"

// allowed lists, for a package, the den packages it may import
// (directly or not), as prefixes below internal/.
var allowed = map[string][]string{
	"llm":                 {"llm"},
	"llm/anthropic":       {"llm"},
	"llm/openai":          {"llm"},
	"llm/openairesponses": {"llm"},
	"llm/gemini":          {"llm"},
	"sandbox":             {"sandbox"},
	"sandbox/bwrap":       {"sandbox", "privfile"},
	"sandbox/proot":       {"sandbox"},
	"sandbox/rootfs":      {"sandbox/rootfs"},
	"sandbox/output":      {"sandbox/output"},
	"sandbox/seccomp":     {"sandbox/seccomp"},
	"sandbox/cgroup":      {"sandbox/cgroup"},
	"store":               {"store", "llm"},
	"agent":               {"agent", "llm", "tool", "sandbox", "cmdscan", "resource"},
	"cmdscan":             {"cmdscan"},
	"hostcmd/wire":        {"hostcmd/wire"},
	"hostfs":              {"hostfs"},
	"sandbox/idmap":       {"sandbox", "privfile"},
	"sandbox/netns":       {"sandbox/netns", "sandbox/launch"},
	"sandbox/launch":      {"sandbox/launch"},
	// The daemon's edge stands alone: the guard and the certificate know
	// nothing of sessions, and the event vocabulary sits below the faces.
	"server/auth":    {"server/auth", "privfile"},
	"server/tlscert": {"server/tlscert", "privfile"},
	"service":        {"service"},
	// The metrics read events and know nothing of what makes them.
	"metrics": {"metrics", "store", "llm"},
	// Web Push's protocol knows nothing of den; what den sends with it
	// reads stored events and subscriptions only.
	"webpush": {"webpush", "privfile"},
	"push":    {"push", "webpush", "privfile", "store", "llm"},
	// (schedule: den-schedule's interface names its views.)
	"event": {"event", "agent", "llm", "tool", "sandbox", "cmdscan", "resource", "hostsvc", "hostcmd", "hostfs", "permission", "store",
		"schedule", "egress", "privfile", "secret"},
	// The egress proxy knows the sandbox's network and den's private
	// files, and nothing of sessions, the gate or the store: they wire it.
	"egress": {"egress", "sandbox", "privfile", "secret"},
	// Secrets are a file and their bindings, nothing more.
	"secret": {"secret", "privfile"},
	// privfile stands alone like the standard library, so that any layer,
	// the sandbox's included, may keep its files with it.
	"privfile": {"privfile"},
	// Checkpoints know folder trees and den's safe file layer, and
	// nothing of computers, sessions or the faces (launch starts their
	// helper as den starts its other children).
	"checkpoint": {"checkpoint", "hostfs", "sandbox/launch"},
	// Skills know files, and nothing of sessions, models or the sandbox.
	"skill": {"skill", "hostfs"},
	// den:// URLs name the computer's folders and know nothing else, so
	// that the tools, the server and the faces can all use them.
	"resource": {"resource", "sandbox"},
	// The MCP client knows den's tools, the permission gate, how a
	// program starts in a sandbox and a server's egress policy (read as
	// den's egress reads an agent's), and nothing of sessions, computers
	// or the faces: the session wires it.
	"mcpclient": {"mcpclient", "llm", "agent/ctxwin", "tool", "permission", "store", "sandbox", "cmdscan", "resource", "privfile",
		"egress", "secret"},
	// The browser knows the computer (its namespaces and folders) and
	// nothing of sessions, models, permissions or the faces: those call
	// it.
	"browser": {"browser", "sandbox", "hostfs", "privfile"},
	// The scheduler knows the store and nothing of sessions, models,
	// computers or the faces: den serve gives it a Runner.
	"schedule": {"schedule", "store", "llm"},
}

func TestBoundaries(t *testing.T) {
	for pkg, ok := range allowed {
		out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", mod+pkg).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			rest, den := strings.CutPrefix(dep, mod)
			if !den {
				continue
			}
			fine := false
			for _, p := range ok {
				if rest == p || strings.HasPrefix(rest, p+"/") {
					fine = true
				}
			}
			if !fine {
				t.Errorf("%s imports %s, across a boundary", pkg, rest)
			}
		}
	}
}
