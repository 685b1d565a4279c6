package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"den.dev/den/internal/hostsvc"
	"den.dev/den/internal/store"
)

// Devices are the browsers with den's web face open, which host
// commands reach (den-location): a command's request goes to every
// connected browser, and the first answer wins.
type Devices struct {
	mu      sync.Mutex
	next    int
	conns   map[int]chan DeviceRequest
	pending map[string]chan deviceAnswer
}

// DeviceRequest is what a browser is asked to do.
type DeviceRequest struct {
	ID      string          `json:"id"`
	Session string          `json:"session_id"`
	Kind    string          `json:"kind"` // location
	Args    json.RawMessage `json:"args,omitempty"`
}

type deviceAnswer struct {
	data json.RawMessage
	err  string
}

// ErrNoRequest is Answer's error for a request that is not waiting (it
// was answered, or its command gave up).
var ErrNoRequest = errors.New("session: no such device request is waiting")

func newDevices() *Devices {
	return &Devices{conns: map[int]chan DeviceRequest{}, pending: map[string]chan deviceAnswer{}}
}

// Connect registers a browser until stop: requests come on the channel.
func (d *Devices) Connect() (requests <-chan DeviceRequest, stop func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id := d.next
	d.next++
	ch := make(chan DeviceRequest, 8)
	d.conns[id] = ch
	return ch, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		delete(d.conns, id)
	}
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
	answer := make(chan deviceAnswer, 1)
	d.mu.Lock()
	if len(d.conns) == 0 {
		d.mu.Unlock()
		return nil, hostsvc.ErrNoDevice
	}
	d.pending[req.ID] = answer
	for _, c := range d.conns {
		select {
		case c <- req:
		default: // a browser that does not read gets no more
		}
	}
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.pending, req.ID)
		d.mu.Unlock()
	}()
	select {
	case a := <-answer:
		if a.err != "" {
			return nil, fmt.Errorf("%w: %s", hostsvc.ErrDeviceRefused, a.err)
		}
		return a.data, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Answer gives a request its answer: data, or the browser's error.
func (d *Devices) Answer(id string, data json.RawMessage, errMsg string) error {
	d.mu.Lock()
	ch, ok := d.pending[id]
	delete(d.pending, id)
	d.mu.Unlock()
	if !ok {
		return ErrNoRequest
	}
	ch <- deviceAnswer{data: data, err: errMsg}
	return nil
}
