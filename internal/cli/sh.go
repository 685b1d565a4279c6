package cli

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/sandbox"
)

func shCmd(g *globals) *cobra.Command {
	f := &computerFlags{}
	c := &cobra.Command{
		Use:   "sh",
		Short: "An interactive login shell in an agent's computer",
		Long: `Open an interactive login shell (bash when installed, else sh) on a
terminal inside an agent's computer, with the session's folders.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			comp, o, stop, err := f.openWithHost(ctx, g)
			if err != nil {
				return err
			}
			defer stop()
			ptmx, tty, err := pty.Open()
			if err != nil {
				return fmt.Errorf("sh: open a terminal: %w", err)
			}
			defer ptmx.Close()
			in, isTerm := g.stdin.(*os.File)
			isTerm = isTerm && term.IsTerminal(int(in.Fd()))
			if isTerm {
				if ws, err := pty.GetsizeFull(in); err == nil {
					pty.Setsize(ptmx, ws)
				}
			}
			env := append(computer.BaseEnv(f.session), "TERM="+termName())
			// A login shell that takes the terminal as its controlling
			// one (setsid -c), so that job control and ^C work.
			script := `if command -v bash >/dev/null 2>&1; then s=bash; else s=sh; fi
if command -v setsid >/dev/null 2>&1; then exec setsid -c "$s" -l; fi
exec "$s" -l`
			proc, cleanup, err := comp.StartRaw(ctx, f.session, o, &sandbox.Cmd{
				Args: []string{"/bin/sh", "-c", script}, Env: env, Dir: sandbox.GuestWorkspace,
				Stdin: tty, Stdout: tty, Stderr: tty,
			})
			tty.Close()
			if err != nil {
				return err
			}
			defer cleanup()
			if isTerm {
				old, err := term.MakeRaw(int(in.Fd()))
				if err == nil {
					defer term.Restore(int(in.Fd()), old)
				}
				winch := make(chan os.Signal, 1)
				signal.Notify(winch, syscall.SIGWINCH)
				resized := make(chan struct{})
				go func() {
					defer close(resized)
					for range winch {
						if ws, err := pty.GetsizeFull(in); err == nil {
							pty.Setsize(ptmx, ws)
						}
					}
				}()
				defer func() {
					signal.Stop(winch) // no send after it returns
					close(winch)
					<-resized
				}()
			}
			stdin, stopStdin := interruptible(g.stdin)
			copied := make(chan struct{})
			go func() {
				defer close(copied)
				io.Copy(ptmx, stdin)
			}()
			defer func() {
				stopStdin()
				<-copied
			}()
			done := make(chan struct{})
			go func() {
				io.Copy(g.stdout, ptmx)
				close(done)
			}()
			werr := proc.Wait()
			// Everything inside is gone, so the terminal's other end is
			// closed: read what it still holds before closing ours.
			select {
			case <-done:
			case <-time.After(2 * time.Second):
			}
			ptmx.Close()
			<-done
			if ee, ok := werr.(interface{ ExitCode() int }); ok && ee.ExitCode() > 0 {
				return exitError{ee.ExitCode()}
			}
			return nil
		},
	}
	f.add(c, true)
	return c
}

func termName() string {
	if t := os.Getenv("TERM"); t != "" && t != "dumb" {
		return t
	}
	return "xterm-256color"
}
