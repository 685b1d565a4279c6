package browserview

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/coder/websocket"

	"den.dev/den/internal/browser"
)

// viewer is one open screencast socket.
type viewer struct {
	h     *Handler
	s     *browser.Session
	conn  *websocket.Conn
	log   *slog.Logger
	cast  *caster     // set by Handler.watch
	ended chan string // why the screencast ended; one message, from the caster

	wmu         sync.Mutex // one message at a time, and a frame's two together
	sentControl *controlJSON

	mu    sync.Mutex    // guards next
	next  *frame        // the newest frame not yet sent
	ready chan struct{} // signalled when next is set
}

type controlJSON struct {
	Type    string `json:"type"`
	Control bool   `json:"control"`
	Yours   bool   `json:"yours"`
}

type frameJSON struct {
	Type    string  `json:"type"`
	Width   float64 `json:"width"`
	Height  float64 `json:"height"`
	ScrollX float64 `json:"scroll_x"`
	ScrollY float64 `json:"scroll_y"`
	Tab     int     `json:"tab"`
	URL     string  `json:"url"`
	Title   string  `json:"title"`
}

type errorJSON struct {
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// message is one message from the client.
type message struct {
	Type string `json:"type"`
	browser.InputEvent
}

// errBadMessage is read's error for a message the protocol does not
// have; the socket closes with status 1008.
var errBadMessage = errors.New("bad message")

// run carries the socket until the browser goes, the client goes away
// or den stops; then control, if this socket holds it, goes back to the
// agent, and run returns once its goroutines have ended.
func (v *viewer) run(base context.Context) {
	v.conn.SetReadLimit(ReadLimit)
	ctx, cancel := context.WithCancel(base)
	var wg sync.WaitGroup
	v.h.watch(v)
	defer func() {
		// Control first: the agent may be waiting for it.
		v.h.release(v)
		cancel()
		v.h.unwatch(v)
		wg.Wait()
		v.conn.CloseNow()
	}()
	readErr := make(chan error, 1)
	wg.Go(func() { readErr <- v.read(ctx) })
	wg.Go(func() { v.ping(ctx, cancel) })

	tick := time.NewTicker(controlEvery)
	defer tick.Stop()
	var sent time.Time
	if err := v.sendControl(ctx); err != nil {
		v.log.Debug("browser view: client gone", "err", err)
		return
	}
	for ctx.Err() == nil {
		var err error
		select {
		case <-ctx.Done():
		case err = <-readErr:
			v.hangUp(err)
			return
		case reason := <-v.ended:
			if ctx.Err() == nil {
				v.end(ctx, reason)
				return
			}
		case <-tick.C:
			err = v.sendControl(ctx)
		case <-v.ready:
			// At most MaxFPS: wait out the interval; frames that come
			// meanwhile replace the one waiting.
			if wait := time.Until(sent.Add(time.Second / MaxFPS)); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
				case <-t.C:
				}
				t.Stop()
			}
			if f := v.take(); f != nil && ctx.Err() == nil {
				sent = time.Now()
				err = v.sendFrame(ctx, f)
			}
		}
		if err != nil {
			v.log.Debug("browser view: client gone", "err", err)
			return
		}
	}
	// The context ended: den stops, or the client stopped answering.
	if base.Err() != nil {
		v.end(context.Background(), "den is stopping.")
	}
}

// offer makes f the next frame to send, in place of one not sent yet.
func (v *viewer) offer(f *frame) {
	v.mu.Lock()
	v.next = f
	v.mu.Unlock()
	v.signal()
}

func (v *viewer) signal() {
	select {
	case v.ready <- struct{}{}:
	default:
	}
}

// take returns the frame to send, or nil.
func (v *viewer) take() *frame {
	v.mu.Lock()
	defer v.mu.Unlock()
	f := v.next
	v.next = nil
	return f
}

// ping closes the socket (by canceling ctx) when the client stops
// answering pings.
func (v *viewer) ping(ctx context.Context, cancel context.CancelFunc) {
	tk := time.NewTicker(PingEvery)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		pctx, pcancel := context.WithTimeout(ctx, PingWait)
		err := v.conn.Ping(pctx)
		pcancel()
		if err != nil {
			if ctx.Err() == nil {
				v.log.Info("browser view: the client stopped answering", "err", err)
			}
			cancel()
			return
		}
	}
}

// read handles the client's messages until the socket fails or a
// message is not one the protocol has.
func (v *viewer) read(ctx context.Context) error {
	var b bucket
	var told time.Time
	for {
		typ, data, err := v.conn.Read(ctx)
		if err != nil {
			return err
		}
		if typ != websocket.MessageText {
			return fmt.Errorf("%w: a binary message", errBadMessage)
		}
		var m message
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("%w: not a JSON object", errBadMessage)
		}
		if m.Type != "take" && m.Type != "release" && m.Type != "input" {
			return fmt.Errorf("%w: unknown type %q", errBadMessage, m.Type)
		}
		if now := time.Now(); !b.take(now) {
			if now.Sub(told) >= time.Second {
				told = now
				if err := v.refuse(ctx, "rate_limited", "Too many messages: some were dropped."); err != nil {
					return err
				}
			}
			continue
		}
		switch m.Type {
		case "take":
			if err = v.h.take(v); err != nil {
				err = v.refuse(ctx, "closed", "The browser closed.")
			} else {
				err = v.sendControl(ctx)
			}
		case "release":
			v.h.release(v)
			err = v.sendControl(ctx)
		case "input":
			err = v.input(ctx, m.InputEvent)
		}
		if err != nil {
			return err
		}
	}
}

