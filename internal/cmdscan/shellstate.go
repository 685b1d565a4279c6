package cmdscan

import (
	"mvdan.cc/sh/v3/syntax"
)

// stateBuiltins change the shell that runs them: its directory,
// variables, options, functions, aliases or what it runs next. A
// command using one must run in the persistent shell, in call order.
var stateBuiltins = map[string]bool{
	"cd": true, "pushd": true, "popd": true, "export": true, "unset": true, "set": true,
	"shopt": true, "alias": true, "unalias": true, "source": true, ".": true, "eval": true,
	"exec": true, "umask": true, "ulimit": true, "trap": true, "hash": true, "readonly": true,
	"declare": true, "typeset": true, "local": true, "enable": true, "builtin": true,
	"command": true, "shift": true, "getopts": true, "read": true, "mapfile": true,
	"readarray": true, "history": true, "bind": true, "complete": true, "exit": true,
	"logout": true, "disown": true, "wait": true, "bg": true, "fg": true, "jobs": true,
	"kill": true,
}

// ChangesShell reports whether script may change the state of the shell
// that runs it — its directory, variables, options, functions, aliases,
// jobs — rather than only what it reads and prints: a cd or an export,
// an assignment without a command, a function definition. A script that
// does not parse may. den runs such a command in the persistent shell,
// in call order, even when it is otherwise read-only: run beside others
// in a fresh process, its change would be lost.
func ChangesShell(script string) bool {
	f, err := parse(script)
	if err != nil {
		return true
	}
	changes := false
	syntax.Walk(f, func(n syntax.Node) bool {
		if changes {
			return false
		}
		switch n := n.(type) {
		case *syntax.FuncDecl:
			changes = true
		case *syntax.DeclClause:
			changes = true
		case *syntax.CallExpr:
			if len(n.Args) == 0 && len(n.Assigns) > 0 {
				changes = true // X=1
				break
			}
			if len(n.Args) > 0 {
				if w := wordArg(n.Args[0]); !w.static || stateBuiltins[w.val] {
					changes = true
				}
			}
		}
		return true
	})
	return changes
}
