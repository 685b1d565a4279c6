// Package session is den's runtime: it owns the sessions of one den
// process, and every face (den run, den chat, the daemon's API) goes
// through it. A face sends a message (Send), follows the session's
// events (Subscribe), stops a turn (Cancel) and answers approvals
// (Answer).
//
// # Messages and turns
//
// Every message is queued first (store.EnqueueMessage), with the id it
// will have in the history, and a worker of the session delivers the
// queue: a run of the agent loop takes every queued message, and one
// queued while the run goes on joins the conversation at its next turn
// boundary, as a message of its own. A session runs one turn at a time
// across processes: the worker holds the session's lock. A message for
// a session another process runs is queued for that process's next
// boundary (or, in a runtime that watches, run once the holder is done).
//
// # Events
//
// Events are published through a hub that stores each one (its id comes
// from the store) before any subscriber sees it. A subscription replays
// what is stored after the id it starts from, then follows live events;
// one that falls behind catches up from the store. Events that other den
// processes store reach subscribers too (the hub reads new events from
// the store after its own writes and every 100 ms), so a session den run
// drives in a terminal is visible to the daemon's faces as it runs.
//
// # Computers
//
// A session's computer is started on its first run and kept while the
// session is used; Options.IdleStop stops it after that much idle time.
//
// # MCP servers
//
// A session's MCP servers (package mcpclient) come with its computer:
// the servers' file (Options.MCP, else mcp.json beside the config
// file) is read when the computer starts, nothing starts with it, each
// server starts at its first use (stdio ones in the session's computer,
// as processes of their own without host commands), and all stop when
// the computer stops. Each turn offers their tools within the model's
// context budget; "/SERVER:PROMPT" in a message is replaced by that
// prompt when it is sent (beside "/SKILL"); den-mcp reaches the same
// servers from the computer.
//
// # Sub-agents
//
// A session may start sub-agents (Spawn, RunSubagent; den-agent in the
// computer): sessions of their own with a parent and a profile of the
// config, whose trust is never above the parent's and whose tools are
// the profile's allow-list. A parent runs at most [subagents]
// max_running at once, nested at most max_depth deep. Every run counts
// its sub-agents' spending (the store's sums over the session's
// descendants) against its budget, and a sub-agent asks its parents'
// budgets before each request. A spawned sub-agent's answer is sent to
// its parent as a message when its worker ends, unless someone waits
// for it; a parent's worker whose run ended with such answers still to
// come waits for them (and stops waiting when its turn is canceled,
// which cancels its sub-agents too). Who waits, and each run's budget,
// live in this process; the store keeps the parent, the profile, the
// usage, and what each sub-agent owes its parent (store.SubagentState):
// whether it reports, whether its answer is owed, how its last run
// ended (a run records "running" as it begins, so a den that dies
// during it leaves that). An answer joins the parent's queue in the
// transaction that records its delivery, so it is delivered once
// however den stops.
//
// # Recovery
//
// A watching runtime (the daemon) repairs, once a second, sessions a
// killed den left running (their open tool calls become "interrupted"
// results), delivers what sub-agents nobody runs still owe their
// parents (their answer, or word that den stopped during their run),
// and runs messages queued for sessions nobody runs: a parent that
// gets such a message runs with it, as its turn was interrupted too, and
// a sub-agent with a message queued runs it and reports as it ends. A
// session's run delivers what its own sub-agents owe it first, in
// every runtime.
package session
