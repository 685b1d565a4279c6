package browser

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

// Run with: go test ./internal/browser/ -run '^$' -bench . -benchtime 20x

// reportDurations reports the median and p90 of ds, in ms.
func reportDurations(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(ds[len(ds)/2]), "ms-p50")
	b.ReportMetric(ms(ds[len(ds)*9/10]), "ms-p90")
}

// BenchmarkStart is a start of Chromium on demand: the first action of
// a fresh Browser ("tabs" needs Chromium and no page), and the first
// page (start, tab, load, snapshot).
func BenchmarkStart(b *testing.B) {
	f := newFixture(b)
	for _, c := range []struct {
		name string
		a    Action
	}{
		{"browser", Action{Name: "tabs"}},
		{"first-page", Action{Name: "navigate", URL: f.base + "/login"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var ds []time.Duration
			for b.Loop() {
				b.StopTimer()
				br, err := New(Options{Dir: f.b.o.Dir})
				if err != nil {
					b.Fatal(err)
				}
				s, _ := br.Session("s1", f.env)
				b.StartTimer()
				start := time.Now()
				r, err := s.Do(context.Background(), c.a)
				ds = append(ds, time.Since(start))
				b.StopTimer()
				if err != nil || !r.OK() {
					b.Fatalf("%v %s", err, r.Text())
				}
				br.Close()
				b.StartTimer()
			}
			reportDurations(b, ds)
		})
	}
}

// BenchmarkAction is one action on a local page, Chromium running: a
// click that changes nothing (no snapshot), a click that changes the
// page (with its snapshot), typing a word, and a snapshot.
func BenchmarkAction(b *testing.B) {
	f := newFixture(b)
	f.ok(b, Action{Name: "navigate", URL: f.base + "/buttons"})
	for _, c := range []struct {
		name string
		a    Action
	}{
		{"click-nothing", Action{Name: "click", Selector: "#noop"}},
		{"click-change", Action{Name: "click", Selector: "#inc"}},
		{"type", Action{Name: "type", Selector: "#q", Text: "bicycle"}},
		{"snapshot", Action{Name: "snapshot"}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var ds []time.Duration
			for b.Loop() {
				start := time.Now()
				r, err := f.s.Do(context.Background(), c.a)
				ds = append(ds, time.Since(start))
				if err != nil || !r.OK() {
					b.Fatalf("%v %s", err, r.Text())
				}
			}
			reportDurations(b, ds)
		})
	}
}

// BenchmarkSnapshot describes a typical content page (navigation, a
// 1,500-word article with links and a table, a sidebar, a footer) and
// reports its size in tokens (characters / 4) and pages.
func BenchmarkSnapshot(b *testing.B) {
	f := newFixture(b)
	r := f.ok(b, Action{Name: "navigate", URL: f.base + "/article"})
	var ds []time.Duration
	for b.Loop() {
		start := time.Now()
		r = f.ok(b, Action{Name: "snapshot"})
		ds = append(ds, time.Since(start))
	}
	reportDurations(b, ds)
	b.ReportMetric(float64(len(r.Snapshot.Text))/4, "tokens-page1")
	total := 0
	for _, p := range f.s.current().snap.pages {
		total += len(p)
	}
	b.ReportMetric(float64(total)/4, "tokens-all")
	b.ReportMetric(float64(r.Snapshot.Pages), "pages")
	b.ReportMetric(float64(strings.Count(r.Snapshot.Text, "\n[")), "elements-page1")
}

// BenchmarkMemory measures the idle browser with one tab (on the
// article page): the sum of its processes' PSS and RSS.
func BenchmarkMemory(b *testing.B) {
	f := newFixture(b)
	f.ok(b, Action{Name: "navigate", URL: f.base + "/article"})
	time.Sleep(2 * time.Second) // let start-up work end
	var m Memory
	for b.Loop() {
		var err error
		if m, err = f.b.Memory(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(m.PSS)/(1<<20), "MB-pss")
	b.ReportMetric(float64(m.RSS)/(1<<20), "MB-rss")
	b.ReportMetric(float64(m.Processes), "processes")
}
