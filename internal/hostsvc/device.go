package hostsvc

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"time"
)

// ErrNoDevice is Device's error when no browser with den's web face is
// connected; ErrDeviceRefused wraps the browser's own refusal (the user
// said no, or it has no such sensor).
var (
	ErrNoDevice      = errors.New("no browser with den's web face is connected")
	ErrDeviceRefused = errors.New("the browser refused")
)

// Device asks the user's connected browser to do something: kind
// "location" (args nil; the answer {"latitude", "longitude",
// "accuracy_m"}).
type Device func(ctx context.Context, session, kind string, args any) (json.RawMessage, error)

const (
	defaultDeviceWait = 30 * time.Second
	maxDeviceWait     = 2 * time.Minute
)

func (s *Service) parseLocation(c *Call) (*Plan, *Result) {
	f := newFlags("den-location")
	timeout := f.Duration("timeout", defaultDeviceWait)
	args, bad := f.parse("location", c.Args)
	if bad != nil {
		return nil, bad
	}
	if len(args) != 0 {
		return nil, invalid("location", "den-location takes no arguments, only --timeout")
	}
	if *timeout <= 0 || *timeout > maxDeviceWait {
		return nil, invalid("location", "--timeout: want a duration from 1s to %s", maxDeviceWait)
	}
	if s.Device == nil {
		return nil, unavailable("location", "this den has no web face: den-location works in sessions of den serve, with den open in a browser")
	}
	return plan("location", "", "the user's location, from their browser", func(ctx context.Context) Result {
		ctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		raw, err := s.Device(ctx, c.Session, "location", nil)
		switch {
		case errors.Is(err, ErrNoDevice):
			return fail("location", CodeNotAvailable, "%v: open den on your phone or computer and try again", err)
		case errors.Is(err, ErrDeviceRefused):
			return fail("location", CodeDenied, "%v", err)
		case errors.Is(err, context.DeadlineExceeded):
			return fail("location", CodeNotAvailable, "no browser answered within %s", *timeout)
		case err != nil:
			return fail("location", CodeInternal, "%v", err)
		}
		// The answer comes from a browser: take only what den asked
		// for, checked.
		var loc struct {
			Latitude  *float64 `json:"latitude"`
			Longitude *float64 `json:"longitude"`
			Accuracy  *float64 `json:"accuracy_m"`
		}
		if err := json.Unmarshal(raw, &loc); err != nil || loc.Latitude == nil || loc.Longitude == nil ||
			math.Abs(*loc.Latitude) > 90 || math.Abs(*loc.Longitude) > 180 {
			return fail("location", CodeInternal, "the browser's answer is not a location")
		}
		out := map[string]any{"latitude": *loc.Latitude, "longitude": *loc.Longitude}
		if loc.Accuracy != nil && *loc.Accuracy >= 0 {
			out["accuracy_m"] = *loc.Accuracy
		}
		return ok("location", out)
	})
}
