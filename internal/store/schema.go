package store

import (
	"context"
	"database/sql"
	"fmt"
)

// migrations are the schema steps, in order: migrations[i] takes a
// database from user_version i to i+1. Steps are only ever appended; a
// released step is never edited.
var migrations = []string{
	// 1: agents, sessions, messages (a version tree), the tool-call
	// index, usage records.
	`
CREATE TABLE agents (
	name       TEXT PRIMARY KEY CHECK (name <> ''),
	created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE sessions (
	id                 TEXT PRIMARY KEY,
	agent              TEXT NOT NULL REFERENCES agents(name) ON DELETE CASCADE,
	title              TEXT NOT NULL DEFAULT '',
	model              TEXT NOT NULL DEFAULT '',
	created_at         INTEGER NOT NULL,
	updated_at         INTEGER NOT NULL,
	head               TEXT,
	requests           INTEGER NOT NULL DEFAULT 0,
	input_tokens       INTEGER NOT NULL DEFAULT 0,
	output_tokens      INTEGER NOT NULL DEFAULT 0,
	cache_read_tokens  INTEGER NOT NULL DEFAULT 0,
	cache_write_tokens INTEGER NOT NULL DEFAULT 0,
	cost_micro_usd     INTEGER NOT NULL DEFAULT 0,
	FOREIGN KEY (id, head) REFERENCES messages(session_id, id)
) STRICT;
CREATE INDEX sessions_by_agent ON sessions(agent, updated_at DESC, id DESC);
CREATE INDEX sessions_by_updated ON sessions(updated_at DESC, id DESC);

CREATE TABLE messages (
	id         TEXT PRIMARY KEY,
	session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	parent_id  TEXT,
	role       TEXT NOT NULL CHECK (role IN ('user', 'assistant')),
	parts      TEXT NOT NULL CHECK (json_valid(parts)),
	model      TEXT,
	created_at INTEGER NOT NULL,
	UNIQUE (session_id, id),
	FOREIGN KEY (session_id, parent_id) REFERENCES messages(session_id, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX messages_by_parent ON messages(session_id, parent_id);

CREATE TABLE tool_calls (
	message_id        TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
	position          INTEGER NOT NULL,
	session_id        TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	call_id           TEXT NOT NULL,
	name              TEXT NOT NULL,
	input             TEXT NOT NULL,
	created_at        INTEGER NOT NULL,
	result_message_id TEXT REFERENCES messages(id) ON DELETE SET NULL,
	result            TEXT,
	result_images     INTEGER,
	is_error          INTEGER,
	duration_ms       INTEGER,
	PRIMARY KEY (message_id, position)
) STRICT;
CREATE INDEX tool_calls_by_session ON tool_calls(session_id, created_at);
CREATE INDEX tool_calls_by_result ON tool_calls(result_message_id);

CREATE TABLE usage (
	id                 INTEGER PRIMARY KEY,
	agent              TEXT NOT NULL REFERENCES agents(name) ON DELETE CASCADE,
	session_id         TEXT REFERENCES sessions(id) ON DELETE SET NULL,
	model              TEXT NOT NULL,
	purpose            TEXT NOT NULL CHECK (purpose <> ''),
	input_tokens       INTEGER NOT NULL CHECK (input_tokens >= 0),
	output_tokens      INTEGER NOT NULL CHECK (output_tokens >= 0),
	cache_read_tokens  INTEGER NOT NULL CHECK (cache_read_tokens >= 0),
	cache_write_tokens INTEGER NOT NULL CHECK (cache_write_tokens >= 0),
	cost_micro_usd     INTEGER NOT NULL CHECK (cost_micro_usd >= 0),
	latency_ms         INTEGER NOT NULL CHECK (latency_ms >= 0),
	created_at         INTEGER NOT NULL
) STRICT;
CREATE INDEX usage_by_agent ON usage(agent, created_at);
CREATE INDEX usage_by_session ON usage(session_id);
`,
	// 2: summaries made by compaction. A summary stands in, in requests,
	// for the messages up to its anchor; stored messages stay untouched.
	`
CREATE TABLE summaries (
	id         INTEGER PRIMARY KEY,
	session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	up_to      TEXT NOT NULL,
	text       TEXT NOT NULL,
	model      TEXT NOT NULL DEFAULT '',
	compacted  INTEGER NOT NULL,
	created_at INTEGER NOT NULL,
	FOREIGN KEY (session_id, up_to) REFERENCES messages(session_id, id) ON DELETE CASCADE
) STRICT;
CREATE INDEX summaries_by_session ON summaries(session_id, id);
`,
	// 3: the permission gate's state. approvals are asks waiting for, or
	// given, an answer (another process answers by updating the row);
	// rules are per-agent answers given with scope "always"; audit is one
	// row per host-command call. Agents and sessions are plain text, not
	// references: the audit outlives the sessions it mentions.
	`
CREATE TABLE approvals (
	id         TEXT PRIMARY KEY,
	agent      TEXT NOT NULL CHECK (agent <> ''),
	session_id TEXT NOT NULL DEFAULT '',
	command    TEXT NOT NULL CHECK (command <> ''),
	action     TEXT NOT NULL DEFAULT '',
	args       TEXT NOT NULL CHECK (json_valid(args)),
	status     TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'denied', 'expired')),
	scope      TEXT NOT NULL DEFAULT '' CHECK (scope IN ('', 'once', 'session', 'always')),
	decided_by TEXT NOT NULL DEFAULT '',
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	decided_at INTEGER
) STRICT;
CREATE INDEX approvals_by_status ON approvals(status, agent, created_at);
CREATE INDEX approvals_by_session ON approvals(session_id, command, action, scope);

CREATE TABLE rules (
	agent      TEXT NOT NULL CHECK (agent <> ''),
	command    TEXT NOT NULL CHECK (command <> ''),
	action     TEXT NOT NULL DEFAULT '',
	decision   TEXT NOT NULL CHECK (decision IN ('allow', 'ask', 'deny')),
	created_at INTEGER NOT NULL,
	PRIMARY KEY (agent, command, action)
) STRICT;

CREATE TABLE audit (
	id          INTEGER PRIMARY KEY,
	created_at  INTEGER NOT NULL,
	agent       TEXT NOT NULL,
	session_id  TEXT NOT NULL DEFAULT '',
	command     TEXT NOT NULL,
	action      TEXT NOT NULL DEFAULT '',
	args        TEXT NOT NULL CHECK (json_valid(args)),
	decision    TEXT NOT NULL CHECK (decision IN ('allow', 'deny')),
	decided_by  TEXT NOT NULL,
	approval_id TEXT NOT NULL DEFAULT '',
	exit_code   INTEGER NOT NULL,
	waited_us   INTEGER NOT NULL CHECK (waited_us >= 0),
	duration_us INTEGER NOT NULL CHECK (duration_us >= 0)
) STRICT;
CREATE INDEX audit_by_agent ON audit(agent, id);
CREATE INDEX audit_by_session ON audit(session_id, id);
`,
	// 4: answers bound to what was approved. An approval records the
	// call's subject (the argument its answer covers: the key set, the
	// model run, the session sent to) and the exact change a person was
	// shown; session answers and rules match on the subject too. Rules
	// made before had no subject and stay as rules for calls without one.
	`
ALTER TABLE approvals ADD COLUMN subject TEXT NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN detail TEXT NOT NULL DEFAULT '';
DROP INDEX approvals_by_session;
CREATE INDEX approvals_by_session ON approvals(session_id, command, action, subject, scope);

CREATE TABLE rules_v4 (
	agent      TEXT NOT NULL CHECK (agent <> ''),
	command    TEXT NOT NULL CHECK (command <> ''),
	action     TEXT NOT NULL DEFAULT '',
	subject    TEXT NOT NULL DEFAULT '',
	decision   TEXT NOT NULL CHECK (decision IN ('allow', 'ask', 'deny')),
	created_at INTEGER NOT NULL,
	PRIMARY KEY (agent, command, action, subject)
) STRICT;
INSERT INTO rules_v4 (agent, command, action, subject, decision, created_at)
	SELECT agent, command, action, '', decision, created_at FROM rules;
DROP TABLE rules;
ALTER TABLE rules_v4 RENAME TO rules;
`,
	// 5: the record is the truth. Tool calls are written ahead: when a
	// call started, the tail of its output and the last time den saw it
	// running (once a second), its result as
	// soon as it is ready (result_parts, until the turn's results
	// message holds it) and its exit code; a crash leaves what was known.
	// A usage row names the assistant message its request produced.
	// queue holds messages for a session, delivered at its next turn.
	`
ALTER TABLE tool_calls ADD COLUMN started_at INTEGER;
ALTER TABLE tool_calls ADD COLUMN exit_code INTEGER;
ALTER TABLE tool_calls ADD COLUMN output_tail TEXT;
ALTER TABLE tool_calls ADD COLUMN seen_at INTEGER;
ALTER TABLE tool_calls ADD COLUMN result_parts TEXT CHECK (result_parts IS NULL OR json_valid(result_parts));
ALTER TABLE usage ADD COLUMN message_id TEXT REFERENCES messages(id) ON DELETE SET NULL;
CREATE INDEX usage_by_message ON usage(message_id);

CREATE TABLE queue (
	id           INTEGER PRIMARY KEY,
	session_id   TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	from_session TEXT NOT NULL DEFAULT '',
	text         TEXT NOT NULL,
	created_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX queue_by_session ON queue(session_id, id);
`,
	// 6: sessions that live in a daemon. A queued message has the id it
	// will take in the history (so a face knows it at once) and may have
	// parts (attachments) beyond its text; delivered, it is a message of
	// its own. events is every event of every session, in the order den
	// published them: faces that reconnect replay what they missed. A
	// session's status is the last one published, for faces that list
	// sessions no process is running.
	`
ALTER TABLE queue ADD COLUMN message_id TEXT;
ALTER TABLE queue ADD COLUMN parts TEXT CHECK (parts IS NULL OR json_valid(parts));
ALTER TABLE sessions ADD COLUMN status TEXT NOT NULL DEFAULT 'idle';

CREATE TABLE events (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	session_id TEXT REFERENCES sessions(id) ON DELETE CASCADE,
	type       TEXT NOT NULL,
	time       INTEGER NOT NULL,
	data       TEXT NOT NULL CHECK (json_valid(data))
) STRICT;
CREATE INDEX events_by_session ON events(session_id, id);
CREATE INDEX sessions_by_status ON sessions(status) WHERE status <> 'idle';
`,
	// 7: finding sessions. message_text holds the text of every message
	// (its text parts, joined) for full-text search, kept by triggers so
	// that every den process's writes are indexed; its rowid is the
	// message's.
	`
CREATE VIRTUAL TABLE message_text USING fts5(text, session_id UNINDEXED, tokenize = 'unicode61 remove_diacritics 2');
CREATE TRIGGER message_text_insert AFTER INSERT ON messages BEGIN
	INSERT INTO message_text (rowid, text, session_id)
	SELECT new.rowid, group_concat(json_extract(p.value, '$.text'), char(10)), new.session_id
	FROM json_each(new.parts) p WHERE json_extract(p.value, '$.type') = 'text';
END;
CREATE TRIGGER message_text_delete AFTER DELETE ON messages BEGIN
	DELETE FROM message_text WHERE rowid = old.rowid;
END;
INSERT INTO message_text (rowid, text, session_id)
	SELECT m.rowid, group_concat(json_extract(p.value, '$.text'), char(10)), m.session_id
	FROM messages m, json_each(m.parts) p WHERE json_extract(p.value, '$.type') = 'text' GROUP BY m.rowid;
`,
	// 8: browsers subscribed to Web Push. A subscription is its push
	// service's endpoint (the key), the browser's P-256 key and auth
	// secret (raw bytes), the user agent and page origin it subscribed
	// from, and how its last messages went: the last one taken, and how
	// many failed since.
	`
CREATE TABLE push_subscriptions (
	endpoint     TEXT PRIMARY KEY CHECK (endpoint <> ''),
	p256dh       BLOB NOT NULL CHECK (length(p256dh) = 65),
	auth         BLOB NOT NULL CHECK (length(auth) = 16),
	user_agent   TEXT NOT NULL DEFAULT '',
	origin       TEXT NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL,
	last_success INTEGER,
	failures     INTEGER NOT NULL DEFAULT 0 CHECK (failures >= 0)
) STRICT;
`,
	// 9: memory. The agent's memory is Markdown files in its folder;
	// memory_text indexes their entries for search (an entry: a dated
	// part of a daily log, or a block of GLOBAL.md or SOUL.md, with the
	// session and message that wrote it), memory_files what each file
	// was when indexed, so that only changed files are read again. A
	// session's memory is on or off (NULL: its agent's default).
	`
CREATE TABLE memory_files (
	agent TEXT NOT NULL,
	name  TEXT NOT NULL,
	size  INTEGER NOT NULL,
	mtime INTEGER NOT NULL,
	PRIMARY KEY (agent, name)
) STRICT;
CREATE VIRTUAL TABLE memory_text USING fts5(body, agent UNINDEXED, file UNINDEXED, day UNINDEXED, at UNINDEXED,
	session UNINDEXED, message UNINDEXED, seq UNINDEXED, tokenize = 'unicode61 remove_diacritics 2');
ALTER TABLE sessions ADD COLUMN memory INTEGER CHECK (memory IS NULL OR memory IN (0, 1));
`,
	// 10: how each request was made up: its input tokens shared among
	// its parts (system prompt sections, tools, history, attachments),
	// a JSON object of part → tokens.
	`
ALTER TABLE usage ADD COLUMN breakdown TEXT CHECK (breakdown IS NULL OR json_valid(breakdown));
`,
	// 11: sub-agents and inboxes. A sub-agent is a session with a
	// parent (the session that started it; it goes with its parent) and
	// the profile it runs with. An agent's inbox is the session that
	// messages from other agents join; a queued message says which
	// agent sent it.
	`
ALTER TABLE sessions ADD COLUMN parent TEXT;
ALTER TABLE sessions ADD COLUMN profile TEXT NOT NULL DEFAULT '';
CREATE INDEX sessions_by_parent ON sessions(parent, created_at) WHERE parent IS NOT NULL;
ALTER TABLE agents ADD COLUMN inbox TEXT;
ALTER TABLE queue ADD COLUMN from_agent TEXT NOT NULL DEFAULT '';
`,
	// 12: schedules (see schedules.go): the jobs, a row per run or
	// accounted slot, unique on (job, slot, attempt), and the
	// deliveries of what runs ended with.
	`
CREATE TABLE schedules (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	agent       TEXT NOT NULL CHECK (agent <> ''),
	name        TEXT NOT NULL DEFAULT '',
	kind        TEXT NOT NULL CHECK (kind IN ('cron', 'every', 'at')),
	spec        TEXT NOT NULL CHECK (spec <> ''),
	tz          TEXT NOT NULL DEFAULT '',
	anchor      INTEGER NOT NULL DEFAULT 0,
	prompt      TEXT NOT NULL CHECK (prompt <> ''),
	session     TEXT NOT NULL DEFAULT '',
	session_id  TEXT NOT NULL DEFAULT '',
	model       TEXT NOT NULL DEFAULT '',
	budget      TEXT NOT NULL DEFAULT '',
	max_turns   INTEGER NOT NULL DEFAULT 0 CHECK (max_turns >= 0),
	verify      TEXT NOT NULL DEFAULT '',
	deliver     TEXT NOT NULL CHECK (deliver IN ('notify', 'none')),
	speak       INTEGER NOT NULL DEFAULT 0 CHECK (speak IN (0, 1)),
	approvals   TEXT NOT NULL CHECK (approvals IN ('deny', 'wait')),
	misfire     TEXT NOT NULL CHECK (misfire IN ('run-once', 'run-all', 'skip')),
	grace       INTEGER NOT NULL CHECK (grace >= 0),
	jitter      INTEGER NOT NULL CHECK (jitter >= 0),
	retries     INTEGER NOT NULL CHECK (retries >= 0),
	paused      INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
	created_by  TEXT NOT NULL DEFAULT '',
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL,
	accounted   INTEGER NOT NULL,
	next_due    INTEGER
) STRICT;
CREATE INDEX schedules_by_agent ON schedules(agent, id);
CREATE INDEX schedules_due ON schedules(next_due) WHERE paused = 0 AND next_due IS NOT NULL;

CREATE TABLE schedule_deliveries (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	schedule_id  INTEGER NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
	kind         TEXT NOT NULL CHECK (kind IN ('result', 'failure', 'missed')),
	title        TEXT NOT NULL,
	body         TEXT NOT NULL,
	session_id   TEXT NOT NULL DEFAULT '',
	speak        INTEGER NOT NULL DEFAULT 0 CHECK (speak IN (0, 1)),
	status       TEXT NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
	attempts     INTEGER NOT NULL DEFAULT 0,
	next_attempt INTEGER,
	detail       TEXT NOT NULL DEFAULT '',
	error        TEXT NOT NULL DEFAULT '',
	reached      TEXT NOT NULL DEFAULT '',
	created_at   INTEGER NOT NULL,
	delivered_at INTEGER
) STRICT;
CREATE INDEX schedule_deliveries_pending ON schedule_deliveries(next_attempt) WHERE status = 'pending';

CREATE TABLE schedule_runs (
	id             INTEGER PRIMARY KEY AUTOINCREMENT,
	schedule_id    INTEGER NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
	slot           INTEGER NOT NULL,
	attempt        INTEGER NOT NULL CHECK (attempt >= 1),
	due            INTEGER NOT NULL,
	cause          TEXT NOT NULL CHECK (cause IN ('time', 'catch-up', 'retry', 'manual')),
	status         TEXT NOT NULL CHECK (status IN ('queued', 'running', 'ok', 'failed', 'missed', 'skipped', 'interrupted')),
	reason         TEXT NOT NULL DEFAULT '',
	started        INTEGER,
	ended          INTEGER,
	session_id     TEXT NOT NULL DEFAULT '',
	cost_micro_usd INTEGER NOT NULL DEFAULT 0,
	answer         TEXT NOT NULL DEFAULT '',
	retry_at       INTEGER,
	delivery_id    INTEGER REFERENCES schedule_deliveries(id) ON DELETE SET NULL,
	owner          TEXT NOT NULL DEFAULT '',
	UNIQUE (schedule_id, slot, attempt)
) STRICT;
CREATE INDEX schedule_runs_live ON schedule_runs(status, schedule_id) WHERE status IN ('queued', 'running');
CREATE INDEX schedule_runs_retry ON schedule_runs(retry_at) WHERE retry_at IS NOT NULL;
`,
	// 13: what a sub-agent owes its parent, kept so that it outlives
	// the den process that started it. report: its answers join its
	// parent's conversation (den-agent spawn); owed: the answer of its
	// current or last run is still to be delivered; ended and end_error:
	// how its last run ended ('' before one, 'running' from its start,
	// so a den that died during it leaves 'running'); delivered_at: when
	// the answer of its last run was queued for the parent, in the
	// transaction that cleared owed.
	`
ALTER TABLE sessions ADD COLUMN report INTEGER NOT NULL DEFAULT 0 CHECK (report IN (0, 1));
ALTER TABLE sessions ADD COLUMN owed INTEGER NOT NULL DEFAULT 0 CHECK (owed IN (0, 1));
ALTER TABLE sessions ADD COLUMN ended TEXT NOT NULL DEFAULT ''
	CHECK (ended = '' OR ended = 'running' OR ended = 'done' OR ended = 'canceled' OR ended = 'budget'
	       OR ended = 'error' OR ended = 'interrupted');
ALTER TABLE sessions ADD COLUMN end_error TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN delivered_at INTEGER;
CREATE INDEX sessions_owed ON sessions(parent) WHERE owed = 1;
`,
	// 14: schedule_runs again, its causes and statuses checked with
	// comparisons: SQLite checks an IN list of more than two values in
	// a CHECK by building a table of the list for each row it writes,
	// two fifths of the cost of the rows of a catch-up. The same
	// columns, rows, ids (and next id) and indexes.
	`
CREATE TABLE schedule_runs_14 (
	id             INTEGER PRIMARY KEY AUTOINCREMENT,
	schedule_id    INTEGER NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
	slot           INTEGER NOT NULL,
	attempt        INTEGER NOT NULL CHECK (attempt >= 1),
	due            INTEGER NOT NULL,
	cause          TEXT NOT NULL CHECK (cause = 'time' OR cause = 'catch-up' OR cause = 'retry' OR cause = 'manual'),
	status         TEXT NOT NULL CHECK (status = 'queued' OR status = 'running' OR status = 'ok' OR status = 'failed'
	                                    OR status = 'missed' OR status = 'skipped' OR status = 'interrupted'),
	reason         TEXT NOT NULL DEFAULT '',
	started        INTEGER,
	ended          INTEGER,
	session_id     TEXT NOT NULL DEFAULT '',
	cost_micro_usd INTEGER NOT NULL DEFAULT 0,
	answer         TEXT NOT NULL DEFAULT '',
	retry_at       INTEGER,
	delivery_id    INTEGER REFERENCES schedule_deliveries(id) ON DELETE SET NULL,
	owner          TEXT NOT NULL DEFAULT '',
	UNIQUE (schedule_id, slot, attempt)
) STRICT;
INSERT INTO schedule_runs_14 (id, schedule_id, slot, attempt, due, cause, status, reason, started, ended, session_id,
	cost_micro_usd, answer, retry_at, delivery_id, owner)
	SELECT id, schedule_id, slot, attempt, due, cause, status, reason, started, ended, session_id, cost_micro_usd, answer,
	retry_at, delivery_id, owner FROM schedule_runs;
DELETE FROM sqlite_sequence WHERE name = 'schedule_runs_14';
INSERT INTO sqlite_sequence (name, seq) SELECT 'schedule_runs_14', seq FROM sqlite_sequence WHERE name = 'schedule_runs';
DROP TABLE schedule_runs;
ALTER TABLE schedule_runs_14 RENAME TO schedule_runs;
CREATE INDEX schedule_runs_live ON schedule_runs(status, schedule_id) WHERE status IN ('queued', 'running');
CREATE INDEX schedule_runs_retry ON schedule_runs(retry_at) WHERE retry_at IS NOT NULL;
`,
	// 15: the skills each session has used, so that the hosts the
	// config allows a skill stay open to the session's computer after
	// den restarts.
	`
CREATE TABLE session_skills (
	session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	name       TEXT NOT NULL,
	since      INTEGER NOT NULL,
	PRIMARY KEY (session_id, name)
) STRICT, WITHOUT ROWID;
`,
}

// migrate brings db to SchemaVersion, one step per transaction. Each
// step rereads user_version under the write lock, so two processes
// opening a fresh file at once apply each step once.
func migrate(ctx context.Context, db *sql.DB) error {
	for {
		done, err := migrateStep(ctx, db)
		if err != nil || done {
			return err
		}
	}
}

// migrateStep applies the next migration, if any, and reports whether
// the schema is now current.
func migrateStep(ctx context.Context, db *sql.DB) (done bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return false, fmt.Errorf("migrate: read user_version: %w", err)
	}
	switch {
	case v > len(migrations):
		return false, fmt.Errorf("%w (user_version %d, this den knows up to %d): upgrade den", ErrSchemaTooNew, v, len(migrations))
	case v == len(migrations):
		return true, nil
	}
	if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
		return false, fmt.Errorf("migrate to version %d: %w", v+1, err)
	}
	// PRAGMA takes no bound parameters; v+1 is an int we computed.
	if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", v+1)); err != nil {
		return false, fmt.Errorf("migrate to version %d: %w", v+1, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migrate to version %d: %w", v+1, err)
	}
	return v+1 == len(migrations), nil
}
