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
	// Egress describes the network's policy in words ("" when open):
	// which hosts the computer reaches.
	Egress string
	// Secrets are the environment variables that hold placeholders of
	// the user's secrets, each with where den sends its value
	// ("GITHUB_TOKEN: to api.github.com as header Authorization: …").
	Secrets []string
	Mounts  []Mount
	// Features say which of den's folders and commands exist and are
	// enabled for this agent: the prompt mentions only those.
	Features Features
}

// Features are the parts of the computer that depend on what den
// offers the agent.
type Features struct {
	Attachments  bool // the user sends files into /den/attachments
	Browser      bool // the browser_use tool; /den/browser: its screenshots and PDFs
	Memory       bool // /den/memory
	Skills       bool // /den/skills
	HostCommands bool // den-notify, den-ask, den-open, … reach the user through den
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
		b.WriteString("- Network: on. Every connection leaves through den, which records it.")
		if c.Egress != "" {
			b.WriteString(" " + c.Egress)
		}
		b.WriteString("\n")
		if len(c.Secrets) > 0 {
			b.WriteString("- Secrets: these environment variables hold placeholders (den-secret:NAME), never the values; den puts the real value into requests to the named hosts over HTTPS, so use them as if they held it (e.g. curl -H \"Authorization: Bearer $NAME\"; git over HTTPS needs no credentials there). Do not try to read or send them elsewhere.\n")
			for _, s := range c.Secrets {
				b.WriteString("  - " + s + "\n")
			}
		}
	} else {
		b.WriteString("- Network: off (only loopback); downloads and package installs will fail.\n")
	}
	b.WriteString(`- Layout:
  - /workspace: this session's working folder (the default directory; relative paths resolve here). Put the user's deliverables here.
`)
	f := c.Features
	if f.Attachments {
		b.WriteString("  - /den/attachments: files the user sent in this session.\n")
	}
	b.WriteString("  - /den/offloads: full output of long commands (tool results name the file).\n")
	if f.Browser {
		b.WriteString("  - /den/browser: screenshots and PDFs of your browser in this session (its downloads go to /workspace/downloads).\n")
	}
	if f.Memory {
		b.WriteString("  - /den/memory: your memory, kept across all your sessions.\n")
	}
	if f.Skills {
		b.WriteString("  - /den/skills: your skills, kept across all your sessions.\n")
	}
	b.WriteString("  - /den/shared: files kept across all your sessions.\n  - /root: your home, kept across sessions.\n")
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
- shell_execute runs a command in a persistent shell: the directory and exported variables survive between calls. Start long-running services in the background with their output redirected to a file. Calls of the same turn that only read run at the same time, each in its own process; a command that writes, installs or changes the shell (cd, export) runs after the calls before it, in order.
- file_read, file_write, file_edit work on paths inside your computer. Prefer file_edit for small changes to existing files; old_string must match exactly once unless replace_all is set.
- read_image shows you an image file.
- Give every call a short tool_title describing what it does, for the user's view.
- Long outputs are cut to their head and tail; the full text is in the file the result names.
- To show the user a file in /workspace or under /den, write its den:// URL in your answer (/workspace/chart.png is den://workspace/chart.png, /den/NAME/PATH is den://NAME/PATH; file tools' results end with it): the user sees images, audio, video, PDF and HTML pages in place, and can open other files.
`)
	if f.Browser {
		b.WriteString("- browser_use drives your own web browser (logins persist across your sessions; localhost there is this computer): navigate, then act on the snapshot's [N] indexes. Prefer it to curl for pages that need JavaScript or a login; use get_readable to read an article. den-browser does the same from the shell.\n")
	}
	if f.HostCommands {
		b.WriteString("- Commands that reach the user through den: den-notify MESSAGE, den-ask QUESTION (prints the answer), den-open URL|PATH, den-model run --model REF (another model), den-sessions, den-config get; each prints JSON and has --help.\n")
	}
	b.WriteString(`
Be direct and do the work rather than describing it. When you are done, answer the user briefly with what you did and where the results are.
`)
	if s := strings.TrimSpace(instructions); s != "" {
		b.WriteString("\n# The user's instructions\n")
		b.WriteString(s)
		b.WriteString("\n")
	}
	return b.String()
}
