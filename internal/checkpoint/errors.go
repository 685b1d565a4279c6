package checkpoint

import "errors"

// Errors.
var (
	// ErrNotFound: no checkpoint with that id.
	ErrNotFound = errors.New("no such checkpoint")
	// ErrDamaged: an object or record of the store is missing or not
	// what its name says (a crash while it was written, a disk error,
	// someone editing the store).
	ErrDamaged = errors.New("checkpoint damaged")
	// ErrTooLarge: what changed since the last checkpoint would not fit
	// in the store's budget.
	ErrTooLarge = errors.New("changes too large to checkpoint")
	// ErrTree: a tree cannot be checkpointed or restored as it is (too
	// deep, a file den cannot read).
	ErrTree = errors.New("tree cannot be checkpointed")
)
