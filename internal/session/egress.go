package session

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"

	"den.dev/den/internal/config"
	"den.dev/den/internal/egress"
	"den.dev/den/internal/permission"
	"den.dev/den/internal/secret"
)

// egressPrompt describes the agent's egress policy for its system
// prompt ("" when open).
func (r *Runtime) egressPrompt(agent string) string {
	pol, err := r.Config().Agent(agent).EgressPolicy()
	if err != nil || pol.Mode == egress.Open || pol.Mode == egress.Off {
		return ""
	}
	var rules []string
	for _, x := range pol.Allow {
		rules = append(rules, x.String())
	}
	allowed := "no host"
	if len(rules) > 0 {
		allowed = strings.Join(rules, ", ")
	}
	var out string
	if pol.Mode == egress.Ask {
		out = "It reaches " + allowed + "; den asks the user about any other host (the connection waits for the answer)."
	} else {
		out = "It reaches only " + allowed + "; den refuses other hosts, and says which and how the user can allow them."
	}
	return out + skillHosts(r.Config().Agent(agent))
}

// skillHosts says which skills bring hosts of their own while in use
// ("" when none do), for the system prompt.
func skillHosts(a config.Agent) string {
	bySkill, err := a.SkillRules()
	if err != nil || len(bySkill) == 0 {
		return ""
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(bySkill)) {
		var hosts []string
		for _, x := range bySkill[name] {
			hosts = append(hosts, x.String())
		}
		parts = append(parts, name+" ("+strings.Join(hosts, ", ")+")")
	}
	return " Once a skill is in use in this session (its SKILL.md read with file_read), the computer also reaches its hosts: " + strings.Join(parts, "; ") + "."
}

// secretsPrompt lists the agent's secrets for its system prompt: names
// and where their values go, never the values.
func (r *Runtime) secretsPrompt(agent string) []string {
	list, err := secret.Open(r.o.DataDir).For(agent)
	if err != nil {
		return nil
	}
	var out []string
	for _, s := range list {
		out = append(out, fmt.Sprintf("$%s: to %s (%s)", s.Name, strings.Join(s.Hosts, ", "), s.Form()))
	}
	return out
}

// egressRecord publishes each connection of a session's computers as
// an "egress" event of the session (the computer names the session by
// its id), and tells d about refused ones.
func (r *Runtime) egressRecord(d *denials) func(egress.Record) {
	return func(rec egress.Record) {
		if d != nil && !rec.Allowed {
			d.add(rec)
		}
		r.emit(rec.Session, &rec)
	}
}

// EgressAsk asks about a connection through the session's gate, as any
// approval: command "egress", action "connect", subject the host, so
// that an answer for the session or always covers that host on every
// port.
func EgressAsk(gate *permission.Gate, session string) func(ctx context.Context, host string, port int) (bool, string, error) {
	return func(ctx context.Context, host string, port int) (bool, string, error) {
		hp := net.JoinHostPort(host, strconv.Itoa(port))
		c, err := gate.CheckWith(ctx, permission.Request{Session: session, Command: permission.CmdEgress, Action: "connect",
			Subject: host, Detail: "connect to " + hp, Args: []string{hp}}, permission.Ask)
		if err != nil {
			return false, "error", err
		}
		c.Finish(context.WithoutCancel(ctx), 0)
		return c.Decision == permission.Allow, string(c.By), nil
	}
}

// denials keeps the connections den refused a session's computer, so
// that a command's result can tell the model which ones happened while
// it ran (the command itself often says only "connection reset").
type denials struct {
	mu   sync.Mutex
	seq  int
	last []denial // the most recent, at most maxDenials
}

type denial struct {
	seq int
	rec egress.Record
}

const maxDenials = 32

func (d *denials) add(rec egress.Record) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seq++
	d.last = append(d.last, denial{d.seq, rec})
	if len(d.last) > maxDenials {
		d.last = d.last[len(d.last)-maxDenials:]
	}
}

// mark is where the log stands now.
func (d *denials) mark() int {
	if d == nil {
		return 0
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.seq
}

// since says which connections were refused after mark, one line each
// ("" when none): each names the host and how the user can allow it.
func (d *denials) since(mark int) string {
	if d == nil {
		return ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	seen := map[string]bool{}
	var lines []string
	for _, x := range d.last {
		key := x.rec.Host + ":" + strconv.Itoa(x.rec.Port)
		if x.seq <= mark || seen[key] {
			continue
		}
		seen[key] = true
		lines = append(lines, egress.Denied(x.rec))
	}
	if len(lines) == 0 {
		return ""
	}
	return fmt.Sprintf("[den refused %d connection(s) of this command]\n%s", len(lines), strings.Join(lines, "\n"))
}
