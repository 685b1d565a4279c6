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
// # Recovery
//
// A watching runtime (the daemon) repairs, once a second, sessions a
// killed den left running (their open tool calls become "interrupted"
// results) and runs messages queued for sessions nobody runs.
package session
