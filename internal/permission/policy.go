package permission

import (
	"net/url"
	"path"
	"strings"
)

// Decision is what the gate does with a call.
type Decision string

// The decisions.
const (
	Allow Decision = "allow" // run it
	Ask   Decision = "ask"   // run it if a person approves
	Deny  Decision = "deny"  // refuse it
)

// Trust is how much an agent is trusted; it sets the default decision
// of every command and action.
type Trust string

// The trust levels.
const (
	// Restricted asks before anything that leaves a trace outside the
	// conversation or reads the user's data, and denies changes to den's
	// settings and calls to models off the allow-list.
	Restricted Trust = "restricted"
	// Trusted is the default: harmless commands run, anything that acts
	// for the user (sending to another session, changing a setting,
	// reading the clipboard, a model off the allow-list) asks.
	Trusted Trust = "trusted"
	// Full allows everything the user's overrides do not restrict.
	Full Trust = "full"
)

// Command names and actions the policy knows. Calls to commands it does
// not know ask under restricted and trusted, and are allowed under full.
const (
	CmdOpen      = "den-open"
	CmdNotify    = "den-notify"
	CmdAsk       = "den-ask"
	CmdModel     = "den-model"
	CmdSessions  = "den-sessions"
	CmdConfig    = "den-config"
	CmdClipboard = "den-clipboard"
	CmdSpeak     = "den-speak"
	CmdLocation  = "den-location"
	CmdCamera    = "den-camera"
	CmdMCP       = "den-mcp"
	// CmdBrowser is den-browser, and the model's browser_use tool too:
	// its action is the browser's action, its subject the site of the
	// page it acts on (the URL's host, or "den" for den:// files).
	CmdBrowser = "den-browser"
	// CmdAgent is den-agent: sub-agents (run, spawn, status, wait,
	// steer, cancel, list) and messages to other agents (send). The
	// subject of run and spawn is the other agent whose computer the
	// sub-agent would run in ("" for the caller's own), that of send
	// the agent written to.
	CmdAgent = "den-agent"
	// CmdSchedule is den-schedule: an agent schedules its own runs
	// (its own jobs only; hostsvc sees to that). The subject of add and
	// edit is the model the job asks for, when it names one.
	CmdSchedule = "den-schedule"
	// MCP is the command under which the gate decides and audits the
	// calls of MCP servers' tools: action "call", subject
	// "SERVER/TOOL". DecideMCP gives its defaults.
	MCP = "mcp"
	// CmdMCPClient is a call from a client of den's MCP server (another
	// agent using den's computer): its action is the MCP tool (run,
	// exec, read_file, write_file, list_files, sessions_list,
	// session_read), its subject the client's name, and its args the
	// client's name, the tool, then what the tool acts on (the
	// approval's question and the audit line show them so).
	CmdMCPClient = "mcp-client"
	// CmdEgress is a connection out of a computer whose agent's egress
	// policy is "ask" (package egress): action "connect", subject the
	// host, decided through Gate.CheckWith.
	CmdEgress = "egress"
)

