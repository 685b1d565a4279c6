package backup

import (
	"context"
	"fmt"
	"io"
	"time"

	"den.dev/den/internal/store"
)

// VerifyOptions say how Verify reports its progress.
type VerifyOptions struct {
	// Total is the archive's size when known, for Progress.
	Total    int64
	Progress func(Progress)
}

// VerifySummary is what Verify read.
type VerifySummary struct {
	Manifest Manifest
	Files    int   // regular files, config files included
	Bytes    int64 // their content
	Read     int64 // the archive's size
	Took     time.Duration
}

// Verify reads a whole archive and checks it as Restore does before it
// puts anything in place, without writing anything: a manifest this
// den reads (format, database schema), every entry's name and type,
// every file against SHA256SUMS and every file read listed there, and
// nothing after it. The first problem is the error. What Verify cannot
// tell is whether the database inside opens: Restore checks that.
func Verify(ctx context.Context, r io.Reader, o VerifyOptions) (VerifySummary, error) {
	start := time.Now()
	a, err := openArchive(r)
	if err != nil {
		return VerifySummary{}, fmt.Errorf("verify: %w", err)
	}
	defer a.close()
	m, err := a.manifest()
	if err == nil {
		err = m.check(store.SchemaVersion())
	}
	if err != nil {
		return VerifySummary{}, fmt.Errorf("verify: %w", err)
	}
	rd := newReader(a, m)
	var last time.Time
	tick := func() {
		if o.Progress != nil && time.Since(last) >= 100*time.Millisecond {
			last = time.Now()
			o.Progress(Progress{Done: a.in.n, Total: o.Total, Files: rd.files})
		}
	}
	if err := rd.each(ctx, func(*entry) error { return nil }, tick); err != nil {
		return VerifySummary{}, fmt.Errorf("verify: %w", err)
	}
	if o.Progress != nil {
		o.Progress(Progress{Done: a.in.n, Total: max(o.Total, a.in.n), Files: rd.files, Final: true})
	}
	return VerifySummary{Manifest: m, Files: rd.files, Bytes: rd.bytes, Read: a.in.n, Took: time.Since(start)}, nil
}
