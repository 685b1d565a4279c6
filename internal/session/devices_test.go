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
	a, stopA := d.Connect()
	b, stopB := d.Connect()
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
	if ra.ID != rb.ID || ra.Kind != "location" || ra.Session != "s1" {
		t.Fatalf("requests %+v %+v", ra, rb)
	}
	if err := d.Answer(rb.ID, json.RawMessage(`{"latitude":1,"longitude":2}`), ""); err != nil {
		t.Fatal(err)
	}
	if string(<-got) != `{"latitude":1,"longitude":2}` {
		t.Error("the answer did not reach the request")
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
	if err := <-errc; !errors.Is(err, hostsvc.ErrDeviceRefused) {
		t.Errorf("a refusal: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	go func() { <-a }()
	if _, err := d.Request(ctx, "s1", "location", nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("nobody answers: %v", err)
	}
	if len(d.pending) != 0 {
		t.Errorf("%d requests left pending", len(d.pending))
	}
}
