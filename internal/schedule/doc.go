// Package schedule is den's scheduler: jobs that send a prompt to an
// agent at times given by a cron expression in a time zone, an
// interval, a one-shot time or a countdown; and the account of every
// time each job was due, run or not.
//
// # Pieces
//
// When reads a when-spec and gives its slots (the times a job is
// scheduled for), with den's rules for the clocks' changes (see
// cronSpec.next). Book is what the faces do with jobs (add, edit,
// remove, pause, resume, run now, stop, list, history). Engine is the
// scheduler den serve runs: it leads per data dir, sleeps until the
// next thing is due, accounts for due slots, runs them through a Runner
// (the daemon's, over the session runtime) and delivers what they
// ended with through a Deliverer (Web Push, speech). The package knows
// the store and nothing of sessions, models or computers.
//
// # Invariants
//
//   - Every slot of a job that is not paused gets exactly one row
//     (per attempt): schedule_runs is unique on (job, slot, attempt),
//     and a slot's row is inserted in the transaction that moves the
//     job's cursor (Accounted) past it, whoever does it: the leader's
//     plan, or a change to the job (Edit, Pause) while no den serve ran,
//     which records the passed slots missed first. Nothing runs twice,
//     even with two schedulers on one store; no slot is silently lost.
//   - A run is claimed before it starts: its row goes from queued to
//     running, with its start and the claiming process, in a write
//     transaction that reads the row again. A den killed during a run
//     leaves the row running; the next leader records it interrupted
//     and retries it per the job's retries.
//   - A stop is a change to the store, like the others: Book.Stop ends
//     the run's row (failed, "stopped by the user", never retried) in
//     its transaction, from any process; the leader that runs the run
//     sees the row ended when the change wakes it, cancels the run's
//     context with ErrStopped (the Runner cancels the session's turn),
//     and adds what the turn cost and answered to the row, changing
//     nothing else of it.
//   - Statuses are honest: ok only when the agent ended its turn and the
//     verification (if any) exited 0; failed with the reason otherwise.
//     A run started late says how late, and why.
//   - Delivery is tracked apart from the run: a delivery row per
//     message (an answer, a failure, missed slots), with the event the
//     faces show stored in the same transaction as the run's end;
//     Web Push and speech are attempted by the leader, retried with
//     backoff, then failed and reported. A den killed during an attempt
//     tries again after the attempt's lease.
//   - The scheduler holds nothing per job in memory: the store gives
//     the next wake (the earliest due slot, retry or delivery), and the
//     engine sleeps until then on the wall clock (a timerfd: a machine
//     that slept through a time wakes den when it resumes), or until a
//     change wakes it.
//
// # Concurrency
//
// A Book is safe for concurrent use, and so are several Books in
// several processes on one store: each change is one write
// transaction. An Engine runs in one goroutine (Run) and starts a
// goroutine per run and per delivery attempt, all of which Run waits
// for before it returns. Wake and Quiet may be called from any
// goroutine.
package schedule
