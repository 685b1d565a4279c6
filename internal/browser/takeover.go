package browser

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/page"
)

// TakeControl gives the user the session's browser: until
// ReleaseControl, the agent's actions wait (at most
// Options.TakeoverWait each) and Input is accepted. An agent action
// that waited, or the first one after the user operated the page,
// is not done: its result says the user operated the browser and shows
// the page as it is now.
func (s *Session) TakeControl() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if !s.control {
		s.control = true
		s.released = make(chan struct{})
	}
	return nil
}

// ReleaseControl gives the browser back to the agent.
func (s *Session) ReleaseControl() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.control {
		s.control = false
		close(s.released)
	}
}

// UserHasControl reports whether the user controls the browser.
func (s *Session) UserHasControl() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.control
}

// awaitControl waits while the user controls the browser, at most
// Options.TakeoverWait. It returns what the action's result must say
// when it waited, "" when it did not.
func (s *Session) awaitControl(ctx context.Context) (string, error) {
	s.mu.Lock()
	control, released := s.control, s.released
	s.mu.Unlock()
	if !control {
		return "", nil
	}
	t := time.NewTimer(s.b.o.TakeoverWait)
	defer t.Stop()
	start := time.Now()
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-t.C:
		return fmt.Sprintf("The user still controls the browser after %v; your action was not done. Try again later.", s.b.o.TakeoverWait), nil
	case <-released:
	}
	if !s.takeOperated() {
		return "", nil
	}
	return fmt.Sprintf("The user operated the browser for %v while your action waited; it was not done. Here is the page now.", time.Since(start).Round(time.Second)), nil
}

// takeOperated reports whether the user operated the page since the
// agent's last action, and forgets it.
func (s *Session) takeOperated() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	op := s.operated
	s.operated = false
	return op
}

// takeoverResult answers an action the user's control displaced: why,
// and a fresh snapshot (unless the user still has control).
func (s *Session) takeoverResult(ctx context.Context, t *tab, res *Result, why string) {
	res.Code, res.Message = UserControl, why
	if t != nil && !s.UserHasControl() {
		t.settle(ctx, time.Time{}, settleQuiet, settleMax)
		s.describe(ctx, t, res)
		res.Code = UserControl
	}
}

// InputEvent is the user's mouse or keyboard input, in the current tab's
// viewport coordinates (CSS pixels).
type InputEvent struct {
	// Kind is mouse ("move", "down", "up", "wheel"), key ("keydown",
	// "keyup") or "text" (inserted as typed).
	Kind string `json:"kind"`

	X          float64 `json:"x,omitempty"`
	Y          float64 `json:"y,omitempty"`
	Button     string  `json:"button,omitempty"` // left, middle, right
	ClickCount int     `json:"click_count,omitempty"`
	DeltaX     float64 `json:"delta_x,omitempty"`
	DeltaY     float64 `json:"delta_y,omitempty"`

	Key  string `json:"key,omitempty"`  // DOM key value: "a", "Enter"
	Code string `json:"code,omitempty"` // DOM code: "KeyA", "Enter"
	Text string `json:"text,omitempty"` // text the key types, or the text to insert

	// Modifiers: Alt 1, Control 2, Meta 4, Shift 8.
	Modifiers int64 `json:"modifiers,omitempty"`
}

// Input sends the user's input to the session's current tab. The user
// must have taken control.
func (s *Session) Input(ctx context.Context, ev InputEvent) error {
	s.mu.Lock()
	control, t := s.control, s.cur
	if control {
		s.operated = true
	}
	s.mu.Unlock()
	if !control {
		return ErrNoControl
	}
	if t == nil {
		return errors.New("browser: the session has no tab")
	}
	var err error
	switch ev.Kind {
	case "move", "down", "up", "wheel":
		p := input.DispatchMouseEventParams{X: ev.X, Y: ev.Y, Modifiers: ev.Modifiers, ClickCount: int64(ev.ClickCount), DeltaX: ev.DeltaX, DeltaY: ev.DeltaY}
		p.Type = map[string]input.DispatchMouseEventType{"move": input.DispatchMouseEventTypeMouseMoved, "down": input.DispatchMouseEventTypeMousePressed, "up": input.DispatchMouseEventTypeMouseReleased, "wheel": input.DispatchMouseEventTypeMouseWheel}[ev.Kind]
		if ev.Kind == "down" || ev.Kind == "up" {
			p.Button = input.MouseButton(ev.Button)
			if p.Button == "" {
				p.Button = input.MouseButtonLeft
			}
			if p.ClickCount == 0 {
				p.ClickCount = 1
			}
		}
		if ev.Kind == "wheel" {
			err = t.wheel(ctx, ev.X, ev.Y, ev.DeltaX, ev.DeltaY)
		} else {
			_, err = cdp.Call(ctx, t.t, input.DispatchMouseEvent, p)
		}
	case "keydown", "keyup":
		p := input.DispatchKeyEventParams{Key: ev.Key, Code: ev.Code, Modifiers: ev.Modifiers}
		if ev.Kind == "keyup" {
			p.Type = input.DispatchKeyEventTypeKeyUp
		} else if ev.Text != "" {
			p.Type, p.Text, p.UnmodifiedText = input.DispatchKeyEventTypeKeyDown, ev.Text, ev.Text
		} else {
			p.Type = input.DispatchKeyEventTypeRawKeyDown
		}
		if k, kerr := keyEvents(ev.Key); kerr == nil && len(k) > 0 {
			p.WindowsVirtualKeyCode, p.NativeVirtualKeyCode = k[0].WindowsVirtualKeyCode, k[0].NativeVirtualKeyCode
			if p.Code == "" {
				p.Code = k[0].Code
			}
		}
		_, err = cdp.Call(ctx, t.t, input.DispatchKeyEvent, p)
	case "text":
		_, err = cdp.Call(ctx, t.t, input.InsertText, input.InsertTextParams{Text: ev.Text})
	default:
		return fmt.Errorf("browser: input kind %q: use move, down, up, wheel, keydown, keyup or text", ev.Kind)
	}
	if err != nil {
		return fmt.Errorf("browser: input: %w", err)
	}
	return nil
}

