package terminal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/sandbox"
)

// Runtime starts a process of its own in a session's computer;
// *session.Runtime is one. The error for a session that does not exist
// wraps store.ErrNotFound. cleanup kills what is left of the process
// and releases what it holds.
type Runtime interface {
	StartRaw(ctx context.Context, sessionID string, cmd *sandbox.Cmd) (proc sandbox.Process, cleanup func(), err error)
}

// Handler serves the terminal route.
type Handler struct {
	RT  Runtime
	Log *slog.Logger // nil: nothing is logged
}

const (
	// ReadLimit bounds one message from the client; a longer one closes
	// the socket with status 1009.
	ReadLimit = 64 << 10
	// MaxSize bounds a resize's cols and rows.
	MaxSize = 1000

	// drainWait is how long, once the shell has ended, den reads what
	// the terminal still holds before it closes it.
	drainWait = 2 * time.Second
	// flushWait is how long, after that, a client may take to read the
	// last output before the socket is closed without the exit message.
	flushWait = 10 * time.Second
)

// script runs a login shell (bash when installed, else sh) that takes
// the terminal as its controlling one (setsid -c), so that job control
// and ^C work: as den sh does.
const script = `if command -v bash >/dev/null 2>&1; then s=bash; else s=sh; fi
if command -v setsid >/dev/null 2>&1; then exec setsid -c "$s" -l; fi
exec "$s" -l`

// Serve answers GET /api/v1/sessions/{id}/terminal (see the package
// doc). An error is returned only before the upgrade, for the server to
// answer as JSON: ErrNotWebSocket, or StartRaw's (a missing session
// wraps store.ErrNotFound). From the upgrade on, Serve answers itself
// and returns nil once the shell and every goroutine are gone.
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	if !isUpgrade(r) {
		return ErrNotWebSocket
	}
	master, tty, err := openPTY()
	if err != nil {
		return err
	}
	if err := setSize(master, 80, 24); err != nil {
		master.Close()
		tty.Close()
		return err
	}
	proc, cleanup, err := h.RT.StartRaw(r.Context(), id, &sandbox.Cmd{
		Args: []string{"/bin/sh", "-c", script}, Env: env(id), Dir: sandbox.GuestWorkspace,
		Stdin: tty, Stdout: tty, Stderr: tty,
	})
	tty.Close()
	if err != nil {
		master.Close()
		return fmt.Errorf("terminal: start a shell in session %s: %w", id, err)
	}
	log := h.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("session", id)
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		// Accept has answered the request (a bad handshake, a foreign
		// Origin).
		master.Close()
		cleanup()
		log.Info("terminal: upgrade refused", "err", err)
		return nil
	}
	t := &term{conn: conn, master: master, proc: proc, log: log}
	// r.Context() still ends when the server's base context does; a
	// client that goes away is noticed by the socket's reads and
	// writes instead.
	t.run(r.Context(), cleanup)
	return nil
}

// isUpgrade reports whether r asks for a WebSocket (Accept checks the
// rest of the handshake).
func isUpgrade(r *http.Request) bool {
	return hasToken(r.Header, "Connection", "upgrade") && hasToken(r.Header, "Upgrade", "websocket")
}

func hasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for t := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}

// env is the shell's environment: the computer's, on a terminal.
func env(session string) []string {
	e := computer.BaseEnv(session)
	for i, kv := range e {
		if strings.HasPrefix(kv, "TERM=") {
			e = append(e[:i], e[i+1:]...)
			break
		}
	}
	return append(e, "TERM=xterm-256color")
}

// term is one open terminal.
type term struct {
	conn   *websocket.Conn
	master *os.File
	proc   sandbox.Process
	log    *slog.Logger
}

// run carries the terminal until the shell ends or the client goes
// away, then tears everything down: it returns once the shell's
// processes, the socket and its three goroutines are gone.
func (t *term) run(ctx context.Context, cleanup func()) {
	t.conn.SetReadLimit(ReadLimit)
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	exited := make(chan error, 1)
	wg.Go(func() { exited <- t.proc.Wait() })
	outDone := make(chan struct{})
	outFail := make(chan error, 1) // the socket refused output: the client is gone
	wg.Go(func() {
		defer close(outDone)
		if err := t.output(ctx); err != nil {
			outFail <- err
		}
	})
	inFail := make(chan error, 1)
	wg.Go(func() { inFail <- t.input(ctx) })

	select {
	case werr := <-exited:
		cleanup() // nothing left to kill: release what the process held
		t.exit(ctx, cancel, werr, outDone)
	case err := <-inFail:
		t.hangUp(err, cleanup)
	case err := <-outFail:
		t.hangUp(err, cleanup)
	}
	// Whichever way it ended, nothing is left for a goroutine to wait
	// on: the terminal and the socket are closed, the shell is gone.
	t.master.Close()
	t.conn.CloseNow()
	cancel()
	wg.Wait()
}

