package ctxwin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"den.dev/den/internal/llm"
)

// simulation drives Build, Decide and Compact the way the loop does,
// over a session whose tool outputs are large.
type simulation struct {
	tb         testing.TB
	h          hist
	summaries  []Summary
	w          *Window
	saver      *fakeSaver
	providerTo float64 // the provider counts this many tokens per estimated one

	requests, compactions, runCompactions, maxRunCompactions, summaryCalls int
	peak, peakTrue                                                         int
	rawBytes                                                               int64
}

func newSimulation(tb testing.TB, window, maxOutput int) *simulation {
	s := &simulation{tb: tb, saver: &fakeSaver{}, providerTo: 1.1}
	summarize := func(ctx context.Context, msgs []llm.Message) (string, llm.Usage, error) {
		in := textOf(msgs)
		if len(in) > 600_000 {
			return "", llm.Usage{}, &llm.APIError{API: "fake", Status: 400, Message: "prompt is too long"}
		}
		// A summary of about 1500 tokens, whatever it covers.
		return "Summary: " + strings.Join(markers(in), " ") + "\n" + strings.Repeat("Things were done. ", 330),
			llm.Usage{InputTokens: int64(len(in) / 4), OutputTokens: 1500}, nil
	}
	s.w = &Window{Budget: Budget(window, maxOutput), Model: "m", Calibrator: &Calibrator{}, Saver: s.saver, Summarize: summarize,
		System: strings.Repeat("You are den. ", 400), // about 1300 tokens
		Tools:  []llm.Tool{{Name: "shell_execute", Description: strings.Repeat("Run a command. ", 40), Schema: []byte(`{"type":"object"}`)}}}
	return s
}

// request builds the next request as the loop would, compacting when
// told to, and checks that it fits.
func (s *simulation) request() {
	ctx := context.Background()
	for {
		msgs, use, err := s.w.Build(ctx, s.h.msgs, s.summaries)
		if err != nil {
			s.tb.Fatal(err)
		}
		switch s.w.Budget.Decide(use.Estimated, s.runCompactions) {
		case Stop:
			s.tb.Fatalf("request %d: context full at %d tokens after %d compactions this run", s.requests, use.Estimated, s.runCompactions)
		case CompactFirst:
			c, err := s.w.Compact(ctx, s.h.msgs, s.summaries)
			s.summaryCalls += c.Calls
			if errors.Is(err, ErrNothingToCompact) && use.Estimated <= s.w.Budget.Limit {
				break
			}
			if err != nil {
				s.tb.Fatal(err)
			}
			s.summaries = append(s.summaries, c.Summary)
			s.compactions++
			s.runCompactions++
			s.maxRunCompactions = max(s.maxRunCompactions, s.runCompactions)
			continue
		}
		if err := checkRequest(msgs); err != nil {
			s.tb.Fatalf("request %d: %v", s.requests, err)
		}
		// What the provider would count, and what den learns from it.
		reported := int(math.Ceil(float64(use.Raw) * s.providerTo))
		s.w.Calibrator.Observe(s.w.Model, use.Raw, llm.Usage{InputTokens: int64(reported)})
		s.requests++
		s.peak = max(s.peak, use.Estimated)
		s.peakTrue = max(s.peakTrue, reported)
		if reported > s.w.Budget.Window {
			s.tb.Fatalf("request %d: %d tokens, window %d", s.requests, reported, s.w.Budget.Window)
		}
		return
	}
}

func (s *simulation) newRun() { s.runCompactions = 0 }

// output is a tool output of n bytes, different each turn.
func output(turn, n int) string {
	head := fmt.Sprintf("turn-%d: find / -name '*.log' | xargs cat\n", turn)
	return head + strings.Repeat("2025-01-01T00:00:00Z service[42]: request handled in 12ms path=/api/v1/items status=200\n", n/86+1)[:n-len(head)]
}

func (s *simulation) check(name string) {
	for file, n := range s.saver.saves {
		if n != 1 {
			s.tb.Errorf("%s: %s saved %d times", name, file, n)
		}
	}
	if s.peak > s.w.Budget.Limit {
		s.tb.Errorf("%s: peak estimate %d above the limit %d", name, s.peak, s.w.Budget.Limit)
	}
	if s.maxRunCompactions > MaxCompactions {
		s.tb.Errorf("%s: %d compactions in one run", name, s.maxRunCompactions)
	}
	s.tb.Logf("%s: %d requests, %.1f MB of tool output, peak estimate %d (provider count %d) of %d (%.0f%%), "+
		"%d compactions (at most %d in a run, %d summary calls), %d outputs offloaded (%.1f MB), ratio learned %.2f",
		name, s.requests, float64(s.rawBytes)/1e6, s.peak, s.peakTrue, s.w.Budget.Window, float64(s.peakTrue)*100/float64(s.w.Budget.Window),
		s.compactions, s.maxRunCompactions, s.summaryCalls, len(s.saver.saves), float64(s.saver.bytes)/1e6, s.w.Calibrator.Ratio("m"))
}

// TestLongSessionStaysInWindow is the figure: a 200-turn
// session whose raw tool output totals 50 MB (256 KB a turn) stays
// inside a 200K-token window, with no manual action.
func TestLongSessionStaysInWindow(t *testing.T) {
	const turns, outBytes = 200, 256 << 10
	for _, tc := range []struct {
		name          string
		oneRun        bool // one prompt, 200 model turns (den run's limit); else 200 prompts
		assistantText int  // bytes the model writes per turn
	}{
		{"one run, terse model", true, 300},
		{"one run, chatty model", true, 4000},
		{"200 prompts, terse model", false, 300},
		{"200 prompts, chatty model", false, 4000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSimulation(t, 200_000, 64_000)
			for turn := range turns {
				text := fmt.Sprintf("turn-%d: %s", turn, strings.Repeat("I will look at the logs next. ", tc.assistantText/30))
				if tc.oneRun {
					if turn == 0 {
						s.h.user("turn-0: find out why the service is slow; the logs are in /var/log/app")
					}
				} else {
					s.newRun()
					s.h.user(fmt.Sprintf("turn-%d: and now the next log, please", turn))
					s.request()
				}
				s.h.call(text, output(turn, outBytes))
				s.rawBytes += outBytes
				s.request()
				if !tc.oneRun {
					s.h.assistant(text)
				}
			}
			if s.rawBytes < 50<<20 {
				t.Errorf("only %d bytes of output", s.rawBytes)
			}
			s.check(tc.name)
		})
	}
}

// BenchmarkBuild measures one Build over a 200-turn session with 256 KB
// outputs, in its steady state (earlier outputs already offloaded).
func BenchmarkBuild(b *testing.B) {
	s := newSimulation(b, 200_000, 64_000)
	s.h.user("turn-0: go")
	for turn := range 200 {
		s.h.call(fmt.Sprintf("turn-%d: next", turn), output(turn, 256<<10))
		s.request()
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.w.Build(ctx, s.h.msgs, s.summaries); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEstimateText measures the estimator on 256 KB of text.
func BenchmarkEstimateText(b *testing.B) {
	text := output(0, 256<<10)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		EstimateText(text)
	}
}
