package webpush

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrBadSubscription is returned, wrapped, for an endpoint or keys
	// that cannot be a browser's push subscription.
	ErrBadSubscription = errors.New("not a valid push subscription")

	// ErrGone is matched by the error of a send the push service answered
	// 404 or 410: the subscription has expired or was unsubscribed.
	ErrGone = errors.New("the push subscription is gone")

	// ErrTooLarge is returned, wrapped, for a payload too large to send,
	// and matched by the error of a send the push service answered 413.
	ErrTooLarge = errors.New("the push message is too large")

	// ErrInsecureKey is returned, wrapped, by LoadKeys when the key file
	// is a symbolic link, not a regular file, or open to group or others.
	ErrInsecureKey = errors.New("the VAPID key file is not private")

	// ErrBadMessage is returned, wrapped, by Send for a message whose
	// headers would be invalid: an unknown urgency, a topic that is not
	// up to 32 base64url characters, a contact that is not a mailto: or
	// https: URI.
	ErrBadMessage = errors.New("invalid push message")
)

// StatusError is a push service's refusal of a message: its status
// code and the start of its answer.
type StatusError struct {
	Status int
	Body   string
	// RetryAfter is what the service asked to wait before trying again,
	// when it said (a 429 or 503 usually does).
	RetryAfter    time.Duration
	retryAfterSet bool // RetryAfter was said (it may be 0)
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("the push service answered %d", e.Status)
	if e.Body != "" {
		msg += ": " + e.Body
	}
	if e.retryAfterSet {
		msg += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	return msg
}

// Is makes errors.Is(err, ErrGone) true for 404 and 410, and
// errors.Is(err, ErrTooLarge) for 413.
func (e *StatusError) Is(target error) bool {
	switch target {
	case ErrGone:
		return e.Status == 404 || e.Status == 410
	case ErrTooLarge:
		return e.Status == 413
	}
	return false
}

// Retryable reports whether the service may take the message later: 429
// or a 5xx.
func (e *StatusError) Retryable() bool { return e.Status == 429 || e.Status >= 500 }
