package output

import "errors"

// ErrClosed is returned by Write on a Cleaner or a Capture that has been
// closed.
var ErrClosed = errors.New("output: write after close")

// errNoSpill is the open error recorded when a spill function returns
// neither a writer nor an error.
var errNoSpill = errors.New("spill function returned no writer")
