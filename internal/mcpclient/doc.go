// Package mcpclient is den as a client of MCP servers: the servers'
// file (mcp.json, in the format Claude Desktop and Claude Code write),
// a session's connections to them (the official go-sdk), their tools
// as den tools, and OAuth logins.
//
// # The file
//
// Parse reads {"mcpServers": {NAME: {...}}}: "command", "args", "env"
// for a server den starts (stdio); "type" ("http", "sse") with "url"
// and "headers" for one den reaches; and den's keys "host", "agents",
// "enabled", "tools" {"allow", "deny"}, "permissions" {PATTERN:
// DECISION}, "timeout", "startupTimeout", "oauth" and "note". A known
// key with a value of the wrong kind is an error naming its line,
// column and field; a key den does not know is kept (written back as
// it was) and listed in File.Warnings, since other programs write this
// format too. Save writes the whole file at once, mode 0600. ${NAME}
// and ${NAME:-default} in command, args, env values, url and header
// values are den's environment variables, read when a server starts.
//
// # Where servers run
//
// A stdio server runs in the agent's computer (Options.Computer starts
// it there, with the computer's base environment and its own env): it
// can do what the computer can, nothing more. One marked "host" runs
// on the host with PATH=/usr/local/bin:/usr/bin:/bin, HOME a folder of
// its own under den's data (DATA/mcp/home/NAME, 0700) and the variables
// its config names: none of den's environment. HTTP and SSE servers
// are reached from den on the host, with their headers and, after den
// mcp login, an OAuth token. Tokens live in DATA/mcp/tokens (0600,
// read only while private), are renewed with their refresh token and
// saved again, and never reach a log, an event, the computer or the
// model.
//
// # A session's servers
//
// A Set holds one session's connections. Nothing starts with it: a
// server starts (or is reached) at its first use and is kept until
// Close; one whose program ended, that broke the protocol or that did
// not answer a call in time (Server.CallTimeout, 60 s by default) is
// stopped and started again at its next use. Starting and
// initializing is bounded by Server.StartTimeout. Lines a stdio server
// writes on stdout that cannot be JSON-RPC are kept in its log, not
// fed to the protocol; its log (Set.Log) also keeps the end of its
// stderr (64 KiB) and den's notes. Failures become errors that say
// what happened in words a person or a model can act on: the command
// missing and what to install, the exit status and the end of the
// log, what it printed that was not MCP, the 401 and den mcp login.
//
// What each server offers (tools, prompts) is remembered per agent in
// DATA/mcp/catalog, keyed by how the server is reached: a session
// shows the model the tools of a server den has listed before without
// starting it; the first call starts it.
//
// # Tools for the model
//
// Set.Offer makes den tools of the servers' tools, named by
// ModelNames (mcp__SERVER__TOOL, within every provider's rules, with a
// hash where names would clash or run long), their input schemas
// converted into the subset den validates and every provider accepts
// (see convertSchema). A server whose definitions would take more than
// ServerShare (5%) of the model's context window, or the largest ones
// when all would take more than TotalShare (15%) or be more than
// MaxDirectTools, is offered through the one tool "mcp" (list,
// describe, call) instead; the system prompt section says which.
//
// Every call goes through the permission gate (Options.Gate) as
// command "mcp", action "call", subject "SERVER/TOOL": the server's
// "permissions" (the tool's own name first, then the longest matching
// pattern), else permission.Policy.DecideMCP; every call is audited.
// A result's text is capped and offloaded as shell output is; images,
// audio and blobs are saved in /den/attachments and named by their
// den:// URL, and images are also given to a model that takes them;
// structured content is added as JSON unless a text part already says
// it.
//
// # Concurrency
//
// A Set and its servers' connections are safe for concurrent use;
// calls to one server may run at once. Close waits for every server
// to stop.
package mcpclient
