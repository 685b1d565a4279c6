package hostcmd_test

import (
	"context"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"den.dev/den/internal/hostcmd"
	"den.dev/den/internal/hostcmd/wire"
)

// answer is what den answered a rawCall.
type answer struct {
	stderr string
	code   int   // -1 when no exit frame came
	err    error // why not
}

// rawCall is a client in this process that speaks the wire protocol
// itself: it sends a request for args, then chunk as stdin n times
// (shared, so that a flood of clients costs this process little
// memory), and returns den's answer. It returns once its writer has
// stopped too.
func rawCall(path string, args []string, chunk []byte, n int) answer {
	conn, err := net.Dial("unix", path)
	if err != nil {
		return answer{code: -1, err: err}
	}
	wrote := make(chan struct{})
	defer func() { conn.Close(); <-wrote }()
	go func() {
		defer close(wrote)
		req := wire.AppendFrame(nil, wire.TypeRequest, wire.AppendRequest(nil, wire.Request{Args: args, Cwd: "/"}))
		if _, err := conn.Write(req); err != nil {
			return
		}
		h := wire.Header(wire.TypeStdin, len(chunk))
		for range n {
			bufs := net.Buffers{h[:], chunk}
			if _, err := bufs.WriteTo(conn); err != nil {
				return
			}
		}
		eof := wire.Header(wire.TypeStdinEOF, 0)
		conn.Write(eof[:])
	}()
	return readAnswer(conn)
}

// readAnswer reads den's frames up to the exit status. It reads
// unbuffered: a flood of clients holds no read buffers.
func readAnswer(conn io.Reader) answer {
	r := wire.NewReader(conn)
	var stderr []byte
	for {
		typ, p, err := r.Next()
		if err != nil {
			return answer{stderr: string(stderr), code: -1, err: err}
		}
		switch typ {
		case wire.TypeStderr:
			stderr = append(stderr, p...)
		case wire.TypeExit:
			code, err := wire.ParseExit(p)
			if err != nil {
				code = -1
			}
			return answer{stderr: string(stderr), code: code, err: err}
		}
	}
}

func heapInuse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapInuse
}

// waitGoroutines waits for the goroutine count to come back to base.
func waitGoroutines(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > base {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The attack that found the problem: 300 connections, each streaming
// 4 MiB of stdin to a handler that takes its time and never reads it.
// den's heap stays small (16 calls run, each with a bounded window;
// the rest are refused without their stdin being read), the log is not
// flooded, and once the flood is over no goroutine of it is left.
func TestFlood(t *testing.T) {
	const (
		clients = 300
		stdin   = 4 << 20
		bound   = 16 << 20 // the code before limits grew by 145-170 MiB
	)
	var running, peak atomic.Int32
	l, lg := listen(t, hostcmd.HandlerFunc(func(ctx context.Context, c *hostcmd.Call) int {
		n := running.Add(1)
		defer running.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
		}
		return 0
	}))
	chunk := make([]byte, 32<<10)
	goroutines := runtime.NumGoroutine()
	base := heapInuse()

	stop, sampled := make(chan struct{}), make(chan uint64)
	go func() {
		top := uint64(0)
		for {
			top = max(top, heapInuse())
			select {
			case <-stop:
				sampled <- top
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	start := time.Now()
	answers := make([]answer, clients)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Go(func() { answers[i] = rawCall(l.Path(), []string{"den-model", "run"}, chunk, stdin/len(chunk)) })
	}
	wg.Wait()
	close(stop)
	top := <-sampled

	ran, refused := 0, 0
	for _, a := range answers {
		switch {
		case a.code == 0:
			ran++
		case a.code == 1 && strings.Contains(a.stderr, "too many host commands running at once"):
			refused++
		default:
			t.Errorf("answer %+v", a)
		}
	}
	grown := int64(top) - int64(base)
	t.Logf("heap in use grew by %.1f MiB at most (from %.1f MiB); %d calls ran (%d at once), %d refused",
		float64(grown)/(1<<20), float64(base)/(1<<20), ran, peak.Load(), refused)
	if grown > bound {
		t.Errorf("heap in use grew by %d MiB during the flood (bound %d MiB)", grown>>20, bound>>20)
	}
	if p := peak.Load(); p > 16 {
		t.Errorf("%d calls ran at once", p)
	}
	if n, most := strings.Count(lg.String(), "refused"), int(time.Since(start)/time.Second)+1; n > most {
		t.Errorf("%d refusals logged, at most one a second:\n%s", n, lg)
	}
	waitGoroutines(t, goroutines)
}
