package resource

import "errors"

// ErrInvalid is a string that is not a valid den:// URL; the error
// wrapping it says why.
var ErrInvalid = errors.New("not a valid den:// URL")