// Frame is one picture of a screencast.
type Frame struct {
	JPEG []byte
	// Width and Height are the viewport's, in CSS pixels; ScrollX and
	// ScrollY where it is in the page. Input coordinates are the
	// viewport's.
	Width, Height    float64
	ScrollX, ScrollY float64
	Tab              int
	At               time.Time
}

// ScreencastOptions shape a screencast.
type ScreencastOptions struct {
	Quality             int // JPEG quality, 1-100 (60)
	MaxWidth, MaxHeight int // the frames' largest size in pixels (1280×800)
}

// Screencast streams the session's current tab as JPEG frames while the
// page changes, following the session to another tab when its current
// tab changes. Breaking the loop or ending ctx stops it; an error (the
// tab or browser gone, no tab at all) ends it.
func (s *Session) Screencast(ctx context.Context, o ScreencastOptions) iter.Seq2[Frame, error] {
	if o.Quality <= 0 || o.Quality > 100 {
		o.Quality = 60
	}
	if o.MaxWidth <= 0 {
		o.MaxWidth = 1280
	}
	if o.MaxHeight <= 0 {
		o.MaxHeight = 800
	}
	return func(yield func(Frame, error) bool) {
		// A browser someone watches is in use: neither it nor the
		// session's tabs stop for idleness meanwhile.
		s.b.use(1)
		defer s.b.use(-1)
		s.mu.Lock()
		s.watching++
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			s.watching--
			s.mu.Unlock()
		}()
		for ctx.Err() == nil {
			t := s.current()
			if t == nil {
				yield(Frame{}, errors.New("browser: the session has no tab"))
				return
			}
			switched, ok := s.cast(ctx, t, o, yield)
			if !ok || !switched {
				return
			}
		}
	}
}

// cast streams t until the session's current tab changes (switched),
// the consumer stops (ok false), or t ends.
func (s *Session) cast(ctx context.Context, t *tab, o ScreencastOptions, yield func(Frame, error) bool) (switched, ok bool) {
	cctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	frames := cdp.Events(cctx, t.t, page.ScreencastFrame)
	if _, err := cdp.Call(ctx, t.t, page.StartScreencast, page.StartScreencastParams{
		Format: page.StartScreencastFormatJpeg, Quality: ptr(int64(o.Quality)), MaxWidth: int64(o.MaxWidth), MaxHeight: int64(o.MaxHeight), EveryNthFrame: 1,
	}); err != nil {
		return false, yield(Frame{}, fmt.Errorf("browser: screencast: %w", err))
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), time.Second)
		cdp.Call(sctx, t.t, page.StopScreencast, cdp.Empty{})
		scancel()
	}()
	// Watch for a switch of tabs even when the page sends no frames.
	wg.Go(func() {
		tk := time.NewTicker(200 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-cctx.Done():
				return
			case <-tk.C:
				if s.current() != t {
					cancel()
					return
				}
			}
		}
	})
	for ev, err := range frames {
		if err != nil {
			if ctx.Err() == nil && s.current() != t {
				return true, true
			}
			if ctx.Err() != nil {
				return false, true
			}
			return false, yield(Frame{}, fmt.Errorf("browser: screencast: %w", err))
		}
		cdp.Call(cctx, t.t, page.ScreencastFrameAck, page.ScreencastFrameAckParams{SessionID: ev.SessionID})
		f := Frame{JPEG: ev.Data, Tab: t.id, At: time.Now()}
		if m := ev.Metadata; m != nil {
			f.Width, f.Height, f.ScrollX, f.ScrollY = m.DeviceWidth, m.DeviceHeight, m.ScrollOffsetX, m.ScrollOffsetY
		}
		if !yield(f, nil) {
			return false, false
		}
	}
	return s.current() != t && ctx.Err() == nil, true
}
