package hostcmd

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
)

// DefaultAliases are the names other programs use to open things, all
// served by den-open.
var DefaultAliases = map[string]string{
	"xdg-open":         "den-open",
	"x-www-browser":    "den-open",
	"sensible-browser": "den-open",
	"www-browser":      "den-open",
}

// Mux is a Handler that dispatches calls by command name. It resolves
// aliases, answers --help from each command's usage text, and answers
// a name it does not know with a not_available envelope. Register
// everything before serving: a Mux is not safe to change while calls
// run.
type Mux struct {
	cmds    map[string]muxEntry
	aliases map[string]string
}

type muxEntry struct {
	usage string
	h     Handler
}

var _ Handler = (*Mux)(nil)

// NewMux returns a Mux with DefaultAliases.
func NewMux() *Mux {
	m := &Mux{cmds: make(map[string]muxEntry), aliases: make(map[string]string)}
	for a, n := range DefaultAliases {
		m.aliases[a] = n
	}
	return m
}

// Handle registers h under name. usage is the text --help prints: the
// synopsis first, then a description of arguments and flags.
func (m *Mux) Handle(name, usage string, h Handler) {
	if name == "" || strings.Contains(name, "/") {
		panic(fmt.Sprintf("hostcmd: bad command name %q", name))
	}
	if _, dup := m.cmds[name]; dup {
		panic(fmt.Sprintf("hostcmd: command %s registered twice", name))
	}
	m.cmds[name] = muxEntry{usage: usage, h: h}
}

// HandleFunc registers f under name.
func (m *Mux) HandleFunc(name, usage string, f func(ctx context.Context, call *Call) int) {
	m.Handle(name, usage, HandlerFunc(f))
}

// Alias makes alias another name of the command name.
func (m *Mux) Alias(alias, name string) { m.aliases[alias] = name }

// Names lists the registered commands and the aliases of registered
// commands, sorted: the links a computer needs.
func (m *Mux) Names() []string {
	var out []string
	for n := range m.cmds {
		out = append(out, n)
	}
	for a, n := range m.aliases {
		if _, ok := m.cmds[n]; ok {
			out = append(out, a)
		}
	}
	sort.Strings(out)
	return out
}

// Serve dispatches the call. The handler sees call.Command as the
// command's own name, not the alias it was called by.
func (m *Mux) Serve(ctx context.Context, call *Call) int {
	name := call.Command
	if n, ok := m.aliases[name]; ok {
		name = n
	}
	e, ok := m.cmds[name]
	if !ok {
		f, _ := ParseCommon(call.Args)
		return Write(call.Stdout, Fail(call.Command, "", CodeNotAvailable,
			call.Command+" is not a host command of this den"), f)
	}
	call.Command = name
	if wantsHelp(call.Args) {
		io.WriteString(call.Stderr, strings.TrimRight(e.usage, "\n")+"\n"+commonHelp)
		return ExitOK
	}
	return e.h.Serve(ctx, call)
}

// commonHelp describes what every command shares.
const commonHelp = `
Common flags:
  --compact   print the JSON envelope on one line
  -q, --quiet print only the data (or only the error)
  --help      print this help

Output: {"ok","tool","action","data"|"error":{"code","message"},"timestamp"}
Exit codes: 0 ok, 1 error, 2 invalid arguments, 3 denied, 4 not available.
`

func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if a == "--help" {
			return true
		}
	}
	return false
}