// defaults are the decisions per trust level, keyed "command" or
// "command action"; "command action" is looked up first. den-model run
// is not here: it depends on the allow-list (see modelRun).
var defaults = map[Trust]map[string]Decision{
	Trusted: {
		CmdOpen:                 Allow,
		CmdNotify:               Allow,
		CmdAsk:                  Allow,
		CmdModel + " list":      Allow,
		CmdSessions + " list":   Allow,
		CmdSessions + " search": Allow,
		CmdSessions + " show":   Allow,
		CmdSessions + " send":   Ask,
		CmdConfig + " get":      Allow,
		CmdConfig + " set":      Ask,
		CmdClipboard + " read":  Ask,
		CmdClipboard + " write": Allow,
		CmdSpeak:                Allow,
		// Where the user is, each time: theirs to say.
		CmdLocation: Ask,
		// No photo is taken but by the user's own hand.
		CmdCamera: Allow,
		// Listing what the MCP servers offer reads their descriptions
		// only; a call of a tool (den-mcp call) is then decided as the
		// model's own call of that tool is (DecideMCP), so the
		// command itself is allowed.
		CmdMCP:           Allow,
		CmdMCP + " read": Allow,
		// Another agent may read, write files and talk to the agent;
		// a command in the computer asks (see DecideFor).
		CmdMCPClient + " run":        Allow,
		CmdMCPClient + " write_file": Allow,
		CmdMCPClient + " exec":       Ask,
		CmdMCPClient:                 Allow,
		// The agent browses as it runs commands; a script of its own
		// in a page (which can read what the page shows, logins
		// included) asks.
		CmdBrowser:                 Allow,
		CmdBrowser + " execute_js": Ask,
		// Sub-agents work for the agent in its own computer, within its
		// trust and budget; one in another agent's computer asks (see
		// DecideFor), as does a message to another agent.
		CmdAgent:           Allow,
		CmdAgent + " send": Ask,
		// An agent schedules itself (its own jobs only); a job with a
		// model off the allow-list asks, as den-model run does.
		CmdSchedule: Allow,
	},
	Restricted: {
		CmdOpen:                 Ask, // but http(s) URLs are allowed: see Decide
		CmdNotify:               Allow,
		CmdAsk:                  Allow,
		CmdModel + " list":      Allow,
		CmdSessions + " list":   Allow,
		CmdSessions + " search": Ask,
		CmdSessions + " show":   Ask,
		CmdSessions + " send":   Ask,
		CmdConfig + " get":      Allow,
		CmdConfig + " set":      Deny,
		CmdClipboard + " read":  Ask,
		CmdClipboard + " write": Ask,
		CmdSpeak:                Allow,
		CmdLocation:             Ask,
		CmdCamera:               Ask,
		CmdMCP:                  Allow,
		// A resource may be the user's data.
		CmdMCP + " read": Ask,
		// Reads are allowed; anything that changes the computer or
		// talks to the agent asks.
		CmdMCPClient + " run":        Ask,
		CmdMCPClient + " write_file": Ask,
		CmdMCPClient + " exec":       Ask,
		CmdMCPClient:                 Allow,
		// Browsing is allowed; what hands the page's secrets to the
		// computer, changes them, runs a script in the page or gives a
		// file of the computer to a site asks.
		CmdBrowser:                  Allow,
		CmdBrowser + " execute_js":  Ask,
		CmdBrowser + " get_cookies": Ask,
		CmdBrowser + " set_cookies": Ask,
		CmdBrowser + " upload":      Ask,
		// Starting a sub-agent spends the user's money: it asks.
		CmdAgent:            Allow,
		CmdAgent + " run":   Ask,
		CmdAgent + " spawn": Ask,
		CmdAgent + " send":  Ask,
		// Reading its jobs is allowed; making, changing or running one
		// asks.
		CmdSchedule:              Ask,
		CmdSchedule + " list":    Allow,
		CmdSchedule + " show":    Allow,
		CmdSchedule + " history": Allow,
	},
}

// Policy decides calls for one agent: the defaults of its trust level,
// then the user's overrides.
type Policy struct {
	// Trust sets the defaults; "" is Trusted.
	Trust Trust
	// Overrides replace the defaults, keyed "command" (every action of
	// the command) or "command action" (that action; it wins over the
	// command's key), e.g. "den-config set": Deny. An override applies
	// whatever the call's subject: "den-model run": Allow allows every
	// model, allow-listed or not.
	Overrides map[string]Decision
	// Models is the allow-list of den-model run: model refs or group
	// names, or path.Match patterns such as "anthropic/*".
	Models []string
}

// Decide returns the decision for a call of cmd with action ("" for
// commands without actions), knowing nothing of its subject: den-model
// run decides as for a model off the allow-list, den-open as for a
// target that is not a web URL. Use DecideFor when the subject is known.
func (p Policy) Decide(cmd, action string) Decision {
	return p.DecideFor(cmd, action, "")
}

