package loopguard

import (
	"regexp"
	"strings"

	"den.dev/den/internal/llm"
)

// observers are commands that only look: running one again changes
// nothing but what it sees.
var observers = map[string]bool{
	"sleep": true, "cat": true, "tail": true, "head": true, "less": true, "more": true,
	"ps": true, "pgrep": true, "pidof": true, "jobs": true, "top": true, "htop": true,
	"ls": true, "ll": true, "tree": true, "stat": true, "file": true, "find": true, "du": true, "df": true, "free": true,
	"grep": true, "egrep": true, "fgrep": true, "rg": true, "wc": true, "sort": true, "uniq": true, "cut": true, "tr": true, "jq": true, "awk": true,
	"test": true, "[": true, "[[": true, "true": true, "echo": true, "printf": true, "date": true, "uptime": true,
	"curl": true, "wget": true, "nc": true, "ping": true, "netstat": true, "ss": true, "lsof": true,
	"which": true, "type": true, "command": true, "whoami": true, "id": true, "pwd": true, "env": true, "printenv": true,
	"journalctl": true, "dmesg": true, "nvidia-smi": true, "vmstat": true, "iostat": true,
}

// observerSubcommands are tools whose listed subcommands only look.
var observerSubcommands = map[string]map[string]bool{
	"docker":    {"ps": true, "logs": true, "inspect": true, "stats": true, "images": true},
	"podman":    {"ps": true, "logs": true, "inspect": true, "stats": true, "images": true},
	"kubectl":   {"get": true, "describe": true, "logs": true, "top": true},
	"systemctl": {"status": true, "is-active": true, "is-failed": true, "show": true},
	"git":       {"status": true, "log": true, "diff": true, "show": true, "branch": true},
	"service":   {"status": true},
}

var (
	// Redirections that write nothing: to /dev/null, or one stream into
	// another.
	harmlessRedirRE = regexp.MustCompile(`\d*>>?\s*/dev/null|[0-9&]*>&\s*\d|&>\s*/dev/null`)
	segmentSplitRE  = regexp.MustCompile(`&&|\|\||[;|\n&]`)
	assignmentRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	sendsDataRE     = regexp.MustCompile(`(?:^|\s)(?:-X\s*(?:POST|PUT|PATCH|DELETE)|-d|--data\S*|-F|--form|-T|--upload-file|-o|-O|--output|--post-\S+)`)
)

// IsPoll says whether a call only observes: file_read and read_image,
// and shell commands every part of which is an observer (cat, tail,
// ps, sleep, ls, grep, curl without a body, docker ps, git status…)
// and that redirect output nowhere but /dev/null. It is a heuristic,
// used to apply the stricter polling thresholds and to tell progress
// (something was done) from looking around.
func IsPoll(call *llm.ToolCall) bool {
	switch call.Name {
	case "file_read", "read_image":
		return true
	case "shell_execute":
		cmd, ok := stringField(call.Input, "command")
		return ok && observes(cmd)
	}
	return false
}

func observes(cmd string) bool {
	cmd = harmlessRedirRE.ReplaceAllString(cmd, " ")
	if strings.Contains(cmd, ">") || strings.Contains(cmd, "`") || strings.Contains(cmd, "$(") {
		return false // writes a file, or runs what we cannot see
	}
	for _, seg := range segmentSplitRE.Split(cmd, -1) {
		f := strings.Fields(seg)
		for len(f) > 0 && (assignmentRE.MatchString(f[0]) || f[0] == "sudo" || f[0] == "nohup" || f[0] == "timeout" || isNumberish(f[0])) {
			f = f[1:] // VAR=x cmd, sudo cmd, timeout 5 cmd
		}
		if len(f) == 0 {
			continue
		}
		name := f[0][strings.LastIndexByte(f[0], '/')+1:]
		switch {
		case observers[name]:
			if (name == "curl" || name == "wget") && sendsDataRE.MatchString(seg) {
				return false
			}
			if name == "find" && (strings.Contains(seg, "-delete") || strings.Contains(seg, "-exec")) {
				return false
			}
		case observerSubcommands[name] != nil:
			if len(f) < 2 || !observerSubcommands[name][f[1]] {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// pidCommand says whether a call's whole output is process ids.
func pidCommand(call *llm.ToolCall) bool {
	if call.Name != "shell_execute" {
		return false
	}
	cmd, _ := stringField(call.Input, "command")
	f := strings.Fields(cmd)
	return len(f) > 0 && (f[0] == "pgrep" || f[0] == "pidof") && !strings.ContainsAny(cmd, "|;&")
}
