package cmdscan

import (
	"path"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// This file knows what individual programs do. The table is deliberately
// plain: a switch on the program name, one small handler per family.
// Programs it does not know are RunsCode: den cannot tell what they do.

// readOnly lists programs that only read files and print. Those in
// fileReaders also take relative file operands, which are resolved
// against the working directory for mount checks.
var readOnly = set(
	// shell builtins and trivia
	":", "true", "false", "echo", "printf", "test", "[", "export", "set", "unset", "shift",
	"exit", "return", "break", "continue", "wait", "type", "hash", "alias", "unalias",
	"umask", "pwd", "getopts", "let", "declare", "typeset", "local", "readonly", "read",
	"sleep", "jobs", "fg", "bg", "times", "ulimit", "help", "history", "dirs", "popd",
	// inspecting the system
	"whoami", "id", "groups", "uname", "hostname", "date", "cal", "env", "printenv", "ps",
	"pgrep", "top", "htop", "free", "uptime", "df", "lsblk", "lscpu", "lsusb", "lspci",
	"nproc", "arch", "tty", "stty", "tput", "clear", "reset", "locale", "getent", "last",
	"w", "who", "ip", "ss", "netstat", "ifconfig", "route", "lsof", "dmesg", "vmstat", "iostat",
	"which", "whereis", "command", "man", "info", "tldr", "apropos", "whatis",
	// reading and filtering text
	"cat", "tac", "head", "tail", "less", "more", "wc", "cut", "paste", "tr", "grep",
	"egrep", "fgrep", "rg", "ag", "ack", "diff", "cmp", "comm", "file", "stat", "du", "ls",
	"tree", "od", "xxd", "hexdump", "strings", "md5sum", "sha1sum", "sha224sum", "sha256sum",
	"sha384sum", "sha512sum", "b2sum", "cksum", "sum", "base64", "base32", "jq", "yq", "nl",
	"fold", "fmt", "column", "expand", "unexpand", "rev", "shuf", "seq", "yes", "basename",
	"dirname", "realpath", "readlink", "expr", "bc", "dc", "factor", "numfmt", "join",
	"look", "tsort", "csplit", "iconv", "envsubst", "xmllint", "pr", "sort", "uniq", "awk",
	"gawk", "mawk", "nawk", "sed", "find", "locate", "zcat", "zgrep", "bzcat", "xzcat",
	"lz4cat", "zstdcat", "pdftotext", "identify", "ffprobe", "exiftool", "mediainfo",
)

var fileReaders = set(
	"cat", "tac", "head", "tail", "less", "more", "wc", "cut", "paste", "grep", "egrep",
	"fgrep", "rg", "ag", "ack", "diff", "cmp", "comm", "file", "stat", "du", "ls", "tree",
	"od", "xxd", "hexdump", "strings", "md5sum", "sha1sum", "sha224sum", "sha256sum",
	"sha384sum", "sha512sum", "b2sum", "cksum", "sum", "base64", "base32", "jq", "yq", "nl",
	"fold", "fmt", "column", "expand", "unexpand", "rev", "shuf", "join", "iconv", "sort",
	"uniq", "zcat", "zgrep", "bzcat", "xzcat", "realpath", "readlink", "xmllint", "pdftotext",
	"identify", "ffprobe", "exiftool", "mediainfo", "source", ".",
)

var networkTools = set(
	"nc", "ncat", "netcat", "socat", "telnet", "ftp", "lftp", "ping", "ping6", "traceroute",
	"tracepath", "mtr", "dig", "nslookup", "host", "whois", "http", "https", "xh", "aria2c",
	"lynx", "w3m", "links", "elinks", "ssh", "sftp", "mosh", "nmap", "openssl", "ntpdate",
	"yt-dlp", "youtube-dl", "gh", "glab", "aws", "gcloud", "az", "kubectl", "ngrok",
)

var diskDestroyers = set(
	"mkfs", "mke2fs", "mkswap", "wipefs", "fdisk", "sfdisk", "cfdisk", "parted", "sgdisk",
	"gdisk", "blkdiscard", "mkdosfs", "mkntfs",
)

var interpreters = set(
	"python", "python2", "python3", "node", "nodejs", "deno", "ruby", "perl", "php", "lua",
	"luajit", "Rscript", "julia", "tclsh", "java", "jshell", "osascript", "pwsh",
)

var shells = set("sh", "bash", "ash", "dash", "zsh", "ksh", "mksh", "fish", "busybox-sh")

// hostAliases are the names den's host command program answers to besides den-*.
var hostAliases = set("xdg-open", "x-www-browser", "sensible-browser", "www-browser")

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// call is one simple command being classified.
type call struct {
	w     *walker
	name  string // base name of the program
	args  []arg  // args[0] is the program
	cwd   *string
	pos   syntax.Pos
	xargs bool         // more operands arrive on stdin (xargs)
	done  map[int]bool // argument indices already checked against mounts
}

// run classifies the simple command args.
func (w *walker) run(args []arg, cwd *string, pos syntax.Pos, xargs bool) {
	if len(args) == 0 {
		return
	}
	if w.depth > maxDepth {
		w.flag(RunsCode, pos, "commands nested too deeply to analyse")
		return
	}
	if !args[0].static {
		w.flag(RunsCode, pos, "runs a command whose name is computed at run time (%s)", display(args[0]))
		c := &call{w: w, args: args, cwd: cwd, pos: pos, done: map[int]bool{}}
		c.touchRest()
		return
	}
	if w.funcs[args[0].val] {
		return
	}
	c := &call{w: w, name: path.Base(args[0].val), args: args, cwd: cwd, pos: pos, xargs: xargs, done: map[int]bool{}}
	if xargs {
		c.args = append(c.args[:len(c.args):len(c.args)], arg{pos: pos})
	}
	c.classify()
	c.touchRest()
}

// touchRest checks the arguments no handler looked at: absolute paths
// (also as --opt=/path or key=/path), and relative operands of programs
// that read files.
func (c *call) touchRest() {
	for i := 1; i < len(c.args); i++ {
		if c.done[i] {
			continue
		}
		a := c.args[i]
		if !a.static && a.val == "" {
			continue
		}
		v := a.val
		if strings.Contains(v, "://") {
			continue
		}
		if strings.HasPrefix(v, "-") || (!strings.HasPrefix(v, "/") && strings.Contains(v, "=")) {
			j := strings.IndexByte(v, '=')
			if j < 0 {
				continue
			}
			a.val = v[j+1:]
			if !strings.HasPrefix(a.val, "/") {
				continue
			}
		} else if !strings.HasPrefix(v, "/") && !strings.HasPrefix(v, ".") && !strings.Contains(v, "/") && !fileReaders[c.name] {
			continue
		}
		c.w.touch(a, *c.cwd, Read, c.name == "du" || c.name == "grep" && c.hasOpt('r', "--recursive"))
	}
}

// hasOpt reports whether a short option letter (possibly bundled, as in
// -rf) or one of the long options is present before "--".
func (c *call) hasOpt(short byte, long ...string) bool {
	for _, a := range c.args[1:] {
		v := a.val
		if !a.static || v == "--" {
			if v == "--" {
				return false
			}
			continue
		}
		if strings.HasPrefix(v, "--") {
			for _, l := range long {
				if v == l || strings.HasPrefix(v, l+"=") {
					return true
				}
			}
			continue
		}
		if short != 0 && len(v) > 1 && v[0] == '-' && strings.IndexByte(v[1:], short) >= 0 {
			return true
		}
	}
	return false
}

// operands returns the indices of the non-option arguments. valued lists
// short options that take a separate value ("-t DIR").
func (c *call) operands(valued string) []int {
	var out []int
	opts := true
	for i := 1; i < len(c.args); i++ {
		a := c.args[i]
		v := a.val
		if opts && a.static && v == "--" {
			opts = false
			continue
		}
		if opts && a.static && len(v) > 1 && v[0] == '-' {
			if len(v) == 2 && strings.IndexByte(valued, v[1]) >= 0 {
				i++
			}
			continue
		}
		out = append(out, i)
	}
	return out
}

func (c *call) touchIdx(i int, acc Access, recursive bool) {
	c.done[i] = true
	c.w.touch(c.args[i], *c.cwd, acc, recursive)
}

func (c *call) flag(f Flag, format string, args ...any) {
	c.w.flag(f, c.pos, format, args...)
}

// touchCwd records the working directory as accessed, for programs that
// act on it implicitly (git, tar x, make).
func (c *call) touchCwd(acc Access, maybe bool) {
	a := arg{val: *c.cwd, static: *c.cwd != "", pos: c.pos}
	if maybe && *c.cwd != "" {
		for _, m := range c.w.mounts {
			if within(*c.cwd, m.Guest) {
				c.w.useMount(m, *c.cwd, acc, true, c.pos)
			}
		}
		return
	}
	c.w.touch(a, "", acc, true)
}

// sub runs args[i:] as a command of its own (for wrappers).
func (c *call) sub(i int) {
	if i >= len(c.args) {
		return
	}
	c.w.depth++
	defer func() { c.w.depth-- }()
	for j := range c.args {
		c.done[j] = true
	}
	rest := c.args[i:]
	if c.xargs {
		rest = rest[:len(rest)-1]
	}
	c.w.run(rest, c.cwd, c.pos, c.xargs)
}

// script classifies src, given as a string to sh -c, eval, su -c or
// watch, as a nested script.
func (c *call) script(src string, at syntax.Pos) {
	w := c.w
	if w.depth >= maxDepth {
		w.flag(RunsCode, at, "commands nested too deeply to analyse")
		return
	}
	f, err := parse(src)
	if err != nil {
		w.unknown(at, "a nested script does not parse: "+err.Error())
		return
	}
	saved := w.funcs
	savedOuter := w.outer
	w.funcs = funcNames(f)
	for n := range saved {
		w.funcs[n] = true
	}
	if w.outer == nil {
		w.outer = &at
	}
	w.depth++
	dir := *c.cwd
	w.stmts(f.Stmts, &dir)
	w.depth--
	w.outer = savedOuter
	w.funcs = saved
}

func (c *call) classify() {
	n := c.name
	if strings.HasPrefix(n, "den-") || hostAliases[n] {
		c.w.flag(HostCommand, c.pos, "%s asks den on the host", n)
		for _, h := range c.w.c.HostCommands {
			if h == n {
				return
			}
		}
		c.w.c.HostCommands = append(c.w.c.HostCommands, n)
		return
	}
	if len(c.args) == 2 && !c.xargs {
		switch c.args[1].val {
		case "--version", "-V", "--help", "-h", "version", "help":
			if !shells[n] && n != "sudo" {
				return
			}
		}
	}
	if strings.HasPrefix(n, "mkfs.") || diskDestroyers[n] {
		c.flag(Destructive, "%s rewrites a disk or file system", n)
		for _, i := range c.operands("") {
			c.touchIdx(i, Destroy, true)
		}
		return
	}
	if c.wrapper() {
		return
	}
	switch n {
	case "cd", "pushd":
		c.cd()
	case "sh", "bash", "ash", "dash", "zsh", "ksh", "mksh", "fish":
		c.shell()
	case "eval":
		c.eval()
	case "trap":
		if len(c.args) > 2 && c.args[1].static {
			c.done[1] = true
			c.script(c.args[1].val, c.args[1].pos)
		}
	case "source", ".":
		c.flag(RunsCode, "%s runs the commands in a file", n)
	case "rm", "unlink":
		c.rm()
	case "rmdir":
		c.flag(Writes, "rmdir removes empty directories")
		c.touchOps("", Write, false)
	case "cp", "ln", "install":
		c.copy()
	case "mv":
		c.flag(Writes, "mv moves or renames files")
		c.touchOps("tS", Write, true)
	case "touch", "mkdir", "mkfifo", "mknod", "mktemp":
		c.flag(Writes, "%s creates files", n)
		c.touchOps("dmrt", Write, false)
	case "tee":
		if ops := c.operands(""); len(ops) > 0 {
			c.flag(Writes, "tee writes to %s", display(c.args[ops[0]]))
			c.touchOps("", Write, false)
		}
	case "truncate", "shred", "fallocate":
		c.flag(Destructive, "%s overwrites file contents", n)
		c.touchOps("sronl", Destroy, false)
	case "dd":
		c.dd()
	case "chmod", "chown", "chgrp", "chattr", "setfacl":
		c.chmod()
	case "sed":
		c.sed()
	case "perl":
		if c.hasOpt('i') {
			c.flag(Writes, "perl -i edits files in place")
			c.touchOps("eE", Write, false)
		}
		c.flag(RunsCode, "perl runs a program")
	case "awk", "gawk":
		if c.hasOpt(0, "--inplace") || c.inplaceAwk() {
			c.flag(Writes, "awk -i inplace edits files in place")
			c.touchOps("fvF", Write, false)
		} else if c.awkSystem() {
			c.flag(RunsCode, "awk program runs commands (system or pipes)")
		}
	case "sort":
		if c.hasOpt('o', "--output") {
			c.flag(Writes, "sort -o writes a file")
		}
	case "uniq":
		if ops := c.operands("fsw"); len(ops) > 1 {
			c.flag(Writes, "uniq writes to %s", display(c.args[ops[1]]))
			c.touchIdx(ops[1], Write, false)
		}
	case "find":
		c.find()
	case "tar", "bsdtar":
		c.tar()
	case "unzip", "gunzip", "gzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "lz4", "zip", "7z", "7za", "unrar", "cpio", "ar":
		c.flag(Writes, "%s writes archive or extracted files", n)
		c.touchOps("dxo", Write, false)
		if n == "unzip" || n == "7z" || n == "7za" || n == "unrar" || n == "cpio" {
			c.touchCwd(Write, false)
		}
	case "patch":
		c.flag(Writes, "patch edits files")
		c.touchCwd(Write, false)
	case "curl":
		c.curl()
	case "wget":
		c.wget()
	case "git":
		c.git()
	case "apk":
		c.pkg("apk", set("add", "del", "upgrade", "fix"), set("update", "fetch"))
	case "apt", "apt-get", "aptitude":
		c.pkg(n, set("install", "reinstall", "remove", "purge", "autoremove", "upgrade", "full-upgrade", "dist-upgrade", "build-dep"), set("update", "download", "source"))
	case "dpkg":
		if c.hasOpt('i', "--install") || c.hasOpt('r', "--remove") || c.hasOpt('P', "--purge") {
			c.flag(PackageInstall, "dpkg installs or removes packages")
		}
	case "pip", "pip3", "pipx":
		c.pkg(n, set("install", "uninstall", "inject", "upgrade", "reinstall"), set("download", "wheel", "search", "index"))
	case "uv":
		c.uv()
	case "poetry", "pdm", "hatch":
		c.pkg(n, set("add", "install", "remove", "update", "sync", "lock"), nil)
	case "npm", "pnpm", "yarn", "bun":
		c.npm()
	case "npx", "pnpx", "bunx":
		c.flag(Network, "%s downloads and runs a package", n)
		c.flag(RunsCode, "%s downloads and runs a package", n)
	case "cargo":
		c.pkg("cargo", set("install", "uninstall"), set("fetch", "update", "add", "search", "publish"))
		c.buildTool()
	case "gem":
		c.pkg("gem", set("install", "uninstall", "update"), set("fetch", "push", "search"))
	case "go":
		c.goTool()
	case "brew", "conda", "mamba", "micromamba", "snap", "flatpak", "dnf", "yum", "zypper", "nix-env", "port", "pkg":
		c.pkg(n, set("install", "add", "remove", "uninstall", "erase", "upgrade", "update", "create", "-i", "-e"), set("search", "refresh"))
	case "pacman":
		if c.hasOpt('S') || c.hasOpt('R') || c.hasOpt('U') {
			c.flag(PackageInstall, "pacman installs or removes packages")
			c.flag(Network, "pacman downloads packages")
		}
	case "scp":
		c.flag(Network, "scp copies to or from another machine")
		c.remoteCopy()
	case "rsync":
		c.rsync()
	case "python", "python2", "python3":
		c.python()
	case "kill", "pkill", "killall":
		c.flag(Writes, "%s signals processes", n)
	case "shutdown", "reboot", "halt", "poweroff":
		c.flag(Destructive, "%s stops the computer", n)
	case "crontab":
		if c.hasOpt('r') {
			c.flag(Destructive, "crontab -r removes the crontab")
		} else if len(c.args) > 1 && !c.hasOpt('l') {
			c.flag(Writes, "crontab installs a schedule")
		}
	case "mount", "umount", "swapon", "swapoff", "systemctl", "service", "rc-service", "rc-update", "useradd", "adduser", "usermod", "passwd", "chpasswd", "groupadd", "sysctl", "modprobe", "ldconfig", "update-alternatives", "hwclock", "timedatectl", "hostnamectl":
		if len(c.args) > 1 && !(n == "mount" && len(c.args) == 1) {
			c.flag(Writes, "%s changes system configuration", n)
		}
	case "userdel", "deluser", "groupdel":
		c.flag(Destructive, "%s deletes accounts", n)
	case "docker", "podman", "nerdctl":
		c.flag(Network, "%s may pull images", n)
		c.flag(RunsCode, "%s runs containers", n)
	case "make", "cmake", "ninja", "meson", "gradle", "mvn", "ant", "bazel", "just", "task":
		c.flag(RunsCode, "%s runs build rules", n)
		c.touchCwd(Write, true)
	default:
		switch {
		case networkTools[n]:
			c.flag(Network, "%s talks to other machines", n)
			if n == "ssh" {
				c.flag(RunsCode, "ssh runs commands on another machine")
			}
		case interpreters[n]:
			c.flag(RunsCode, "%s runs a program", n)
			c.touchCwd(Write, true)
		case readOnly[n]:
		default:
			c.flag(RunsCode, "runs %s, whose effects den does not know", n)
			c.touchCwd(Write, true)
		}
	}
}

func (c *call) touchOps(valued string, acc Access, recursive bool) {
	for _, i := range c.operands(valued) {
		c.touchIdx(i, acc, recursive)
	}
}

// wrapper handles programs that run their arguments as a command.
func (c *call) wrapper() bool {
	skip := func(valued string) int { // index of the first operand
		ops := c.operands(valued)
		if len(ops) == 0 {
			return len(c.args)
		}
		return ops[0]
	}
	switch c.name {
	case "sudo", "doas":
		c.sub(skip("ugCDhprtUT"))
	case "nohup", "builtin", "unbuffer", "catchsegv":
		c.sub(1)
	case "exec":
		c.sub(skip("a"))
	case "setsid", "chrt", "taskset", "stdbuf":
		c.sub(skip("ioe"))
	case "nice":
		c.sub(skip("n"))
	case "ionice":
		c.sub(skip("cnp"))
	case "time":
		c.sub(skip("of"))
	case "command":
		if c.hasOpt('v') || c.hasOpt('V') {
			return true
		}
		c.sub(skip(""))
	case "timeout":
		i := skip("sk")
		c.sub(i + 1)
	case "chroot":
		c.flag(RunsCode, "chroot runs a command in another root")
	case "busybox":
		c.sub(1)
	case "env":
		c.env()
	case "xargs":
		c.xargsCmd()
	case "flock":
		if i := c.dashC(); i > 0 {
			c.script(c.args[i].val, c.args[i].pos)
			return true
		}
		c.sub(skip("wE") + 1)
	case "watch":
		i := skip("nd")
		var parts []string
		for _, a := range c.args[i:] {
			if !a.static {
				c.flag(RunsCode, "watch runs a computed command")
				return true
			}
			parts = append(parts, a.val)
		}
		if len(parts) > 0 {
			c.script(strings.Join(parts, " "), c.pos)
		}
	case "su", "runuser":
		if i := c.dashC(); i > 0 {
			c.script(c.args[i].val, c.args[i].pos)
		} else {
			c.flag(RunsCode, "%s starts a shell as another user", c.name)
		}
	default:
		return false
	}
	return true
}

// dashC returns the index of the string after -c (or --command), or 0.
func (c *call) dashC() int {
	for i := 1; i+1 < len(c.args); i++ {
		v := c.args[i].val
		if v == "--" {
			return 0
		}
		if v == "--command" || len(v) > 1 && v[0] == '-' && v[1] != '-' && strings.IndexByte(v[1:], 'c') >= 0 {
			if c.args[i+1].static {
				return i + 1
			}
			return -1
		}
	}
	return 0
}

func (c *call) env() {
	cwd := *c.cwd
	for i := 1; i < len(c.args); i++ {
		a := c.args[i]
		v := a.val
		switch {
		case !a.static:
			if !strings.Contains(v, "=") {
				c.subAt(i, cwd)
				return
			}
		case v == "-u" || v == "--unset":
			i++
		case v == "-C" || v == "--chdir":
			if i+1 < len(c.args) {
				i++
				cwd = chdir(cwd, c.args[i])
			}
		case v == "-S" || v == "--split-string":
			if i+1 < len(c.args) && c.args[i+1].static {
				c.script(c.args[i+1].val, c.args[i+1].pos)
				return
			}
		case strings.HasPrefix(v, "-"):
		case strings.Contains(v, "="):
		default:
			c.subAt(i, cwd)
			return
		}
	}
}

// subAt runs args[i:] as a command in the working directory cwd.
func (c *call) subAt(i int, cwd string) {
	saved := c.cwd
	c.cwd = &cwd
	c.sub(i)
	c.cwd = saved
}

func (c *call) xargsCmd() {
	i := 1
	for ; i < len(c.args); i++ {
		v := c.args[i].val
		if !c.args[i].static || !strings.HasPrefix(v, "-") {
			break
		}
		if v == "--" {
			i++
			break
		}
		if len(v) == 2 && strings.IndexByte("nIPdLsaE", v[1]) >= 0 {
			i++
		}
	}
	for j := range c.args {
		c.done[j] = true
	}
	if i >= len(c.args) {
		return // echo
	}
	c.w.depth++
	defer func() { c.w.depth-- }()
	c.w.run(c.args[i:], c.cwd, c.pos, true)
}

func chdir(cwd string, a arg) string {
	if !a.static || a.glob || a.val == "-" {
		return ""
	}
	p, kind := resolve(a, cwd)
	if kind != pathExact {
		return ""
	}
	return p
}

func (c *call) cd() {
	ops := c.operands("")
	if len(ops) == 0 {
		*c.cwd = "" // $HOME, which den does not know
		return
	}
	c.done[ops[0]] = true
	*c.cwd = chdir(*c.cwd, c.args[ops[0]])
}

func (c *call) shell() {
	if i := c.dashC(); i != 0 {
		if i < 0 {
			c.flag(RunsCode, "%s -c runs a computed script", c.name)
			return
		}
		c.done[i] = true
		for j := i + 1; j < len(c.args); j++ {
			c.done[j] = true
		}
		c.script(c.args[i].val, c.args[i].pos)
		return
	}
	ops := c.operands("o")
	if len(ops) == 0 || c.xargs && len(ops) == 1 {
		c.flag(RunsCode, "%s runs commands read from standard input", c.name)
		return
	}
	c.flag(RunsCode, "%s runs the script %s", c.name, display(c.args[ops[0]]))
	c.touchCwd(Write, true)
}

func (c *call) eval() {
	var parts []string
	for _, a := range c.args[1:] {
		if !a.static {
			c.flag(RunsCode, "eval runs a computed command")
			return
		}
		parts = append(parts, a.val)
	}
	for j := range c.args {
		c.done[j] = true
	}
	if len(parts) > 0 {
		c.script(strings.Join(parts, " "), c.pos)
	}
}

// inTmp reports whether a path is a scratch location whose loss does not matter.
func inTmp(p string) bool {
	return within(p, "/tmp") || within(p, "/var/tmp") || within(p, "/dev/shm")
}

func (c *call) rm() {
	force := c.hasOpt('f', "--force")
	rec := c.hasOpt('r', "--recursive") || c.hasOpt('R')
	ops := c.operands("")
	outside := ""
	for _, i := range ops {
		p, kind := resolve(c.args[i], *c.cwd)
		if kind == pathUnknown || !inTmp(p) {
			outside = display(c.args[i])
			if c.xargs && i == len(c.args)-1 {
				outside = "paths read from standard input"
			}
			break
		}
	}
	switch {
	case rec && force:
		c.flag(Destructive, "%s -rf removes files recursively without asking", c.name)
	case rec:
		c.flag(Destructive, "%s -r removes directories recursively", c.name)
	case force:
		c.flag(Destructive, "%s -f removes files without asking", c.name)
	case outside != "":
		c.flag(Destructive, "%s removes %s", c.name, outside)
	default:
		c.flag(Writes, "%s removes scratch files", c.name)
	}
	acc := Destroy
	if !rec && !force && outside == "" {
		acc = Write
	}
	for _, i := range ops {
		c.touchIdx(i, acc, rec)
	}
}

func (c *call) copy() {
	c.flag(Writes, "%s writes files", c.name)
	ops := c.operands("tS")
	if len(ops) == 0 {
		return
	}
	rec := c.hasOpt('r', "--recursive") || c.hasOpt('R') || c.hasOpt('a', "--archive")
	target := ops[len(ops)-1]
	for i := 1; i < len(c.args); i++ {
		if c.args[i].val == "-t" && i+1 < len(c.args) {
			target = i + 1
			break
		}
		if v, ok := strings.CutPrefix(c.args[i].val, "--target-directory="); ok {
			c.args[i].val = v
			target = i
		}
	}
	for _, i := range ops {
		if i != target {
			c.touchIdx(i, Read, rec)
		}
	}
	c.touchIdx(target, Write, false)
}

func (c *call) dd() {
	for i := 1; i < len(c.args); i++ {
		a := c.args[i]
		k, v, ok := strings.Cut(a.val, "=")
		if !ok {
			continue
		}
		a.val = v
		c.done[i] = true
		switch k {
		case "if":
			c.w.touch(a, *c.cwd, Read, false)
		case "of":
			p, kind := resolve(a, *c.cwd)
			switch {
			case kind == pathExact && isHarmlessDevice(p):
			case kind == pathExact && strings.HasPrefix(p, "/dev/"):
				c.flag(Destructive, "dd writes to the device %s", p)
				c.w.touch(a, *c.cwd, Destroy, false)
			default:
				c.flag(Writes, "dd writes %s", display(a))
				c.w.touch(a, *c.cwd, Write, false)
			}
		}
	}
}

// broad reports whether a recursive permission change on p reaches far:
// the root, a top-level directory, a user mount or an ancestor of one, or
// a path den cannot resolve.
func (w *walker) broad(a arg, cwd string) bool {
	p, kind := resolve(a, cwd)
	if kind != pathExact {
		return true
	}
	if strings.Count(p, "/") <= 1 || p == "/root" || within(p, "/home") && strings.Count(p, "/") <= 2 {
		return true
	}
	for _, m := range w.mounts {
		if within(m.Guest, p) {
			return true
		}
	}
	return false
}

func (c *call) chmod() {
	ops := c.operands("")
	rec := c.hasOpt('R', "--recursive")
	if len(ops) > 0 && (c.name == "chmod" || c.name == "chown" || c.name == "chgrp") {
		c.done[ops[0]] = true
		ops = ops[1:] // the mode or owner
	}
	broad := ""
	if rec {
		for _, i := range ops {
			if c.w.broad(c.args[i], *c.cwd) {
				broad = display(c.args[i])
				break
			}
		}
	}
	acc := Write
	if broad != "" {
		c.flag(Destructive, "%s -R on a broad path (%s)", c.name, broad)
		acc = Destroy
	} else {
		c.flag(Writes, "%s changes file attributes", c.name)
	}
	for _, i := range ops {
		c.touchIdx(i, acc, rec)
	}
}

func (c *call) sed() {
	if !c.hasOpt('i', "--in-place") {
		return
	}
	c.flag(Writes, "sed -i edits files in place")
	ops := c.operands("ef")
	if !c.hasOpt('e', "--expression") && !c.hasOpt('f', "--file") && len(ops) > 0 {
		c.done[ops[0]] = true
		ops = ops[1:] // the script
	}
	for _, i := range ops {
		c.touchIdx(i, Write, false)
	}
}

func (c *call) inplaceAwk() bool {
	for i := 1; i+1 < len(c.args); i++ {
		if c.args[i].val == "-i" && c.args[i+1].val == "inplace" {
			return true
		}
	}
	return false
}

func (c *call) awkSystem() bool {
	for _, a := range c.args[1:] {
		if strings.Contains(a.val, "system(") || strings.Contains(a.val, "| getline") || strings.Contains(a.val, "print |") {
			return true
		}
	}
	return false
}

func (c *call) find() {
	roots := []int{}
	i := 1
	for ; i < len(c.args); i++ {
		v := c.args[i].val
		if c.args[i].static && (strings.HasPrefix(v, "-") || v == "(" || v == "!") {
			break
		}
		roots = append(roots, i)
	}
	acc := Read
	for ; i < len(c.args); i++ {
		a := c.args[i]
		c.done[i] = true
		switch a.val {
		case "-delete":
			c.flag(Destructive, "find -delete removes what it finds")
			acc = Destroy
		case "-fprint", "-fprint0", "-fprintf", "-fls":
			c.flag(Writes, "find %s writes a file", a.val)
			if i+1 < len(c.args) {
				c.w.touch(c.args[i+1], *c.cwd, Write, false)
			}
		case "-exec", "-execdir", "-ok", "-okdir":
			j := i + 1
			for j < len(c.args) && c.args[j].val != ";" && c.args[j].val != "+" {
				j++
			}
			cmd := append([]arg(nil), c.args[i+1:j]...)
			for k := range cmd {
				if strings.Contains(cmd[k].val, "{}") {
					// The found paths lie below the roots.
					if len(roots) > 0 {
						cmd[k] = c.args[roots[0]]
						cmd[k].glob = true
						cmd[k].val = strings.TrimSuffix(cmd[k].val, "/") + "/*"
					} else {
						cmd[k] = arg{val: "./*", static: true, glob: true, pos: cmd[k].pos}
					}
				}
			}
			c.w.depth++
			c.w.run(cmd, c.cwd, c.pos, false)
			c.w.depth--
			i = j
		}
	}
	if len(roots) == 0 {
		c.touchCwd(acc, false)
		return
	}
	for _, r := range roots {
		c.touchIdx(r, acc, true)
	}
}

func (c *call) tar() {
	mode := ""
	for _, a := range c.args[1:] {
		v := a.val
		switch {
		case v == "--extract" || v == "--get":
			mode = "x"
		case v == "--create" || v == "--append" || v == "--update":
			mode = "c"
		case v == "--list":
			mode = "t"
		case strings.HasPrefix(v, "--"):
		case mode == "" && (strings.HasPrefix(v, "-") || a == c.args[1]):
			for _, m := range "xctru" {
				if strings.ContainsRune(v, m) {
					mode = string(m)
					break
				}
			}
		}
		if mode != "" {
			break
		}
	}
	switch mode {
	case "x":
		c.flag(Writes, "tar extracts files")
		dir := *c.cwd
		for i := 1; i+1 < len(c.args); i++ {
			if c.args[i].val == "-C" || c.args[i].val == "--directory" {
				c.done[i+1] = true
				dir = chdir(dir, c.args[i+1])
			}
		}
		c.w.touch(arg{val: dir, static: dir != "", pos: c.pos}, "", Write, true)
	case "c", "r", "u":
		c.flag(Writes, "tar writes an archive")
		for i := 1; i+1 < len(c.args); i++ {
			v := c.args[i].val
			if v == "-f" || v == "--file" || !strings.HasPrefix(v, "--") && strings.HasSuffix(v, "f") && (i == 1 || strings.HasPrefix(v, "-")) {
				c.done[i+1] = true
				c.w.touch(c.args[i+1], *c.cwd, Write, false)
				break
			}
		}
	}
}

func (c *call) curl() {
	c.flag(Network, "curl transfers data over the network")
	for i := 1; i < len(c.args); i++ {
		v := c.args[i].val
		short := len(v) > 1 && v[0] == '-' && v[1] != '-'
		switch {
		case v == "--output" || short && strings.HasSuffix(v, "o") && !strings.Contains(v, "O"):
			if i+1 < len(c.args) && c.args[i+1].val != "-" {
				c.flag(Writes, "curl -o writes %s", display(c.args[i+1]))
				c.touchIdx(i+1, Write, false)
			}
			i++
		case v == "--remote-name" || v == "--remote-name-all" || short && strings.Contains(v, "O"):
			c.flag(Writes, "curl -O writes a file in the working directory")
			c.touchCwd(Write, false)
		case short && strings.Contains(v, "o"):
			a := c.args[i]
			a.val = v[strings.IndexByte(v, 'o')+1:]
			c.done[i] = true
			if a.val != "-" {
				c.flag(Writes, "curl -o writes %s", display(a))
				c.w.touch(a, *c.cwd, Write, false)
			}
		}
	}
}

func (c *call) wget() {
	c.flag(Network, "wget downloads over the network")
	if c.hasOpt(0, "--spider") {
		return
	}
	for i := 1; i < len(c.args); i++ {
		v := c.args[i].val
		if (v == "-O" || v == "--output-document") && i+1 < len(c.args) {
			t := c.args[i+1]
			if t.val == "-" || t.val == "/dev/null" {
				return
			}
			c.flag(Writes, "wget writes %s", display(t))
			c.touchIdx(i+1, Write, false)
			return
		}
		if len(v) > 2 && v[0] == '-' && v[1] != '-' && strings.HasSuffix(v, "O") && i+1 < len(c.args) && c.args[i+1].val == "-" {
			return // -qO -
		}
		if strings.HasPrefix(v, "-O") && len(v) > 2 {
			if v[2:] == "-" {
				return
			}
			c.flag(Writes, "wget writes %s", v[2:])
			return
		}
		if strings.HasPrefix(v, "-qO") && len(v) > 3 && v[3:] == "-" {
			return
		}
		if (v == "-P" || v == "--directory-prefix") && i+1 < len(c.args) {
			c.flag(Writes, "wget writes into %s", display(c.args[i+1]))
			c.touchIdx(i+1, Write, true)
			return
		}
	}
	c.flag(Writes, "wget writes the download into the working directory")
	c.touchCwd(Write, false)
}

// gitRead lists git subcommands that only read the repository.
var gitRead = set("status", "log", "diff", "show", "blame", "grep", "ls-files", "ls-tree",
	"rev-parse", "describe", "shortlog", "cat-file", "show-ref", "for-each-ref", "name-rev",
	"merge-base", "count-objects", "whatchanged", "rev-list", "help", "version", "var",
	"check-ignore", "annotate", "cherry", "range-diff", "bugreport", "verify-commit")

func (c *call) git() {
	dir := *c.cwd
	i := 1
	for ; i < len(c.args); i++ {
		v := c.args[i].val
		switch {
		case v == "-C" && i+1 < len(c.args):
			i++
			dir = chdir(dir, c.args[i])
			c.done[i] = true
		case v == "-c" || v == "--git-dir" || v == "--work-tree" || v == "--namespace":
			i++
		case strings.HasPrefix(v, "-"):
		default:
			goto found
		}
	}
	return
found:
	sub := c.args[i].val
	rest := c.args[i+1:]
	has := func(opts ...string) bool {
		for _, a := range rest {
			for _, o := range opts {
				if a.val == o || strings.HasPrefix(o, "-") && !strings.HasPrefix(o, "--") && len(a.val) > 1 && a.val[0] == '-' && a.val[1] != '-' && len(o) == 2 && strings.IndexByte(a.val[1:], o[1]) >= 0 {
					return true
				}
			}
		}
		return false
	}
	repo := arg{val: dir, static: dir != "", pos: c.pos}
	touch := func(acc Access) { c.w.touch(repo, "", acc, true) }
	destroy := func(why string) {
		c.flag(Destructive, "git %s %s", sub, why)
		touch(Destroy)
	}
	switch sub {
	case "clone":
		c.flag(Network, "git clone downloads a repository")
		c.flag(Writes, "git clone writes a repository")
		ops := 0
		for j, a := range rest {
			if !strings.HasPrefix(a.val, "-") {
				ops++
				if ops == 2 {
					c.done[i+1+j] = true
					c.w.touch(a, dir, Write, true)
				}
			}
		}
		if ops < 2 {
			touch(Write)
		}
	case "pull", "fetch", "submodule", "lfs":
		c.flag(Network, "git %s talks to a remote", sub)
		c.flag(Writes, "git %s updates the repository", sub)
		touch(Write)
	case "push":
		c.flag(Network, "git push talks to a remote")
		for _, a := range rest {
			if a.val == "-f" || a.val == "--force" || strings.HasPrefix(a.val, "--force-with-lease") || a.val == "--delete" || a.val == "-d" || a.val == "--mirror" || strings.HasPrefix(a.val, "+") || strings.HasPrefix(a.val, ":") {
				c.flag(Destructive, "git push %s rewrites or deletes remote history", a.val)
				break
			}
		}
	case "ls-remote":
		c.flag(Network, "git ls-remote talks to a remote")
	case "reset":
		if has("--hard", "--merge", "--keep") {
			destroy("--hard discards uncommitted changes")
		} else {
			c.flag(Writes, "git reset moves the branch")
			touch(Write)
		}
	case "clean":
		if has("-n", "--dry-run") {
			return
		}
		destroy("deletes untracked files")
	case "checkout":
		if has("-f", "--force", "--", ".") {
			destroy("discards uncommitted changes")
		} else {
			c.flag(Writes, "git checkout changes the working tree")
			touch(Write)
		}
	case "restore":
		if has("--staged", "-S") && !has("--worktree", "-W") {
			c.flag(Writes, "git restore --staged changes the index")
			touch(Write)
		} else {
			destroy("discards uncommitted changes")
		}
	case "branch":
		switch {
		case has("-D") || has("--delete") && has("--force", "-f"):
			destroy("deletes unmerged branches")
		case len(rest) == 0 || has("-a", "-r", "-v", "-vv", "--list", "-l", "--show-current", "--contains", "--merged"):
		default:
			c.flag(Writes, "git branch changes branches")
			touch(Write)
		}
	case "stash":
		if len(rest) > 0 && (rest[0].val == "drop" || rest[0].val == "clear") {
			destroy("deletes stashed changes")
		} else if len(rest) > 0 && (rest[0].val == "list" || rest[0].val == "show") {
		} else {
			c.flag(Writes, "git stash changes the working tree")
			touch(Write)
		}
	case "filter-branch", "filter-repo", "update-ref", "reflog", "gc", "prune":
		if sub == "reflog" && (len(rest) == 0 || rest[0].val == "show") || sub == "update-ref" && !has("-d") {
			if sub == "update-ref" {
				c.flag(Writes, "git update-ref moves a ref")
				touch(Write)
			}
			return
		}
		destroy("rewrites or discards history")
	case "config":
		if has("--get", "--get-all", "--list", "-l", "--get-regexp") || len(rest) == 1 {
			return
		}
		c.flag(Writes, "git config changes settings")
	case "tag":
		if len(rest) == 0 || has("-l", "--list", "-n") {
			return
		}
		if has("-d", "--delete") {
			destroy("deletes tags")
			return
		}
		c.flag(Writes, "git tag creates a tag")
		touch(Write)
	case "remote":
		if len(rest) == 0 || has("-v", "--verbose") || rest[0].val == "get-url" {
			return
		}
		if rest[0].val == "update" || rest[0].val == "show" || rest[0].val == "prune" {
			c.flag(Network, "git remote %s talks to a remote", rest[0].val)
		}
		c.flag(Writes, "git remote changes remotes")
	default:
		if gitRead[sub] {
			for j := range rest {
				c.done[i+1+j] = true
			}
			return
		}
		c.flag(Writes, "git %s changes the repository", sub)
		touch(Write)
	}
	for j := range c.args {
		c.done[j] = true
	}
}

// pkg handles a package manager whose subcommand is the first operand.
// install lists subcommands that install or remove packages, network
// those that only fetch.
func (c *call) pkg(tool string, install, network map[string]bool) {
	sub := ""
	for _, a := range c.args[1:] {
		if install[a.val] {
			sub = a.val
			break
		}
		if !strings.HasPrefix(a.val, "-") {
			sub = a.val
			break
		}
	}
	switch {
	case install[sub]:
		c.flag(PackageInstall, "%s %s installs or removes packages", tool, sub)
		if !strings.Contains(sub, "del") && !strings.Contains(sub, "remove") && !strings.Contains(sub, "uninstall") && sub != "purge" && sub != "erase" && sub != "-e" {
			c.flag(Network, "%s %s downloads packages", tool, sub)
		}
	case network[sub]:
		c.flag(Network, "%s %s talks to a package index", tool, sub)
		if sub != "search" {
			c.flag(Writes, "%s %s writes package data", tool, sub)
		}
	}
}

func (c *call) uv() {
	for j, a := range c.args[1:] {
		switch a.val {
		case "pip":
			c.sub(j + 2)
			return
		case "add", "remove", "sync", "lock", "tool", "venv", "python":
			c.flag(PackageInstall, "uv %s installs or removes packages", a.val)
			c.flag(Network, "uv %s downloads packages", a.val)
			return
		case "run":
			c.flag(RunsCode, "uv run runs a program")
			return
		}
	}
}

func (c *call) npm() {
	sub := ""
	for _, a := range c.args[1:] {
		if !strings.HasPrefix(a.val, "-") {
			sub = a.val
			break
		}
	}
	switch sub {
	case "install", "i", "ci", "add", "update", "up", "upgrade", "uninstall", "remove", "rm", "un", "link", "dedupe", "prune":
		c.flag(PackageInstall, "%s %s installs or removes packages", c.name, sub)
		c.flag(Network, "%s %s downloads packages", c.name, sub)
		c.touchCwd(Write, false)
	case "", "ls", "list", "outdated", "why", "explain", "config", "help", "version", "root", "bin", "prefix":
	case "view", "info", "search", "show", "audit", "ping", "whoami":
		c.flag(Network, "%s %s queries the registry", c.name, sub)
	case "publish", "unpublish", "deprecate", "dist-tag", "login", "logout":
		c.flag(Network, "%s %s changes the registry", c.name, sub)
	case "init", "pkg", "set":
		c.flag(Writes, "%s %s writes package.json", c.name, sub)
	default:
		c.flag(RunsCode, "%s %s runs package scripts", c.name, sub)
		c.touchCwd(Write, true)
	}
}

func (c *call) buildTool() {
	for _, a := range c.args[1:] {
		switch a.val {
		case "build", "check", "test", "run", "bench", "doc", "clippy", "fmt", "fix", "clean":
			c.flag(RunsCode, "cargo %s runs build scripts", a.val)
			c.flag(Writes, "cargo %s writes build output", a.val)
			c.touchCwd(Write, false)
			return
		}
	}
}

func (c *call) goTool() {
	sub := ""
	if len(c.args) > 1 {
		sub = c.args[1].val
	}
	switch sub {
	case "install", "get":
		c.flag(PackageInstall, "go %s installs packages", sub)
		c.flag(Network, "go %s downloads modules", sub)
	case "mod":
		if len(c.args) > 2 && (c.args[2].val == "graph" || c.args[2].val == "why" || c.args[2].val == "verify") {
			return
		}
		c.flag(Network, "go mod downloads modules")
		c.flag(Writes, "go mod writes module files")
		c.touchCwd(Write, false)
	case "env", "version", "list", "doc", "help", "vet":
	case "build", "fmt", "generate", "clean", "work", "fix":
		c.flag(Writes, "go %s writes files", sub)
		if sub == "generate" {
			c.flag(RunsCode, "go generate runs commands")
		}
		c.touchCwd(Write, false)
	default: // run, test, tool
		c.flag(RunsCode, "go %s runs a program", sub)
		c.touchCwd(Write, true)
	}
}

func (c *call) remoteCopy() {
	ops := c.operands("iFPoSlcJ")
	for k, i := range ops {
		v := c.args[i].val
		if isRemote(v) {
			c.done[i] = true
			continue
		}
		if k == len(ops)-1 {
			c.flag(Writes, "%s writes local files", c.name)
			c.touchIdx(i, Write, true)
		} else {
			c.touchIdx(i, Read, true)
		}
	}
}

func isRemote(v string) bool {
	if strings.Contains(v, "://") {
		return true
	}
	i := strings.IndexByte(v, ':')
	return i > 0 && !strings.Contains(v[:i], "/")
}

func (c *call) rsync() {
	ops := c.operands("eB")
	remote := false
	for _, i := range ops {
		remote = remote || isRemote(c.args[i].val)
	}
	if remote {
		c.flag(Network, "rsync copies to or from another machine")
	}
	del := c.hasOpt(0, "--delete", "--delete-before", "--delete-after", "--delete-during", "--delete-excluded", "--remove-source-files")
	for k, i := range ops {
		if isRemote(c.args[i].val) {
			c.done[i] = true
			continue
		}
		if k == len(ops)-1 {
			if del {
				c.flag(Destructive, "rsync --delete removes files in %s", display(c.args[i]))
				c.touchIdx(i, Destroy, true)
			} else {
				c.flag(Writes, "rsync writes %s", display(c.args[i]))
				c.touchIdx(i, Write, true)
			}
		} else {
			c.touchIdx(i, Read, true)
		}
	}
}

func (c *call) python() {
	for i := 1; i < len(c.args); i++ {
		v := c.args[i].val
		if v == "-m" && i+1 < len(c.args) {
			mod := c.args[i+1].val
			switch mod {
			case "pip":
				c.sub(i + 1)
			case "http.server", "SimpleHTTPServer", "smtpd":
				c.flag(Network, "python -m %s serves on the network", mod)
			case "venv", "virtualenv":
				c.flag(Writes, "python -m %s creates an environment", mod)
				c.touchOps("", Write, false)
			case "json.tool", "this", "site", "platform", "sysconfig":
			default:
				c.flag(RunsCode, "python -m %s runs a program", mod)
				c.touchCwd(Write, true)
			}
			return
		}
		if !strings.HasPrefix(v, "-") || v == "-c" {
			break
		}
	}
	c.flag(RunsCode, "%s runs a program", c.name)
	c.touchCwd(Write, true)
}
