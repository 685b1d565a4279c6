// Package cmdscan analyses the shell commands the model asks to run,
// with a real shell parser (mvdan.cc/sh) rather than substring matching.
// It answers two questions before a shell_execute command runs.
//
// What may the command do? [Classify] walks the whole syntax tree —
// pipelines, && and ||, subshells, $( ), loops, functions, the strings
// given to sh -c, bash -c, eval, su -c and watch (parsed recursively),
// xargs and find -exec commands, and wrappers such as sudo, env, nice,
// timeout and nohup — and returns a [Class], a set of flags with reasons:
//
//   - read_only (no flag below except network, touches_mount, host_command):
//     nothing writes, destroys, installs or runs opaque code.
//   - writes: creates or changes files or local state (redirections, cp, mv,
//     touch, mkdir, tee, sed -i, dd of=, git commit, kill, ...).
//   - destructive: hard to undo: rm -r or -f of anything, rm outside /tmp,
//     find -delete, dd or a redirection to a device, mkfs, truncate, shred,
//     chmod/chown -R on a broad path, git reset --hard, git clean,
//     git checkout -- ., git push --force, rsync --delete. A plain "> file"
//     and mv are writes, not destructive: whether the target exists is
//     unknown before the command runs, and asking for every generated file
//     would train users to approve blindly.
//   - network: curl, wget, git clone/pull/fetch/push, package installs,
//     ssh, scp, remote rsync, nc, python -m http.server, ...
//   - package_install: apk add/del, apt(-get) install/remove, pip install,
//     npm install, cargo install, gem install, go install, uv, brew, ...
//   - touches_mount: a word or redirection target resolves under a user
//     mount; [Class.Mounts] says which mount, whether it is read-write, the
//     path, the access (read, write, destroy) and whether the path is only
//     possibly under it (computed at run time). Relative paths resolve
//     against the cwd given to Classify, following literal cd commands;
//     ".." is resolved, so an escape out of a mount does not count.
//   - host_command: calls den-* or xdg-open and its aliases; these go
//     through den's own permission gate, so the flag is informational.
//   - runs_code: runs something whose effects den cannot see: interpreters,
//     scripts, make, npm run, unknown programs, computed command names.
//   - unknown: the script (or a nested sh -c string) does not parse; the
//     class then also carries writes and network, and every mount as
//     possibly written.
//
// Does the command need bash? [Bashisms] parses with the bash grammar and
// reports bash-only constructs, each with the shells that lack it ("ash"
// is Alpine's BusyBox ash with its bash compatibility options, "dash" is
// Debian's /bin/sh) and a portable fix. Quoted strings, quoted
// here-documents, comments and bash -c strings are not shell code for
// /bin/sh and are not scanned; sh -c strings are. [NeedsBash] filters the
// constructs for one shell.
//
// # Wiring
//
// The shell_execute tool calls Classify with the session's cwd and the
// agent's mounts, attaches Labels and Reasons to the tool call for the
// faces' tool cards, and asks the permission gate. Under the restricted
// trust level the gate asks the user before running a command for which
// [Class.DestroysWritableMount] is true (naming [Class.WritableMounts]);
// trusted and full run it.
//
// Before running a command in a computer whose /bin/sh is not bash, the
// tool calls NeedsBash(cmd, "ash") (or "dash"). When it reports
// constructs, the command runs under bash if bash is installed; otherwise
// the tool returns a failure result naming the first construct, its
// position and fix, so the model can rewrite the command.
//
// Both functions are pure, safe for concurrent use, and never panic on
// any input (fuzzed). They do not touch the filesystem: whether a file
// exists is not known to them.
package cmdscan
