package cmdscan

import (
	"fmt"
	"strings"
)

// Mount is a user folder bound into the computer.
type Mount struct {
	Guest    string // absolute path inside the computer
	ReadOnly bool
}

// Flag is one property of a command. A Class holds a set of them.
type Flag uint16

// The flags. Read-only is not a flag: it is the absence of every flag
// that changes something (see [Class.ReadOnly]).
const (
	Writes         Flag = 1 << iota // creates or changes files (or other local state)
	Destructive                     // removes or overwrites data in a way that is hard to undo
	Network                         // talks to other machines
	PackageInstall                  // installs or removes software packages
	TouchesMount                    // names a path under a user mount (see Class.Mounts)
	HostCommand                     // calls a den host command (den-*, xdg-open and its aliases)
	RunsCode                        // runs code den cannot see into: scripts, interpreters, make, unknown programs
	Unknown                         // den could not analyse the script (parse error): treat as writes and network
)

var flagNames = []struct {
	f    Flag
	name string
}{
	{Writes, "writes"},
	{Destructive, "destructive"},
	{Network, "network"},
	{PackageInstall, "package_install"},
	{TouchesMount, "touches_mount"},
	{HostCommand, "host_command"},
	{RunsCode, "runs_code"},
	{Unknown, "unknown"},
}

func (f Flag) String() string {
	var names []string
	for _, n := range flagNames {
		if f&n.f != 0 {
			names = append(names, n.name)
		}
	}
	if len(names) == 0 {
		return "read_only"
	}
	return strings.Join(names, "|")
}

// Access is what a command does to a path.
type Access uint8

// Accesses, in increasing order of risk.
const (
	Read Access = iota
	Write
	Destroy
)

func (a Access) String() string {
	switch a {
	case Write:
		return "write"
	case Destroy:
		return "destroy"
	}
	return "read"
}

// MountUse is one path under (or possibly under) a user mount.
type MountUse struct {
	Mount  Mount
	Path   string // the resolved guest path; "…" marks a part known only at run time
	Access Access
	Maybe  bool // the path is computed at run time and may or may not fall under the mount
	Pos    Pos
}

// Finding is one reason for a flag.
type Finding struct {
	Flag   Flag
	Reason string
	Pos    Pos
}

// Class is what a script may do, with the reasons.
type Class struct {
	Flags        Flag
	Findings     []Finding  // in source order, at most one per flag and reason
	Mounts       []MountUse // paths under user mounts, at most one per mount, path and access
	HostCommands []string   // host commands called, e.g. "den-notify", once each
}

// Has reports whether c has every flag in f.
func (c Class) Has(f Flag) bool { return c.Flags&f == f }

// ReadOnly reports whether nothing in the script writes, destroys,
// installs, runs opaque code or defeated the analysis. A read-only script
// may still use the network, read user mounts or call host commands
// (which den gates on their own).
func (c Class) ReadOnly() bool {
	return c.Flags&(Writes|Destructive|PackageInstall|RunsCode|Unknown) == 0
}

// Labels returns the flags as short snake_case labels for tool cards,
// "read_only" first when it applies.
func (c Class) Labels() []string {
	var out []string
	if c.ReadOnly() {
		out = append(out, "read_only")
	}
	for _, n := range flagNames {
		if c.Flags&n.f != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// Reasons returns one line per finding, e.g.
// "1:1 destructive: rm -rf: forced or recursive removal".
func (c Class) Reasons() []string {
	out := make([]string, 0, len(c.Findings)+len(c.Mounts))
	for _, f := range c.Findings {
		out = append(out, fmt.Sprintf("%s %s: %s", f.Pos, f.Flag, f.Reason))
	}
	for _, m := range c.Mounts {
		mode := "read-write"
		if m.Mount.ReadOnly {
			mode = "read-only"
		}
		maybe := ""
		if m.Maybe {
			maybe = "may "
		}
		out = append(out, fmt.Sprintf("%s touches_mount: %s%s %s in %s mount %s", m.Pos, maybe, m.Access, m.Path, mode, m.Mount.Guest))
	}
	return out
}

// DestroysWritableMount reports whether the script may destroy data in a
// read-write user mount: a destructive command aimed at a path under one
// (or at a path den cannot resolve), or a script den could not analyse
// while read-write mounts exist. This is the question the restricted
// trust level asks the user about.
func (c Class) DestroysWritableMount() bool {
	for _, m := range c.Mounts {
		if m.Mount.ReadOnly {
			continue
		}
		if m.Access == Destroy || c.Has(Unknown) {
			return true
		}
	}
	return false
}

// WritableMounts returns the guest paths of the read-write mounts the
// script writes to or destroys in, once each, for a prompt such as
// "rm -rf will delete files in /mnt/photos".
func (c Class) WritableMounts() []string {
	var out []string
	for _, m := range c.Mounts {
		if m.Mount.ReadOnly || m.Access == Read {
			continue
		}
		dup := false
		for _, g := range out {
			dup = dup || g == m.Mount.Guest
		}
		if !dup {
			out = append(out, m.Mount.Guest)
		}
	}
	return out
}
