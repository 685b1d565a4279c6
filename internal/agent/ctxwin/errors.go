package ctxwin

import "errors"

// ErrNothingToCompact means the history after the latest summary has no
// place to cut: a single exchange fills it.
var ErrNothingToCompact = errors.New("ctxwin: nothing to compact")

// errEmptySummary is a summary call that answered nothing; it counts as
// a failure, so the input is split.
var errEmptySummary = errors.New("empty summary")
