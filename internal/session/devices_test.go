package session

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"den.dev/den/internal/hostsvc"
)

// TestDevices: with no browser a request fails at once; with two, both
// are asked, the first answer wins and a second is refused; a refusal
// and a request nobody answers end as they should.
func TestDevices(t *testing.T) {
	d := newDevices()
	if _, err := d.Request(context.Background(), "s1", "location", nil); !errors.Is(err, hostsvc.ErrNoDevice) {
		t.Fatalf("no browser: %v", err)
	}
	a, stopA := d.Connect("")
	b, stopB := d.Connect("")
	defer stopA()
	got := make(chan json.RawMessage, 1)
	go func() {
		data, err := d.Request(context.Background(), "s1", "location", nil)
		if err != nil {
			t.Error(err)
		}
		got <- data
	}()
	ra, rb := <-a, <-b
	if ra.Done || rb.Done || ra.ID != rb.ID || ra.Kind != "location" || ra.Session != "s1" {
		t.Fatalf("requests %+v %+v", ra, rb)
	}
	if err := d.Answer(rb.ID, json.RawMessage(`{"latitude":1,"longitude":2}`), ""); err != nil {
		t.Fatal(err)
	}
	if string(<-got) != `{"latitude":1,"longitude":2}` {
		t.Error("the answer did not reach the request")
	}
	// Both browsers hear that it ended: a prompt shown on one goes away
	// once the other answered.
	if da, db := <-a, <-b; !da.Done || !db.Done || da.ID != ra.ID || db.ID != ra.ID {
		t.Errorf("no end of the request: %+v %+v", da, db)
	}
	if err := d.Answer(ra.ID, json.RawMessage(`{}`), ""); !errors.Is(err, ErrNoRequest) {
		t.Errorf("a second answer: %v", err)
	}
	stopB()
	if d.Connected() != 1 {
		t.Errorf("%d connected", d.Connected())
	}

	errc := make(chan error, 1)
	go func() {
		_, err := d.Request(context.Background(), "s1", "location", nil)
		errc <- err
	}()
	r := <-a
	d.Answer(r.ID, nil, "User denied Geolocation")
	<-a // its end
	if err := <-errc; !errors.Is(err, hostsvc.ErrDeviceRefused) {
		t.Errorf("a refusal: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := d.Request(ctx, "s1", "location", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("nobody answers: %v", err)
	}
	if q, end := <-a, <-a; q.Done || !end.Done || end.ID != q.ID {
		t.Errorf("a request given up does not end: %+v %+v", q, end)
	}
	if len(d.pending) != 0 {
		t.Errorf("%d requests left pending", len(d.pending))
	}
}

// TestDeviceClaim: of two browsers, the first to claim a request acts
// on it; a later claim, and a claim of an ended request, are refused.
func TestDeviceClaim(t *testing.T) {
	d := newDevices()
	a, stopA := d.Connect("")
	defer stopA()
	done := make(chan error, 1)
	go func() {
		_, err := d.Request(context.Background(), "s1", "speak", map[string]string{"text": "hi"})
		done <- err
	}()
	q := <-a
	if string(q.Args) != `{"text":"hi"}` {
		t.Errorf("args %s", q.Args)
	}
	if err := d.Claim(q.ID); err != nil {
		t.Fatalf("first claim: %v", err)
	}
	if err := d.Claim(q.ID); !errors.Is(err, ErrClaimed) {
		t.Errorf("second claim: %v", err)
	}
	if err := d.Answer(q.ID, json.RawMessage(`{"spoken":true}`), ""); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := d.Claim(q.ID); !errors.Is(err, ErrNoRequest) {
		t.Errorf("a claim after the end: %v", err)
	}
}

// TestDevicePresence: a browser that says the user is using den counts
// for PresenceTTL, until it says otherwise or disconnects; an unknown
// page is refused.
func TestDevicePresence(t *testing.T) {
	d := newDevices()
	now := time.Now()
	_, stop := d.Connect("page-1")
	d.Connect("page-2")
	if d.InUse(now) {
		t.Error("in use before any page said so")
	}
	if err := d.Present("page-1", true, now); err != nil {
		t.Fatal(err)
	}
	if !d.InUse(now.Add(PresenceTTL - time.Second)) {
		t.Error("not in use right after a page said so")
	}
	if d.InUse(now.Add(PresenceTTL)) {
		t.Error("still in use after the word ran out")
	}
	d.Present("page-1", false, now)
	if d.InUse(now) {
		t.Error("in use after the page said it is not")
	}
	d.Present("page-1", true, now)
	stop()
	if d.InUse(now) {
		t.Error("in use after the page went")
	}
	if err := d.Present("page-9", true, now); !errors.Is(err, ErrNoClient) {
		t.Errorf("an unknown page: %v", err)
	}
	if err := d.Present("", true, now); !errors.Is(err, ErrNoClient) {
		t.Errorf("a page without an id: %v", err)
	}
}
