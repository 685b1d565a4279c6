package clitest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/chromedp"

	"den.dev/den/internal/llm"
	"den.dev/den/internal/llm/llmtest"
	"den.dev/den/internal/store"
)

// longSession writes a session of n messages into d's store before den
// serve starts, and returns its id.
func longSession(t testing.TB, d *Den, n int) string {
	t.Helper()
	st, err := store.Open(filepath.Join(d.Home, "den.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	if err := st.EnsureAgent(ctx, "default"); err != nil {
		t.Fatal(err)
	}
	s, err := st.CreateSession(ctx, "default", "anthropic/claude-sonnet-5-5")
	if err != nil {
		t.Fatal(err)
	}
	msgs := make([]llm.Message, 0, 500)
	for i := range n {
		if i%2 == 0 {
			msgs = append(msgs, llm.Message{Role: llm.User, Parts: []llm.Part{&llm.Text{Text: fmt.Sprintf("question %d: what about this?", i)}}})
		} else {
			msgs = append(msgs, llm.Message{Role: llm.Assistant, Parts: []llm.Part{&llm.Text{Text: fmt.Sprintf(
				"answer %d: here is **some** text with `code` and a list:\n\n- one\n- two\n\n```go\nfmt.Println(%d)\n```", i, i)}}})
		}
		if len(msgs) == cap(msgs) || i == n-1 {
			if _, err := st.Append(ctx, s.ID, msgs...); err != nil {
				t.Fatal(err)
			}
			msgs = msgs[:0]
		}
	}
	return s.ID
}

// TestWebLongSession: a 10,000-message session opens on its latest
// messages, and scrolling up loads older pages in order, none twice.
func TestWebLongSession(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "")
	id := longSession(t, d, 10_000)
	p := startServe(t, d, llmtest.NewAnthropic(t))
	b := openBrowser(t, p, phoneScreen)
	b.run(chromedp.Navigate(p.url + "/#" + id))
	b.waitText(".msg.assistant .md", "answer 9999:")
	// Scroll to the top until four older pages (100 questions) are in.
	var texts []string
	for deadline := time.Now().Add(60 * time.Second); ; {
		b.exec(`document.querySelector(".messages").scrollTop = 0`)
		time.Sleep(100 * time.Millisecond)
		texts = eval[[]string](b, `[...document.querySelectorAll(".msg.user .bubble")].map(e => e.textContent)`)
		if len(texts) >= 125 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d questions after scrolling up for a minute", len(texts))
		}
	}
	seen := map[string]bool{}
	prev := -1
	for _, s := range texts {
		var n int
		fmt.Sscanf(s, "question %d:", &n)
		if seen[s] || n <= prev {
			t.Fatalf("question %q out of order or twice (after %d)", s, prev)
		}
		seen[s], prev = true, n
	}
	if !strings.HasPrefix(texts[len(texts)-1], "question 9998:") {
		t.Errorf("the newest question is %q", texts[len(texts)-1])
	}
	b.shot("long")
}

// BenchmarkWebFigures measures the web face's figures in Chromium:
// navigation to a usable composer, what the first load transfers, a
// 10,000-message session's opening and the heap it takes, and the
// main-thread time a streamed 50,000-character answer costs.
//
//	go test ./internal/cli/clitest -run '^$' -bench WebFigures -benchtime 1x
func BenchmarkWebFigures(b *testing.B) {
	d := newDen(b)
	serveConfig(b, d, "")
	id := longSession(b, d, 10_000)
	long := strings.Repeat("A streamed answer with **bold** words and `code`, and more text.\n\n", 800)[:49_990] + " THE END."
	p := startServe(b, d, llmtest.NewAnthropic(b, llmtest.Turn{Text: long}))
	br := openBrowser(b, p, desktopScreen)
	for b.Loop() {
		// A fresh load, with the browser's cache off.
		start := time.Now()
		br.run(chromedp.Navigate(p.url+"/"), chromedp.WaitVisible(chromedp.CSS(`#composer, .welcome`)))
		ready := time.Since(start)
		// What a first load transfers: every file the page fetched, as
		// den sends it to a browser that takes gzip.
		urls := eval[[]string](br, `[location.href, ...performance.getEntriesByType("resource").map(r => r.name)]`)
		b.ReportMetric(float64(ready.Microseconds())/1000, "ms-to-composer")
		b.ReportMetric(float64(transferred(b, p, urls))/1024, "KB-first-load")

		start = time.Now()
		br.run(chromedp.Navigate(p.url + "/#" + id))
		br.waitText(".msg.assistant .md", "answer 9999:")
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "ms-open-10k")
		// Scrolling up through older pages: the longest task.
		br.exec(`window.denLong = 0; new PerformanceObserver((l) => { for (const e of l.getEntries()) denLong = Math.max(denLong, e.duration) }).observe({type: "longtask"})`)
		for range 10 {
			br.exec(`document.querySelector(".messages").scrollTop = 0`)
			time.Sleep(150 * time.Millisecond)
		}
		b.ReportMetric(eval[float64](br, `window.denLong`), "ms-longest-task-scrolling")
		heap := eval[float64](br, `performance.memory ? performance.memory.usedJSHeapSize : 0`)
		b.ReportMetric(heap/(1<<20), "MB-heap-10k")

		// The streamed answer, in a new chat.
		br.run(chromedp.Navigate(p.url+"/"), chromedp.WaitVisible(chromedp.CSS(`.welcome .primary`)))
		br.newChat()
		before := br.taskTime()
		br.send("stream a long one")
		br.waitText(".msg.assistant .md", "THE END.")
		time.Sleep(200 * time.Millisecond)
		b.ReportMetric((br.taskTime()-before)*1000, "ms-main-thread-50k")
	}
}

// taskTime is the main thread's busy time so far, in seconds.
func (b *browser) taskTime() float64 {
	b.t.Helper()
	m, err := chromedp.Run(b.ctx, func(ctx context.Context, t *chromedp.Target) (float64, error) {
		if _, err := cdp.Call(ctx, t, performance.Enable, performance.EnableParams{}); err != nil {
			return 0, err
		}
		r, err := cdp.Call(ctx, t, performance.GetMetrics, cdp.Empty{})
		if err != nil {
			return 0, err
		}
		for _, m := range r.Metrics {
			if m.Name == "TaskDuration" {
				return m.Value, nil
			}
		}
		return 0, fmt.Errorf("no TaskDuration metric")
	})
	if err != nil {
		b.t.Fatal(err)
	}
	return m
}

// transferred is the bytes den sends for urls (its own, not the API's)
// to a browser that takes gzip: bodies and headers.
func transferred(b *testing.B, p *daemonProc, urls []string) int {
	total := 0
	seen := map[string]bool{}
	for _, u := range urls {
		u, _, _ = strings.Cut(u, "#")
		if seen[u] || !strings.HasPrefix(u, p.url) || strings.Contains(u, "/api/") {
			continue
		}
		seen[u] = true
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("Authorization", "Bearer "+serveToken)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var hdr bytes.Buffer
		resp.Header.Write(&hdr)
		total += len(body) + hdr.Len()
	}
	return total
}
