// Package permission is the gate in front of host commands: it decides
// each call (allow, ask or deny), gets a person's answer when it must
// ask, and records every call in the audit log.
//
// # Decisions
//
// A Policy holds an agent's trust level (restricted, trusted, full),
// the user's overrides (keyed "command" or "command action") and
// den-model's allow-list. Policy.DecideFor gives the decision; the table
// of defaults is in policy.go. The defaults of trusted, the default
// level: den-open, den-notify, den-ask, den-model list, den-sessions
// list/search/show, den-config get, den-clipboard write and den-speak
// are allowed; den-model run is allowed for allow-listed models and
// asks for others; den-sessions send, den-config set and den-clipboard
// read ask. Restricted asks for more and denies some: den-open of
// anything but an http(s) URL, den-sessions search/show, den-clipboard
// write and den-model run of an allow-listed model ask; den-model run of
// another model and den-config set (which could raise the agent's own
// trust) are denied. Full allows everything. Whatever the level, the
// user's overrides win, and commands the table does not know ask
// (except under full).
//
// The tools of MCP servers are decided as command "mcp", action
// "call", subject "SERVER/TOOL": the server's own permissions in
// mcp.json first (package mcpclient), then Policy.DecideMCP (overrides
// "mcp call" or "mcp", then the defaults by trust level, where the
// server runs and whether the tool says it only reads), through
// Gate.CheckWith. den-mcp itself (list, tools, resources, prompts) is
// allowed; den-mcp read of a resource asks under restricted; den-mcp
// call is decided as the tool's own call is.
// The browser (den-browser, and the model's browser_use tool) is
// decided as command "den-browser", action the browser's action,
// subject the page's site: browsing is allowed at every level;
// execute_js asks under trusted and restricted; get_cookies,
// set_cookies and upload ask under restricted.
// den-schedule (an agent's own jobs only) is allowed under trusted,
// but add or edit of a job with a model off the allow-list asks; under
// restricted, list, show and history are allowed and the rest asks.
// Calls of MCP clients (mcp-client, another agent using den through its
// MCP server) are decided by the same table: reads are allowed; run and
// write_file are allowed under trusted and ask under restricted; exec
// asks at every level, full included, unless an override (the
// client's [mcp_clients] table, which the MCP server turns into
// overrides) allows it.
//
// # Asking
//
// When the policy says ask, an earlier answer may settle it: one given
// with scope session, in this session (read from the store, so it holds
// across den processes), then one given with scope always, which the
// store keeps as a per-agent rule. Earlier answers only settle asks:
// they never override the policy's allow or deny.
//
// Otherwise the Gate's Mode decides. AutoApprove (den run --yes)
// approves once; DenyAsks (nobody to ask) denies. Wait, the default,
// stores a pending approval, emits an ApprovalRequest event, and waits
// for the first of: the face's Prompt, an answer written to the store by
// another process (den approve ID, den deny ID; the gate reads the row
// every PollInterval, 100 ms by default), the timeout (5 minutes by
// default; the call is denied), or ctx. Every answer, the face's
// included, goes through the store's AnswerApproval, which keeps only
// the first, so a race between two faces has one winner and all see it.
//
// # Invariants
//
//   - Approvals are issued by den, never by the model: the only ways to
//     answer are the Prompt func a face registers and the store, which
//     lives on the host outside every computer. Nothing in a Request
//     (all of it but the session comes from the sandbox) answers or
//     skips an ask.
//   - Every call that reaches Check is audited exactly once: Finish (or
//     Do) records allowed and denied calls with their exit code and
//     duration, and Check records the calls it fails on.
//   - Arguments are redacted (Redact) before they are stored, emitted or
//     shown: secret-named flags, variables and setting keys, and values
//     shaped like keys or tokens.
//
// # Concurrency
//
// A Gate holds no mutable state and is safe for concurrent use; each
// Check that waits owns the goroutine running the face's Prompt and
// waits for it to return before Check does.
package permission
