// Package cgroup bounds what one agent computer may use — memory, processes,
// CPU share — and kills everything in it reliably, with Linux control
// groups. A fork bomb or memory hog inside a sandbox meets the kernel's
// limits and is killed there; the host and den keep running.
//
// Detect reports the host's layout for `den doctor`. New(parent) returns a
// Manager whose groups live under parent (e.g. "den"); Manager.Create makes
// one group per agent computer, such as "agent-default/sess-123", and the
// Group it returns adds processes, reports usage, kills and removes.
//
// # Cgroup v2
//
// Used whenever den may write a v2 hierarchy that offers the memory and pids
// controllers — the usual case on current distributions, where
// /sys/fs/cgroup is cgroup2. As root, groups go under
// /sys/fs/cgroup/<parent>. Controllers are enabled in cgroup.subtree_control
// of every directory above a group; processes belong only in the groups
// Create returns, never in intermediates (the v2 "no internal processes"
// rule). Group.FD gives a directory descriptor for starting a process
// straight inside its group (CLONE_INTO_CGROUP, SysProcAttr.UseCgroupFD), so
// there is no window in which it runs unconfined. Kill writes cgroup.kill,
// then sweeps with cgroup.freeze for kernels without it.
//
// # Unprivileged
//
// As an ordinary user den may only write a subtree delegated to it:
// its own cgroup, when systemd made it writable (a unit with Delegate=yes,
// e.g. `systemd-run --user --scope -p Delegate=yes den ...`). New then moves
// the processes of that cgroup, den among them, into a leaf named
// "den-self" so that controllers can be enabled for the groups beside it.
// Without delegation, and with cgroup v1, New fails with ErrUnavailable,
// wrapped with the reason and the fix; Detect reports the same.
//
// # Cgroup v1
//
// Used as root when v2 lacks the controllers, as on hybrid hosts, where v1
// controllers are mounted under /sys/fs/cgroup/<controller> and a v2
// hierarchy without controllers at /sys/fs/cgroup/unified. A group is a
// directory of the same name in the pids, memory, cpu and freezer
// hierarchies; CPUWeight becomes cpu.shares (100 → 1024), and the memory
// limit also bounds memory plus swap. There is no FD: start a process
// blocked (on a pipe, say), Add it, then let it run. Kill freezes the group
// with the v1 freezer, sends SIGKILL to every process and thaws, until the
// group is empty, so a fork bomb cannot outrun it. On a hybrid host each
// group is also made in the v2 hierarchy, purely for cgroup.kill and
// cgroup.freeze.
//
// # Processes that outlive their parents
//
// A process that exits stays charged to pids.max until its parent, or
// init, reaps it. Sandboxes whose init reaps orphans (bubblewrap's does)
// keep the count honest.
//
// # Concurrency
//
// A Manager and its Groups are safe for concurrent use. Creating and
// removing directories is serialised per Manager; Kill, Procs, Stats and
// Add are not, and Kill may take a few seconds against processes that will
// not die. Remove is idempotent. Den owns its parent cgroup: two Managers
// (or two dens) must not share a parent, and RemoveAll, meant for startup,
// kills every group under it.
package cgroup
