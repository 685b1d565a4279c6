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
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/performance"
	"github.com/chromedp/cdproto/storage"
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
// messages; scrolling up loads older pages in order, none twice, while
// the page holds a bounded window of them and keeps in view what the
// reader was looking at; scrolling back down brings the latest again.
func TestWebLongSession(t *testing.T) {
	d := newDen(t)
	serveConfig(t, d, "")
	id := longSession(t, d, 10_000)
	p := startServe(t, d, llmtest.NewAnthropic(t))
	b := openBrowser(t, p, phoneScreen)
	b.run(chromedp.Navigate(p.url + "/#" + id))
	b.waitText(".msg.assistant .md", "answer 9999:")
	// questions are the numbers of the questions on the page, checked
	// to be in order and each once.
	questions := func() []int {
		t.Helper()
		texts := eval[[]string](b, `[...document.querySelectorAll(".msg.user .bubble")].map(e => e.textContent)`)
		var ns []int
		for _, s := range texts {
			var n int
			if _, err := fmt.Sscanf(s, "question %d:", &n); err != nil {
				t.Fatalf("a question reads %q", s)
			}
			if len(ns) > 0 && n != ns[len(ns)-1]+2 {
				t.Fatalf("question %d follows question %d", n, ns[len(ns)-1])
			}
			ns = append(ns, n)
		}
		if n := eval[int](b, `document.querySelectorAll(".msg").length`); n > 160 {
			t.Fatalf("%d messages on the page", n)
		}
		return ns
	}
	// Up, until question 9500 is on the page: 500 messages, ten pages.
	for deadline := time.Now().Add(90 * time.Second); ; {
		first := eval[string](b, `document.querySelector(".msg[data-id]").dataset.id`)
		// Scroll to the top until the window moves (a render may bring
		// the page back down to the newest messages first).
		for moved := time.Now().Add(10 * time.Second); time.Now().Before(moved); time.Sleep(30 * time.Millisecond) {
			now := eval[string](b, `(() => { const id = document.querySelector(".msg[data-id]").dataset.id;
				if (id === "`+first+`") document.querySelector(".messages").scrollTop = 0; return id })()`)
			if now != first {
				break
			}
		}
		time.Sleep(50 * time.Millisecond)
		// What was first in view is still in view: the page did not jump.
		inView := eval[bool](b, `(() => { const el = document.querySelector(".messages"); const m = document.querySelector('.msg[data-id="`+first+`"]');
			if (!m) return false; const a = m.getBoundingClientRect(), c = el.getBoundingClientRect(); return a.bottom > c.top && a.top < c.bottom })()`)
		if !inView {
			b.shot("jumped")
			t.Fatalf("after moving up, the message that was in view is not")
		}
		if qs := questions(); qs[0] <= 9500 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page reached only question %d scrolling up", questions()[0])
		}
	}
	b.waitText(".latest", "Jump to the latest")
	b.shot("long-up")
	// Down again, until the latest answer is back.
	for deadline := time.Now().Add(90 * time.Second); ; {
		b.exec(`(() => { const el = document.querySelector(".messages"); el.scrollTop = el.scrollHeight })()`)
		time.Sleep(100 * time.Millisecond)
		if qs := questions(); qs[len(qs)-1] == 9998 {
			break
		}
		if time.Now().After(deadline) {
			qs := questions()
			t.Fatalf("the page came down only to question %d", qs[len(qs)-1])
		}
	}
	b.waitText(".msg.assistant .md", "answer 9999:")
	if n := eval[int](b, `document.querySelectorAll(".latest").length`); n != 0 {
		t.Errorf("Jump to the latest is still shown at the latest")
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
		// A first visit (signed in): no cache, no service worker, nothing
		// stored.
		br.run(chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			if _, err := cdp.Call(ctx, tg, storage.ClearDataForOrigin, storage.ClearDataForOriginParams{Origin: p.url, StorageTypes: "service_workers,cache_storage,local_storage,indexeddb"}); err != nil {
				return err
			}
			_, err := cdp.Call(ctx, tg, network.ClearBrowserCache, cdp.Empty{})
			return err
		}))
		start := time.Now()
		br.run(chromedp.Navigate(p.url+"/"), chromedp.WaitVisible(chromedp.CSS(`#composer, .welcome`)))
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, "ms-to-composer-cold")
		// A later visit: the app from the browser's cache, revalidated.
		start = time.Now()
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