// input gives the page the user's input, if this socket holds control.
// The error is the socket's only: the client is told what the page did
// not take.
func (v *viewer) input(ctx context.Context, ev browser.InputEvent) error {
	if !v.h.holds(v) {
		return v.refuse(ctx, "no_control", "Take over first: the agent has the browser.")
	}
	if msg := check(ev); msg != "" {
		return v.refuse(ctx, "bad_input", msg)
	}
	ictx, cancel := context.WithTimeout(ctx, inputWait)
	defer cancel()
	if err := v.s.Input(ictx, ev); err != nil {
		if errors.Is(err, browser.ErrNoControl) {
			return v.refuse(ctx, "no_control", "Take over first: the agent has the browser.")
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		v.log.Debug("browser view: input", "kind", ev.Kind, "err", err)
		return v.refuse(ctx, "input_failed", "The page did not take the input.")
	}
	return nil
}

// maxCoord bounds coordinates and scroll deltas, in CSS pixels.
const maxCoord = 1e6

// check says what is wrong with an input event, "" when nothing.
func check(ev browser.InputEvent) string {
	switch ev.Kind {
	case "move", "down", "up", "wheel", "keydown", "keyup", "text":
	default:
		return fmt.Sprintf("input kind %q: use move, down, up, wheel, keydown, keyup or text", ev.Kind)
	}
	for _, c := range []float64{ev.X, ev.Y, ev.DeltaX, ev.DeltaY} {
		if math.IsNaN(c) || math.Abs(c) > maxCoord {
			return "coordinates out of range"
		}
	}
	switch ev.Button {
	case "", "left", "middle", "right":
	default:
		return fmt.Sprintf("button %q: use left, middle or right", ev.Button)
	}
	if ev.ClickCount < 0 || ev.ClickCount > 3 || ev.Modifiers < 0 || ev.Modifiers > 15 || len(ev.Key) > 32 || len(ev.Code) > 32 {
		return "click_count, modifiers, key or code out of range"
	}
	return ""
}

// bucket is a token bucket of the client's messages.
type bucket struct {
	n  float64
	at time.Time
}

func (b *bucket) take(now time.Time) bool {
	if b.at.IsZero() {
		b.n = InputBurst
	} else {
		b.n = min(InputBurst, b.n+now.Sub(b.at).Seconds()*InputRate)
	}
	b.at = now
	if b.n < 1 {
		return false
	}
	b.n--
	return true
}

// sendControl says whether the user controls the browser, and through
// this socket, when that changed since it last said.
func (v *viewer) sendControl(ctx context.Context) error {
	// Read under wmu, so that what goes last is what is so now.
	v.wmu.Lock()
	defer v.wmu.Unlock()
	c := controlJSON{Type: "control", Control: v.s.UserHasControl(), Yours: v.h.holds(v)}
	if v.sentControl != nil && *v.sentControl == c {
		return nil
	}
	if err := v.write(ctx, websocket.MessageText, c); err != nil {
		return err
	}
	v.sentControl = &c
	return nil
}

// sendFrame sends a frame's metadata, then its picture.
func (v *viewer) sendFrame(ctx context.Context, f *frame) error {
	meta := frameJSON{Type: "frame", Width: f.f.Width, Height: f.f.Height, ScrollX: f.f.ScrollX, ScrollY: f.f.ScrollY,
		Tab: f.f.Tab, URL: f.page.url, Title: f.page.title}
	v.wmu.Lock()
	defer v.wmu.Unlock()
	if err := v.write(ctx, websocket.MessageText, meta); err != nil {
		return err
	}
	return v.write(ctx, websocket.MessageBinary, f.f.JPEG)
}

// refuse tells the client what was not done.
func (v *viewer) refuse(ctx context.Context, code, msg string) error {
	v.wmu.Lock()
	defer v.wmu.Unlock()
	return v.write(ctx, websocket.MessageText, errorJSON{Type: "error", Code: code, Message: msg})
}

// end says why the view ends, and closes the socket normally.
func (v *viewer) end(ctx context.Context, reason string) {
	v.wmu.Lock()
	err := v.write(ctx, websocket.MessageText, struct {
		Type   string `json:"type"`
		Reason string `json:"reason"`
	}{"end", reason})
	v.wmu.Unlock()
	if err != nil {
		v.log.Debug("browser view: end message", "err", err)
		return
	}
	v.conn.Close(websocket.StatusNormalClosure, "")
}

// write writes one message (JSON for text, bytes for binary) within
// WriteWait. v.wmu is held.
func (v *viewer) write(ctx context.Context, typ websocket.MessageType, m any) error {
	b, ok := m.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(m); err != nil {
			return err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, WriteWait)
	defer cancel()
	return v.conn.Write(wctx, typ, b)
}

// hangUp ends the socket after the client went away or broke the
// protocol: 1008 and the reason for a message the protocol does not
// have (a message over the limit was answered with 1009 already).
func (v *viewer) hangUp(err error) {
	if errors.Is(err, errBadMessage) {
		reason := err.Error()
		if len(reason) > 120 { // a close frame's reason is at most 123 bytes
			reason = reason[:120]
		}
		v.h.release(v)
		v.conn.Close(websocket.StatusPolicyViolation, reason)
		return
	}
	v.log.Debug("browser view: client gone", "err", err)
}
