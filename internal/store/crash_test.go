package store

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"den.dev/den/internal/llm"
)

// crashEnv names the database a TestCrashChild process appends to.
const crashEnv = "DEN_STORE_CRASH_CHILD_DB"

// TestCrashChild is not a test: it is the process TestKillMidAppend
// starts and kills. Two goroutines append turns to a session each,
// forever, and print "ack <session> <n>" once Append has returned for
// turn n.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("helper process of TestKillMidAppend")
	}
	s, err := Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			ctx := context.Background()
			sess, err := s.CreateSession(ctx, "crash", "m")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			for n := 0; ; n++ {
				msgs := crashTurn(n)
				if _, err := s.Append(ctx, sess.ID, msgs...); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(2)
				}
				mu.Lock()
				fmt.Printf("ack %s %d\n", sess.ID, n)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
}

// crashTurn is turn n of a crash-test session: an assistant message
// with three calls and the results, with some bulk so that a write
// spans several pages.
func crashTurn(n int) []llm.Message {
	msgs := turn(fmt.Sprintf("turn %d", n), 3)
	msgs[0].Parts = append(msgs[0].Parts, &llm.Text{Text: strings.Repeat("x", 5000)})
	return msgs
}

// TestKillMidAppend kills a process that appends in a loop with
// SIGKILL, then checks what it left: every acknowledged turn is there,
// every turn is whole or absent, each session is one intact chain, and
// the tool-call index matches.
func TestKillMidAppend(t *testing.T) {
	if os.Getenv(crashEnv) != "" {
		t.Skip("in the helper process")
	}
	path := filepath.Join(t.TempDir(), "den.db")
	for round := range 3 {
		acked := runAndKill(t, path, 100)
		checkAfterCrash(t, path, acked)
		t.Logf("round %d: acked %v", round, acked)
	}
}

// runAndKill starts TestCrashChild on path, waits for n acks, kills it
// with SIGKILL, and returns the last acked turn of each session.
func runAndKill(t *testing.T, path string, n int) map[string]int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill() // on early returns

	acked := map[string]int{}
	sc := bufio.NewScanner(out)
	for got := 0; got < n && sc.Scan(); got++ {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[0] != "ack" {
			t.Fatalf("child said %q", sc.Text())
		}
		k, err := strconv.Atoi(f[2])
		if err != nil {
			t.Fatal(err)
		}
		acked[f[1]] = k
	}
	if len(acked) == 0 {
		t.Fatalf("child acked nothing; stderr:\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v, not killed; stderr:\n%s", err, stderr.String())
	}
	return acked
}

func checkAfterCrash(t *testing.T, path string, acked map[string]int) {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkIntegrity(t, s.db)
	ctx := context.Background()
	sessions, err := s.ListSessions(ctx, "crash", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, sess := range sessions {
		id := sess.ID
		last, ok := acked[id]
		if !ok {
			last = -1 // none acknowledged in this round
		}
		p, err := s.Path(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(p)%2 != 0 {
			t.Fatalf("session %s: %d messages, a turn is cut", id, len(p))
		}
		turns := len(p) / 2
		if turns < last+1 {
			t.Errorf("session %s: %d turns stored, but turn %d was acknowledged", id, turns, last)
		}
		if n := count(t, s, `SELECT count(*) FROM messages WHERE session_id = ?`, id); n != len(p) {
			t.Errorf("session %s: %d messages, %d on the path", id, n, len(p))
		}
		for k := range turns {
			want := crashTurn(k)
			a, r := p[2*k].Message, p[2*k+1].Message
			if a.Role != llm.Assistant || len(a.Parts) != len(want[0].Parts) ||
				a.Parts[0].(*llm.Text).Text != want[0].Parts[0].(*llm.Text).Text {
				t.Fatalf("session %s: message %d is not turn %d's call: %+v", id, 2*k, k, a)
			}
			if r.Role != llm.User || len(r.Parts) != 3 {
				t.Fatalf("session %s: message %d is not turn %d's results: %+v", id, 2*k+1, k, r)
			}
		}
		if n := count(t, s, `SELECT count(*) FROM tool_calls WHERE session_id = ? AND result_message_id IS NOT NULL`, id); n != 3*turns {
			t.Errorf("session %s: %d answered calls indexed, want %d", id, n, 3*turns)
		}
		if n := count(t, s, `SELECT count(*) FROM tool_calls WHERE session_id = ?`, id); n != 3*turns {
			t.Errorf("session %s: %d calls indexed, want %d", id, n, 3*turns)
		}
	}
}
