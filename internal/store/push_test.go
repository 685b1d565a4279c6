package store

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

func pushSub(endpoint string, fill byte) PushSubscription {
	key := bytes.Repeat([]byte{fill}, 65)
	key[0] = 4
	return PushSubscription{Endpoint: endpoint, P256dh: key, Auth: bytes.Repeat([]byte{fill}, 16), UserAgent: "phone", Origin: "https://den.example"}
}

// TestPushSubscriptions: subscriptions are added, listed with what was
// stored, replaced when a browser subscribes again, their sends
// recorded, and deleted; deleting one that is not there is ErrNotFound.
func TestPushSubscriptions(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	if list, err := s.PushSubscriptions(ctx); err != nil || len(list) != 0 {
		t.Fatalf("a new store: %v %v", list, err)
	}
	a, b := pushSub("https://push.example/a", 1), pushSub("https://push.example/b", 2)
	for _, p := range []PushSubscription{a, b} {
		if err := s.AddPushSubscription(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.PushSubscriptions(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("%v %v", list, err)
	}
	got := list[0]
	if got.Endpoint != a.Endpoint || !bytes.Equal(got.P256dh, a.P256dh) || !bytes.Equal(got.Auth, a.Auth) || got.UserAgent != "phone" ||
		got.Origin != "https://den.example" || got.Created.IsZero() || !got.LastSuccess.IsZero() || got.Failures != 0 {
		t.Errorf("stored %+v", got)
	}

	at := time.Unix(1_700_000_000, 5).UTC()
	for _, ok := range []bool{false, false} {
		if err := s.RecordPush(ctx, a.Endpoint, ok, at); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.RecordPush(ctx, b.Endpoint, true, at); err != nil {
		t.Fatal(err)
	}
	list, _ = s.PushSubscriptions(ctx)
	if list[0].Failures != 2 || !list[0].LastSuccess.IsZero() || list[1].Failures != 0 || !list[1].LastSuccess.Equal(at) {
		t.Errorf("after sends: %+v", list)
	}

	// Subscribing again replaces the keys and starts the failures anew.
	again := pushSub(a.Endpoint, 9)
	again.UserAgent = "phone 2"
	if err := s.AddPushSubscription(ctx, again); err != nil {
		t.Fatal(err)
	}
	list, _ = s.PushSubscriptions(ctx)
	if len(list) != 2 || !bytes.Equal(list[0].P256dh, again.P256dh) || list[0].UserAgent != "phone 2" || list[0].Failures != 0 {
		t.Errorf("after subscribing again: %+v", list)
	}

	if err := s.DeletePushSubscription(ctx, a.Endpoint); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePushSubscription(ctx, a.Endpoint); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting it again: %v, want ErrNotFound", err)
	}
	if err := s.RecordPush(ctx, a.Endpoint, true, at); err != nil {
		t.Errorf("recording a send to a deleted subscription: %v", err)
	}
	if list, _ := s.PushSubscriptions(ctx); len(list) != 1 || list[0].Endpoint != b.Endpoint {
		t.Errorf("after the delete: %+v", list)
	}
}

// TestPushSubscriptionKeysChecked: keys of the wrong size are refused by
// the schema.
func TestPushSubscriptionKeysChecked(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	for _, p := range []PushSubscription{
		{Endpoint: "https://push.example/a", P256dh: make([]byte, 64), Auth: make([]byte, 16)},
		{Endpoint: "https://push.example/a", P256dh: make([]byte, 65), Auth: make([]byte, 15)},
		{Endpoint: "", P256dh: make([]byte, 65), Auth: make([]byte, 16)},
	} {
		if err := s.AddPushSubscription(ctx, p); err == nil {
			t.Errorf("stored %d-byte key, %d-byte auth, endpoint %q", len(p.P256dh), len(p.Auth), p.Endpoint)
		}
	}
}
