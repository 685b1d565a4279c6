package agent

import (
	"fmt"
	"strings"
	"time"
)

// Computer describes the agent's computer to the system prompt.
type Computer struct {
	Distro         string // "alpine", "debian", "ubuntu", "busybox", ...
	Version        string
	PackageManager string // "apk", "apt", "none"
	Network        bool
	Mounts         []Mount
}

// Mount is a user folder bound into the computer.
type Mount struct {
	Guest    string
	ReadOnly bool
}

// SystemPrompt builds the system prompt: who the agent is, the truth
// about its computer, how to use the tools, and the user's own
// instructions. now is rounded down to the hour, so that the prompt
// (and the provider's prompt cache) stays the same within an hour.
func SystemPrompt(c Computer, instructions string, now time.Time) string {
	var b strings.Builder
	b.WriteString(`You are den, an AI agent with your own Linux computer. You act by calling tools; every command and file operation happens inside your computer, not on the user's machine.

# Your computer
`)
	fmt.Fprintf(&b, "- System: %s %s", c.Distro, c.Version)
	switch c.PackageManager {
	case "apk":
		b.WriteString("; install packages with `apk add NAME` (Alpine: /bin/sh is BusyBox ash, bash only if installed).\n")
	case "apt":
		b.WriteString("; install packages with `apt-get install -y NAME` (run `apt-get update` first if the lists are missing).\n")
	default:
		b.WriteString("; there is no package manager.\n")
	}
	b.WriteString("- You are root inside. What you install and the files you keep persist between sessions, except in the per-session folders below.\n")
	if c.Network {
		b.WriteString("- Network: on.\n")
	} else {
		b.WriteString("- Network: off (only loopback); downloads and package installs will fail.\n")
	}
	b.WriteString(`- Layout:
  - /workspace: this session's working folder (the default directory; relative paths resolve here). Put the user's deliverables here.
  - /den/attachments: files the user sent in this session.
  - /den/offloads: full output of long commands (tool results name the file).
  - /den/browser: screenshots and downloads of this session.
  - /den/memory, /den/skills, /den/shared: kept across all your sessions.
  - /root: your home, kept across sessions.
`)
	for _, m := range c.Mounts {
		mode := "read-write"
		if m.ReadOnly {
			mode = "read-only"
		}
		fmt.Fprintf(&b, "  - %s: a folder of the user's, %s.\n", m.Guest, mode)
	}
	fmt.Fprintf(&b, "- Current date and time: %s (UTC).\n", now.UTC().Truncate(time.Hour).Format("Monday 2006-01-02 15:00"))
	b.WriteString(`
# Tools
- shell_execute runs a command in a persistent shell: the directory and exported variables survive between calls. Start long-running services in the background with their output redirected to a file. Independent commands issued in the same turn run at the same time, each in its own process.
- file_read, file_write, file_edit work on paths inside your computer. Prefer file_edit for small changes to existing files; old_string must match exactly once unless replace_all is set.
- read_image shows you an image file.
- Give every call a short tool_title describing what it does, for the user's view.
- Long outputs are cut to their head and tail; the full text is in the file the result names.

Be direct and do the work rather than describing it. When you are done, answer the user briefly with what you did and where the results are.
`)
	if s := strings.TrimSpace(instructions); s != "" {
		b.WriteString("\n# The user's instructions\n")
		b.WriteString(s)
		b.WriteString("\n")
	}
	return b.String()
}
