package memory

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"den.dev/den/internal/store"
)

// Scopes of Search: which files it looks in.
const (
	ScopeAll    = "all"    // every file
	ScopeGlobal = "global" // GLOBAL.md
	ScopeSoul   = "soul"   // SOUL.md
	ScopeDaily  = "daily"  // the daily logs
)

// Limits of what Search returns.
const (
	maxResults     = 30
	maxResultBytes = 24 << 10
	// candidates is how many full-text matches are ranked again by
	// recency.
	candidates = 200
)

// Found is what Search found.
type Found struct {
	Entries []store.MemoryEntry
	// Scanned is how many entries matched the words before ranking; More
	// says entries were left out by the limits.
	Scanned int
	More    bool
}

// Search finds the entries of the memory that best match query (any of
// its words; those with more and rarer words rank first, and among
// similar ones the more recent), in scope; with no query, the newest.
// GLOBAL.md and SOUL.md count as recent: they are kept up to date.
func (b *Book) Search(ctx context.Context, query, scope string, now time.Time) (Found, error) {
	if _, err := b.Sync(ctx); err != nil {
		return Found{}, err
	}
	q := store.MemoryQuery{Text: query, Limit: candidates}
	switch scope {
	case "", ScopeAll:
	case ScopeGlobal:
		q.Files = []string{Global}
	case ScopeSoul:
		q.Files = []string{Soul}
	case ScopeDaily:
		q.Daily = true
	default:
		return Found{}, fmt.Errorf("memory: scope %q: want all, global, soul or daily", scope)
	}
	hits, err := b.Index.SearchMemory(ctx, b.Agent, q)
	if err != nil {
		return Found{}, err
	}
	found := Found{Scanned: len(hits)}
	if strings.TrimSpace(query) != "" {
		rank(hits, now)
	}
	size := 0
	for _, h := range hits {
		if len(found.Entries) == maxResults || size+len(h.Body) > maxResultBytes {
			found.More = true
			break
		}
		size += len(h.Body)
		found.Entries = append(found.Entries, h.MemoryEntry)
	}
	return found, nil
}

// rank orders hits by relevance and recency: 0.7 of the score is the
// full-text relevance (relative to the best), 0.3 how recent the entry
// is (half after a week).
func rank(hits []store.MemoryHit, now time.Time) {
	best := 0.0
	for _, h := range hits {
		best = math.Max(best, h.Relevance)
	}
	score := func(h store.MemoryHit) float64 {
		rel := 0.0
		if best > 0 {
			rel = h.Relevance / best
		}
		recent := 0.5
		switch {
		case h.Day == "":
		case !h.At.IsZero():
			recent = 1 / (1 + now.Sub(h.At).Hours()/24/7)
		default:
			if t, err := time.Parse(dayLayout, h.Day); err == nil {
				recent = 1 / (1 + now.Sub(t).Hours()/24/7)
			}
		}
		return 0.7*rel + 0.3*recent
	}
	sort.SliceStable(hits, func(i, j int) bool { return score(hits[i]) > score(hits[j]) })
}

// Format writes what Search found as the memory_get tool answers: each
// entry under a line naming its file, its date and time, and the
// session that wrote it.
func (f Found) Format(query string, loc *time.Location) string {
	var b strings.Builder
	switch {
	case len(f.Entries) == 0 && strings.TrimSpace(query) != "":
		fmt.Fprintf(&b, "No memory entry matches %q.", query)
		return b.String()
	case len(f.Entries) == 0:
		return "Your memory is empty: nothing was written to /den/memory yet."
	case strings.TrimSpace(query) != "":
		fmt.Fprintf(&b, "%d memory entries for %q, the best first", len(f.Entries), query)
	default:
		fmt.Fprintf(&b, "The %d newest memory entries", len(f.Entries))
	}
	if f.More {
		b.WriteString(" (more matched: narrow the words or the scope)")
	}
	b.WriteString(":\n")
	for _, e := range f.Entries {
		b.WriteString("\n--- /den/memory/" + e.File)
		if !e.At.IsZero() {
			b.WriteString(", " + e.At.In(loc).Format("2006-01-02 15:04"))
		} else if e.Day != "" {
			b.WriteString(", " + e.Day)
		}
		if e.Session != "" {
			b.WriteString(", session " + e.Session)
		}
		b.WriteString("\n" + shown(e.Body, loc) + "\n")
	}
	return b.String()
}

// Get is Search formatted for the memory_get tool.
func (b *Book) Get(ctx context.Context, query, scope string, now time.Time) (string, error) {
	f, err := b.Search(ctx, query, scope, now)
	if err != nil {
		return "", err
	}
	return f.Format(query, b.loc()), nil
}
