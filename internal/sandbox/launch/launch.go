// Package launch starts den's long-lived child processes (bwrap,
// proot, the id-mapping helper) from one OS thread that
// lives as long as den does.
//
// Those children are started with Pdeathsig (bwrap also with
// --die-with-parent), so that they die with den. But the kernel sends
// that signal when the thread that forked the child exits, not when
// den does, and the Go runtime ends threads while den runs: a
// goroutine that locks its thread and returns without unlocking it
// takes the thread with it (internal/hostfs reads files as the
// computer's root that way, so that no other goroutine ever runs with
// those credentials). Any child forked from such a thread earlier —
// the runtime reuses threads for whatever goroutine is ready — would
// be killed at a random moment. Forking only from a thread that is
// locked to a goroutine that never returns rules that out.
//
// The launcher thread is the process's: one, made on first use. It
// runs nothing but the start of each child, one at a time.
package launch

import (
	"os/exec"
	"runtime"
	"sync"
)

// thread is the launcher: a goroutine locked to its OS thread for the
// life of the process, running what is sent to it. It is package state
// because the property it gives — a parent thread that outlives every
// child — belongs to the process, not to any one caller.
var thread = sync.OnceValue(func() chan<- func() {
	ch := make(chan func())
	go func() {
		runtime.LockOSThread() // never unlocked: the thread must outlive every child
		for f := range ch {
			f()
		}
	}()
	return ch
})

// Start starts cmd (as cmd.Start does) from the launcher thread.
func Start(cmd *exec.Cmd) error {
	done := make(chan error, 1)
	thread() <- func() { done <- cmd.Start() }
	return <-done
}
