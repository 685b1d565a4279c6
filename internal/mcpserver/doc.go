// Package mcpserver is den as an MCP server: other agents (Claude Code,
// Codex, any MCP client) use den's persistent, isolated computer and
// talk to its agent through the Model Context Protocol. den mcp serve
// serves one client over stdin and stdout (Server.Run); den serve
// serves many at /mcp with the streamable HTTP transport
// (Server.Handler), behind the daemon's token.
//
// # Tools and resources
//
//	run            send a prompt to an agent in a session; progress notifications while it works; its answer
//	exec           a shell command in a session's /workspace; its output (capped) and exit code
//	read_file      a file of the session's folders (/workspace, /den/offloads, …)
//	write_file     a file in the session's /workspace
//	list_files     a folder of the session's folders
//	sessions_list  an agent's sessions, newest first
//	session_read   a session's messages as text
//
// Resources: den://sessions/ID (a session's messages as text) and
// den://workspace/PATH (a file of the connection's current session: the
// last one a tool call of the connection used, else the client's own).
// resources/list lists the agent's latest sessions.
//
// Every tool names its place with two optional arguments: agent (the
// server's default agent when left out) and session, a session's id or
// a name. A name is the agent's latest session with that title; run,
// exec and write_file make it when there is none, the others say it
// does not exist. Without a session, a call uses the session named
// after the client, so that a client's calls share one /workspace
// unless it asks for another.
//
// # The gate
//
// Every call, resource reads included, goes through den's permission
// gate (package permission) as a call of command mcp-client: its
// action the tool (reads of den://sessions/ are session_read, of
// den://workspace/ read_file, and resources/list sessions_list), its
// subject the client's name, its agent the agent it acts on, its
// session the session when there is one. The policy is the agent's
// (trust level and permissions), with the client's [mcp_clients] table
// of the config laid over it: its allow, ask and deny lists become
// overrides that win over the agent's, and an agent missing from its
// agents list is denied every tool. The defaults: reads allowed, run
// and write_file allowed under trusted and asked under restricted,
// exec asked at every level.
//
// An ask is an approval of den's, raised as an event of the session
// (den serve's faces show it; den approvals lists it) and answered by
// a person there or with den approve ID, never through MCP: no tool
// answers an approval, and nothing a client sends skips one. A call
// that waits sends the client a progress notification naming the
// approval; unanswered within the gate's timeout, it is denied. A
// denied call's result is an error saying who denied it and how to get
// it allowed. Every call is in the audit log (den audit) as
// `mcp-client CLIENT TOOL ARGS...`.
//
// The client's name is the one its initialize request gives (its
// clientInfo), or Options.Client (den mcp serve --client). It is the
// client's own word: the boundary that keeps strangers out is the
// transport (a process the user started; den's token over HTTP), and
// the name only picks which of the user's rules apply.
//
// # Files
//
// Files are read and written through package hostfs, as the files
// routes do (internal/server/files): no symbolic link is followed
// anywhere on a path, the last component included, and no named pipe,
// socket or device is opened; a link the computer planted is refused,
// with a message naming the path as the computer sees it. Paths are
// given as the computer names them (/workspace/a.txt), relative to
// /workspace (a.txt), or as den:// URLs (den://workspace/a.txt).
//
// # Concurrency
//
// A Server serves any number of connections and calls at once. It
// keeps, per connection, the session its last call used (for
// den://workspace/ resources); everything else lives in the runtime
// and the store. A run's turn and an exec's command belong to the
// runtime: a canceled call (the client's notifications/cancelled)
// cancels them, as does a stdio client that leaves (the SDK cancels a
// connection's calls when its input ends). Over HTTP, a call whose
// client went away without canceling it runs to its end.
package mcpserver
