// Package store is den's state in SQLite (modernc.org/sqlite: pure Go,
// no cgo): agents, sessions, their messages as a version tree, an index
// of tool calls, and per-request usage. One file under the data dir
// holds it; Open creates and migrates it.
//
// # Schema
//
//	agents     (name PK, created_at)
//	sessions   (id PK, agent → agents, title, model, created_at, updated_at,
//	            head → messages(session_id, id),
//	            requests, input_tokens, output_tokens, cache_read_tokens,
//	            cache_write_tokens, cost_micro_usd, status, memory,
//	            parent, profile, report, owed, ended, end_error,
//	            delivered_at)
//	messages   (id PK, session_id → sessions ON DELETE CASCADE,
//	            parent_id → messages(session_id, id) ON DELETE CASCADE,
//	            role CHECK user|assistant, parts JSON CHECK json_valid,
//	            model, created_at)
//	tool_calls (message_id → messages, position; session_id, call_id, name,
//	            input, created_at, result_message_id → messages, result,
//	            result_images, is_error, duration_ms)
//	usage      (id, agent → agents, session_id → sessions ON DELETE SET NULL,
//	            model, purpose, token counts, cost_micro_usd, latency_ms,
//	            created_at)
//	summaries  (id, session_id → sessions, up_to → messages, text, model,
//	            compacted, created_at)
//	approvals  (id PK, agent, session_id, command, action, subject,
//	            detail, args JSON, status pending|approved|denied|expired,
//	            scope, decided_by, created_at, expires_at, decided_at)
//	rules      (agent, command, action, subject PK, decision, created_at)
//	audit      (id, created_at, agent, session_id, command, action,
//	            args JSON, decision, decided_by, approval_id, exit_code,
//	            waited_us, duration_us)
//	push_subscriptions (endpoint PK, p256dh, auth, user_agent, origin,
//	            created_at, last_success, failures)
//	schedules  (id PK, agent, name, kind cron|every|at, spec, tz, anchor,
//	            prompt, session, session_id, model, budget, max_turns,
//	            verify, deliver, speak, approvals, misfire, grace, jitter,
//	            retries, paused, created_by, created_at, updated_at,
//	            accounted, next_due)
//	schedule_runs (id PK, schedule_id → schedules ON DELETE CASCADE,
//	            slot, attempt, due, cause, status, reason, started, ended,
//	            session_id, cost_micro_usd, answer, retry_at,
//	            delivery_id → schedule_deliveries, owner;
//	            UNIQUE (schedule_id, slot, attempt): the claim of a slot)
//	schedule_deliveries (id PK, schedule_id → schedules, kind, title,
//	            body, session_id, speak, status pending|delivered|failed,
//	            attempts, next_attempt, detail, error, reached,
//	            created_at, delivered_at)
//
// Times are Unix nanoseconds (INTEGER), money is integer micro-dollars
// (sums are exact), tables are STRICT. Ids are 20 characters of
// lower-case Crockford base32, URL-safe: 10 of creation milliseconds,
// so they sort by time, then 50 random bits. The parts column's JSON
// encoding is described in parts.go; it gives back every field of every
// llm part byte for byte, invalid tool-call JSON included.
//
// The schema evolves by a ladder of migrations on PRAGMA user_version,
// one transaction per step. A database whose user_version is past this
// build's last step was written by a newer den: Open refuses it with
// ErrSchemaTooNew rather than guess.
//
// # Invariants
//
//   - A session's messages form a tree: a message's parent is an older
//     message of the same session (a composite foreign key), or none for
//     a root. Messages are never updated, so the tree has no cycles.
//   - A session's head is one of its own messages, or NULL before the
//     first. History is the path from a root to the head. Regenerating
//     or editing adds a sibling (SetHead to the parent, then Append); no
//     branch is ever rewritten.
//   - Append stores a batch (an assistant message and its tool results)
//     as one chain below the head, moves the head, and indexes the batch's
//     tool calls and results, all in one transaction. The head is read
//     inside that transaction, so concurrent appends serialize into one
//     chain and never fork or lose messages.
//   - The tool_calls table is derived from the parts and written only by
//     Append, in the same transaction: one row per ToolCall part of an
//     assistant message, whose result columns are set by the ToolResult
//     with the same call id in a later message below it (the nearest
//     assistant message above a result is the one it answers). A result
//     that answers no such call is kept in its message but not indexed.
//     When two branches answer one call, the row shows the later answer.
//     The table exists so that calls can be listed and searched (name,
//     input, errors, durations) without decoding every message.
//   - A session's usage totals are the sums of its usage rows:
//     RecordUsage inserts the row and updates the totals in one
//     transaction. Deleting a session deletes its messages and tool
//     calls but keeps its usage rows (session_id NULL), so AgentUsage
//     still counts what was spent.
//   - A sub-agent's answer owed to its parent (sessions.owed) is
//     delivered at most once: DeliverAnswer queues the message for the
//     parent and clears owed (setting delivered_at) in one transaction,
//     and only while the sub-agent's last run is the one the answer is
//     for (sessions.ended), so a den that dies during it, or a second
//     den delivering at once, delivers it once or not at all.
//
// # Durability and concurrency
//
// The database runs in WAL mode with synchronous=FULL: a commit returns
// only after the WAL has been written and synced, so no write is
// acknowledged before it would survive a crash or a power loss (NORMAL
// would only sync at checkpoints and could lose the last commits to a
// power loss). A process killed mid-write leaves each transaction whole
// or absent.
//
// A Store is safe for concurrent use, and several processes (den run
// and den chat) may open one file. Readers never block and never wait:
// each read that issues several queries does so in one read transaction,
// on one snapshot. Write transactions begin IMMEDIATE, taking the write
// lock up front where the busy timeout (10 s) applies, so contention
// shows up as waiting, not as "database is locked". Inside one process
// writes queue on the Store, in order; between processes SQLite's busy
// handler arbitrates. No write transaction waits on anything but the
// database.
//
// Snapshot copies the file for a backup with VACUUM INTO while others
// read and write it: the copy is one read transaction's view, so it
// holds every transaction committed before the copy began, whole, and
// nothing after.
package store
