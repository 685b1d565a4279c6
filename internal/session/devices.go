package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"den.dev/den/internal/hostsvc"
	"den.dev/den/internal/store"
)

// Devices are the browsers with den's web face open, which host
// commands reach (den-location, den-camera, …): a command's request
// goes to every connected browser, and the first answer wins. A browser
// that must act alone (one that speaks aloud) claims the request first;
// the first claim wins. When a request ends (answered, or its command
// gave up) every browser is told, so that a prompt shown on one device
// goes away once another answered.
//
// A browser also says whether the user is using den on it right now
// (Present): while one is, den's Web Push stays quiet, as the user sees
// what it would say.
type Devices struct {
	mu      sync.Mutex
	next    int
	conns   map[int]*deviceConn
	pending map[string]*pendingRequest
}

// deviceConn is a connected browser.
type deviceConn struct {
	requests chan DeviceRequest
	client   string    // the page's own id ("" when it gave none)
	active   time.Time // when it last said the user was using it; zero: not in use
}

// PresenceTTL is how long a browser's word that the user is using den
// holds: a page says so again while the user acts on it, so a computer
// left with den in front stops counting after this long.
const PresenceTTL = 90 * time.Second

// DeviceRequest is what a browser is asked to do; with Done set, it
// says that the request with this ID ended and nothing more is wanted.
type DeviceRequest struct {
	ID      string          `json:"id"`
	Session string          `json:"session_id,omitempty"`
	Kind    string          `json:"kind,omitempty"` // location, clipboard, camera, speak
	Args    json.RawMessage `json:"args,omitempty"`
	Done    bool            `json:"-"`
}

type pendingRequest struct {
	answer  chan deviceAnswer
	claimed bool
}

type deviceAnswer struct {
	data json.RawMessage
	err  string
}

// ErrNoRequest is Answer's and Claim's error for a request that is not
// waiting (it was answered, or its command gave up); ErrClaimed is
// Claim's for a request another browser claimed first.
var (
	ErrNoRequest = errors.New("session: no such device request is waiting")
	ErrClaimed   = errors.New("session: another browser took this device request")
	ErrNoClient  = errors.New("session: no browser with this id is connected")
)

func newDevices() *Devices {
	return &Devices{conns: map[int]*deviceConn{}, pending: map[string]*pendingRequest{}}
}

// Connect registers a browser until stop: requests come on the channel.
// client is the page's id for Present ("" for none).
func (d *Devices) Connect(client string) (requests <-chan DeviceRequest, stop func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id := d.next
	d.next++
	ch := make(chan DeviceRequest, 8)
	d.conns[id] = &deviceConn{requests: ch, client: client}
	return ch, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		delete(d.conns, id)
	}
}

// Present records whether the user is using den in the browser that
// connected as client, at now: ErrNoClient when none did.
func (d *Devices) Present(client string, active bool, now time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	found := false
	for _, c := range d.conns {
		if client != "" && c.client == client {
			found = true
			c.active = time.Time{}
			if active {
				c.active = now
			}
		}
	}
	if !found {
		return ErrNoClient
	}
	return nil
}

// InUse reports whether, at now, the user is using den in a connected
// browser: one said so within PresenceTTL.
func (d *Devices) InUse(now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.conns {
		if !c.active.IsZero() && now.Sub(c.active) < PresenceTTL {
			return true
		}
	}
	return false
}

// Connected is how many browsers are connected.
func (d *Devices) Connected() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.conns)
}

// Request asks the connected browsers and waits for the first answer
// until ctx ends. With none connected it fails with
// hostsvc.ErrNoDevice at once.
func (d *Devices) Request(ctx context.Context, session, kind string, args any) (json.RawMessage, error) {
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	if args == nil {
		raw = nil
	}
	req := DeviceRequest{ID: store.NewID(), Session: session, Kind: kind, Args: raw}
	p := &pendingRequest{answer: make(chan deviceAnswer, 1)}
	d.mu.Lock()
	if len(d.conns) == 0 {
		d.mu.Unlock()
		return nil, hostsvc.ErrNoDevice
	}
	d.pending[req.ID] = p
	d.broadcast(req)
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.pending, req.ID)
		d.broadcast(DeviceRequest{ID: req.ID, Done: true})
		d.mu.Unlock()
	}()
	select {
	case a := <-p.answer:
		if a.err != "" {
			return nil, fmt.Errorf("%w: %s", hostsvc.ErrDeviceRefused, a.err)
		}
		return a.data, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// broadcast sends q to every connected browser; d.mu is held. A browser
// that does not read gets no more.
func (d *Devices) broadcast(q DeviceRequest) {
	for _, c := range d.conns {
		select {
		case c.requests <- q:
		default:
		}
	}
}

// Claim makes the caller the one browser that acts on a request: nil
// for the first claim, ErrClaimed after it, ErrNoRequest when the
// request is not waiting.
func (d *Devices) Claim(id string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.pending[id]
	switch {
	case !ok:
		return ErrNoRequest
	case p.claimed:
		return ErrClaimed
	}
	p.claimed = true
	return nil
}

// Answer gives a request its answer: data, or the browser's error.
func (d *Devices) Answer(id string, data json.RawMessage, errMsg string) error {
	d.mu.Lock()
	p, ok := d.pending[id]
	delete(d.pending, id)
	d.mu.Unlock()
	if !ok {
		return ErrNoRequest
	}
	p.answer <- deviceAnswer{data: data, err: errMsg}
	return nil
}