// output copies what the shell writes to the socket, one message per
// read of the terminal, each written before the next read (a slow
// client slows the shell rather than den's memory). It returns nil when
// the terminal ends (the shell's side closed, or den closed its own),
// and the socket's error when a write fails.
func (t *term) output(ctx context.Context) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := t.master.Read(buf)
		if n > 0 {
			if werr := t.conn.Write(ctx, websocket.MessageBinary, buf[:n]); werr != nil {
				return werr
			}
		}
		if err != nil {
			// EIO once every process holding the shell's side is
			// gone; os.ErrClosed once den closed its own.
			return nil
		}
	}
}

// input types what the client sends into the terminal and applies its
// control messages, until the socket or the terminal fails or a
// message is not one the protocol has.
func (t *term) input(ctx context.Context) error {
	for {
		typ, b, err := t.conn.Read(ctx)
		if err != nil {
			return err
		}
		if typ == websocket.MessageText {
			if err := t.control(b); err != nil {
				return err
			}
			continue
		}
		if _, err := t.master.Write(b); err != nil {
			return fmt.Errorf("terminal: write to the terminal: %w", err)
		}
	}
}

// errBadMessage is input's error for a text message the protocol does
// not have; the socket closes with status 1008.
var errBadMessage = errors.New("bad control message")

// control applies a text message from the client.
func (t *term) control(b []byte) error {
	var m struct {
		Type string `json:"type"`
		Cols int    `json:"cols"`
		Rows int    `json:"rows"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("%w: not a JSON object", errBadMessage)
	}
	if m.Type != "resize" {
		return fmt.Errorf("%w: unknown type %q", errBadMessage, m.Type)
	}
	if m.Cols < 1 || m.Cols > MaxSize || m.Rows < 1 || m.Rows > MaxSize {
		return fmt.Errorf("%w: resize to %dx%d: cols and rows must be in 1..%d", errBadMessage, m.Cols, m.Rows, MaxSize)
	}
	return setSize(t.master, m.Cols, m.Rows)
}

// exit ends the terminal after the shell ended: what the terminal still
// holds is sent, then the exit message, then the socket closes
// normally.
func (t *term) exit(ctx context.Context, cancel context.CancelFunc, werr error, outDone <-chan struct{}) {
	// Everything inside is gone, so the terminal's other end is closed:
	// read what it still holds before closing den's end.
	wait(outDone, drainWait)
	t.master.Close()
	if !wait(outDone, flushWait) {
		// A client that does not read its output: canceling closes the
		// socket, which ends the write.
		t.log.Info("terminal: the client did not read the shell's last output")
		cancel()
		<-outDone
		return
	}
	msg, _ := json.Marshal(struct {
		Type string `json:"type"`
		Code int    `json:"code"`
	}{"exit", exitCode(werr)})
	wctx, wcancel := context.WithTimeout(ctx, flushWait)
	defer wcancel()
	if err := t.conn.Write(wctx, websocket.MessageText, msg); err != nil {
		t.log.Debug("terminal: exit message", "err", err)
		return
	}
	if err := t.conn.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.log.Debug("terminal: close", "err", err)
	}
}

// hangUp ends the terminal after the client went away or broke the
// protocol: the shell's processes are killed first, then the socket is
// closed, with 1008 and the reason for a message the protocol does not
// have (a message over the limit was answered with 1009 already).
func (t *term) hangUp(err error, cleanup func()) {
	t.master.Close()
	cleanup()
	if errors.Is(err, errBadMessage) {
		reason := err.Error()
		if len(reason) > 120 { // a close frame's reason is at most 123 bytes
			reason = reason[:120]
		}
		t.conn.Close(websocket.StatusPolicyViolation, reason)
		return
	}
	t.log.Debug("terminal: client gone", "err", err)
}

// wait reports whether done closed within d.
func wait(done <-chan struct{}, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-done:
		return true
	case <-tm.C:
		return false
	}
}

// exitCode is the shell's exit status from Wait's error: 128+N for a
// signal N, -1 when it is not known.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return -1
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}