// DecideFor is Decide for a call whose subject is known: the model ref
// of den-model run, the URL or path of den-open.
//
// The order is: an override for "cmd action", else one for "cmd", else
// the trust level's default. Under full every default is Allow. Under
// the other levels:
//   - den-model run is Allow (trusted) or Ask (restricted) for a model on
//     the allow-list, and Ask (trusted) or Deny (restricted) for others;
//   - under restricted den-open allows http and https URLs and asks for
//     anything else (files, other schemes);
//   - den-agent run and spawn ask when the sub-agent would run in
//     another agent's computer;
//   - commands and actions the table does not know ask.
//
// One default holds under full too: mcp-client exec asks. An agent's
// trust is how far den trusts its own agent; a command an MCP client
// runs in the computer comes from another program, which the user
// allows by name ([mcp_clients] in the config, or an override).
func (p Policy) DecideFor(cmd, action, subject string) Decision {
	if d, ok := p.Overrides[key(cmd, action)]; ok {
		return d
	}
	if d, ok := p.Overrides[cmd]; ok {
		return d
	}
	trust := p.Trust
	if trust == "" {
		trust = Trusted
	}
	if cmd == CmdMCPClient && action == "exec" {
		return Ask
	}
	if trust == Full {
		return Allow
	}
	if cmd == CmdModel && action == "run" {
		return p.modelRun(trust, subject)
	}
	if cmd == CmdSchedule && (action == "add" || action == "edit") && trust == Trusted && subject != "" && !p.ModelAllowed(subject) &&
		!isJobID(subject) {
		return Ask
	}
	if cmd == CmdOpen && trust == Restricted && isWebURL(subject) {
		return Allow
	}
	if cmd == CmdAgent && (action == "run" || action == "spawn") && subject != "" {
		return Ask // in another agent's computer
	}
	table := defaults[trust]
	if d, ok := table[key(cmd, action)]; ok {
		return d
	}
	if d, ok := table[cmd]; ok {
		return d
	}
	return Ask
}

func (p Policy) modelRun(trust Trust, model string) Decision {
	listed := p.ModelAllowed(model)
	switch {
	case trust == Trusted && listed:
		return Allow
	case trust == Trusted, listed:
		return Ask
	}
	return Deny
}

// ModelAllowed reports whether model is on the allow-list.
func (p Policy) ModelAllowed(model string) bool {
	if model == "" {
		return false
	}
	for _, m := range p.Models {
		if m == model {
			return true
		}
		if ok, err := path.Match(m, model); err == nil && ok {
			return true
		}
	}
	return false
}

// key is the overrides key of a command and action.
func key(cmd, action string) string {
	if action == "" {
		return cmd
	}
	return cmd + " " + action
}

// isJobID reports whether s is a scheduled job's id (den-schedule
// edit's subject when it names no model).
func isJobID(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// isWebURL reports whether s is an absolute http or https URL with a
// host.
func isWebURL(s string) bool {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Host == "" {
		return false
	}
	scheme := strings.ToLower(u.Scheme)
	return scheme == "http" || scheme == "https"
}

// MCPPlace is where an MCP server runs, for DecideMCP.
type MCPPlace int

// The places.
const (
	// MCPInComputer: a stdio server inside the agent's computer, which
	// can do only what the computer can.
	MCPInComputer MCPPlace = iota
	// MCPOnHost: a stdio server on the host, with the user's rights.
	MCPOnHost
	// MCPRemote: a server reached over HTTP, acting with whatever
	// credentials its configuration holds.
	MCPRemote
)

// DecideMCP is the decision for a call of an MCP server's tool that the
// server's own permissions (in mcp.json) leave open: an override for
// "mcp call", else for "mcp", else the trust level's default:
//   - full allows every call;
//   - trusted allows every tool of a server in the computer (it can do
//     only what the computer can, which the shell does unasked) and
//     read-only tools (the tool's readOnlyHint) of any server, and asks
//     for the other tools of host and remote servers;
//   - restricted allows read-only tools of a server in the computer and
//     asks for everything else.
func (p Policy) DecideMCP(place MCPPlace, readOnly bool) Decision {
	if d, ok := p.Overrides[key(MCP, "call")]; ok {
		return d
	}
	if d, ok := p.Overrides[MCP]; ok {
		return d
	}
	switch trust := p.Trust; {
	case trust == Full:
		return Allow
	case trust == Restricted:
		if place == MCPInComputer && readOnly {
			return Allow
		}
		return Ask
	case place == MCPInComputer || readOnly:
		return Allow
	}
	return Ask
}
