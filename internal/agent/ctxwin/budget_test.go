package ctxwin

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBudgetTiers(t *testing.T) {
	for _, tc := range []struct {
		window, maxOutput int
		want              Thresholds
	}{
		{8_000, 4_000, Thresholds{Tier: "tiny", Window: 8_000, MaxOutput: 4_000,
			Offload: 4_000, OffloadTarget: 2_800, Compact: 5_600, CompactTarget: 2_800, Limit: 7_000, SummaryTokens: 1024}},
		{32_768, 8_192, Thresholds{Tier: "small", Window: 32_768, MaxOutput: 8_192,
			Offload: 22_768, OffloadTarget: 17_768, Compact: 26_768, CompactTarget: 16_384, Limit: 30_768, SummaryTokens: 2048}},
		{128_000, 8_000, Thresholds{Tier: "large", Window: 128_000, MaxOutput: 8_000,
			Offload: 88_000, OffloadTarget: 68_000, Compact: 108_000, CompactTarget: 64_000, Limit: 120_000, SummaryTokens: 8000}},
		{100_000, 0, Thresholds{Tier: "medium", Window: 100_000,
			Offload: 80_000, OffloadTarget: 70_000, Compact: 90_000, CompactTarget: 50_000, Limit: 96_000, SummaryTokens: 6250}},
		{200_000, 64_000, Thresholds{Tier: "large", Window: 200_000, MaxOutput: 64_000,
			Offload: 160_000, OffloadTarget: 140_000, Compact: 180_000, CompactTarget: 100_000, Limit: 192_000, SummaryTokens: 8192}},
		{1_048_576, 65_536, Thresholds{Tier: "large", Window: 1_048_576, MaxOutput: 65_536,
			Offload: 1_008_576, OffloadTarget: 988_576, Compact: 1_028_576, CompactTarget: 524_288, Limit: 1_040_576, SummaryTokens: 8192}},
		{0, 0, Thresholds{Tier: "large", Window: DefaultWindow,
			Offload: 88_000, OffloadTarget: 68_000, Compact: 108_000, CompactTarget: 64_000, Limit: 120_000, SummaryTokens: 8000}},
		// A small output limit leaves less room below the window.
		{200_000, 2_000, Thresholds{Tier: "large", Window: 200_000, MaxOutput: 2_000,
			Offload: 160_000, OffloadTarget: 140_000, Compact: 180_000, CompactTarget: 100_000, Limit: 198_000, SummaryTokens: 2000}},
	} {
		if diff := cmp.Diff(tc.want, Budget(tc.window, tc.maxOutput)); diff != "" {
			t.Errorf("Budget(%d, %d) (-want +got):\n%s", tc.window, tc.maxOutput, diff)
		}
	}
}

func TestBudgetOrder(t *testing.T) {
	for w := 1_000; w <= 2_000_000; w = w*11/10 + 1 {
		for _, out := range []int{0, 1, 1_000, 64_000} {
			b := Budget(w, out)
			if !(b.OffloadTarget <= b.Offload && b.Offload < b.Compact && b.Compact < b.Limit && b.Limit < b.Window &&
				b.CompactTarget <= b.OffloadTarget && b.SummaryTokens > 0) {
				t.Fatalf("Budget(%d, %d) out of order: %+v", w, out, b)
			}
		}
	}
}

func TestDecide(t *testing.T) {
	b := Budget(200_000, 64_000)
	for _, tc := range []struct {
		est, compactions int
		want             Action
	}{
		{100_000, 0, Send},
		{180_000, 0, Send},
		{180_001, 0, CompactFirst},
		{180_001, MaxCompactions, Send},
		{192_001, MaxCompactions - 1, CompactFirst},
		{192_001, MaxCompactions, Stop},
	} {
		if got := b.Decide(tc.est, tc.compactions); got != tc.want {
			t.Errorf("Decide(%d, %d) = %v, want %v", tc.est, tc.compactions, got, tc.want)
		}
	}
	for _, tc := range []struct{ est, want int }{
		{10_000, 64_000}, {150_000, 50_000}, {199_500, MinOutputTokens},
	} {
		if got := b.MaxTokens(tc.est); got != tc.want {
			t.Errorf("MaxTokens(%d) = %d, want %d", tc.est, got, tc.want)
		}
	}
	if got := Budget(1_000_000, 0).MaxTokens(0); got != DefaultOutputTokens {
		t.Errorf("unknown output limit: %d", got)
	}
}
