package webpush

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"den.dev/den/internal/webpush/webpushtest"
)

// newSender is a Sender with a fresh key that trusts svc's certificate,
// and a browser of svc subscribed with that key.
func newSender(t *testing.T, svc *webpushtest.Service) (*Sender, *webpushtest.Browser, Subscription) {
	t.Helper()
	k, err := LoadKeys(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := svc.Subscribe(k.PublicKey())
	p, a := b.Keys()
	sub, err := ParseSubscription(b.Endpoint, p, a)
	if err != nil {
		t.Fatal(err)
	}
	return &Sender{Client: svc.Client(), Keys: k}, b, sub
}

// TestSend: the push service gets the message with the headers asked
// for, a VAPID header it accepts and a body the browser decrypts.
func TestSend(t *testing.T) {
	svc := webpushtest.NewService(t)
	s, b, sub := newSender(t, svc)
	m := Message{Payload: []byte(`{"title":"den"}`), TTL: 90 * time.Second, Urgency: High, Topic: "done-abc_DEF", Contact: "mailto:me@example.org"}
	if err := s.Send(context.Background(), sub, m); err != nil {
		t.Fatal(err)
	}
	got := b.Next(t, 10*time.Second)
	if got.Err != nil {
		t.Fatal(got.Err)
	}
	if string(got.Payload) != `{"title":"den"}` || got.Claims.Sub != "mailto:me@example.org" {
		t.Errorf("payload %q, claims %+v", got.Payload, got.Claims)
	}
	for k, want := range map[string]string{"TTL": "90", "Urgency": "high", "Topic": "done-abc_DEF", "Content-Encoding": "aes128gcm"} {
		if v := got.Header.Get(k); v != want {
			t.Errorf("%s: %q, want %q", k, v, want)
		}
	}
	// Without urgency or topic, the headers are left out.
	if err := s.Send(context.Background(), sub, Message{Payload: []byte("x"), Contact: "https://den.example"}); err != nil {
		t.Fatal(err)
	}
	got = b.Next(t, 10*time.Second)
	if _, ok := got.Header["Urgency"]; ok || got.Header.Get("Topic") != "" || got.Header.Get("TTL") != "0" {
		t.Errorf("headers %v", got.Header)
	}
}

// TestSendAnswers: each answer of a push service is classified, and
// only 429 and 5xx are tried again.
func TestSendAnswers(t *testing.T) {
	svc := webpushtest.NewService(t)
	s, b, sub := newSender(t, svc)
	m := Message{Payload: []byte("x"), Contact: "mailto:me@example.org"}
	for _, c := range []struct {
		name    string
		answers []webpushtest.Answer
		tries   int
		check   func(error) bool
	}{
		{"202", []webpushtest.Answer{{Status: 202}}, 1, func(err error) bool { return err == nil }},
		{"404 is gone", []webpushtest.Answer{{Status: 404}}, 1, func(err error) bool { return errors.Is(err, ErrGone) }},
		{"410 is gone", []webpushtest.Answer{{Status: 410}}, 1, func(err error) bool { return errors.Is(err, ErrGone) }},
		{"413 is too large", []webpushtest.Answer{{Status: 413}}, 1, func(err error) bool { return errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrGone) }},
		{"403 is reported with the reason", []webpushtest.Answer{{Status: 403, Body: "{\"reason\":\n\"BadJwtToken\"}"}}, 1, func(err error) bool {
			var se *StatusError
			return errors.As(err, &se) && se.Status == 403 && se.Body == `{"reason": "BadJwtToken"}` && !errors.Is(err, ErrGone)
		}},
		{"500 then 201", []webpushtest.Answer{{Status: 500, RetryAfter: "0"}}, 2, func(err error) bool { return err == nil }},
		{"429 twice then 201", []webpushtest.Answer{{Status: 429, RetryAfter: "0"}, {Status: 503, RetryAfter: "0"}}, 3, func(err error) bool { return err == nil }},
		{"503 every time", []webpushtest.Answer{{Status: 503, RetryAfter: "0"}, {Status: 503, RetryAfter: "0"}, {Status: 503, RetryAfter: "0"}}, MaxTries, func(err error) bool {
			var se *StatusError
			return errors.As(err, &se) && se.Status == 503
		}},
		{"429 for an hour is not waited for", []webpushtest.Answer{{Status: 429, RetryAfter: "3600"}}, 1, func(err error) bool {
			var se *StatusError
			return errors.As(err, &se) && se.RetryAfter == time.Hour && strings.Contains(err.Error(), "retry after 1h0m0s")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b.Answer(c.answers...)
			err := s.Send(context.Background(), sub, m)
			if !c.check(err) {
				t.Errorf("Send: %v", err)
			}
			for i := range c.tries {
				if r := b.Next(t, 10*time.Second); i == c.tries-1 && c.tries > len(c.answers) && (r.Err != nil || r.Status != http.StatusCreated) {
					t.Errorf("the last try: %d %v", r.Status, r.Err)
				}
			}
			select {
			case r := <-b.Received():
				t.Errorf("more than %d tries: another got %d", c.tries, r.Status)
			default:
			}
		})
	}
}

// TestSendRetriesAfterBackoff: without Retry-After, a 5xx is tried again
// after a pause, and the message then goes through.
func TestSendRetriesAfterBackoff(t *testing.T) {
	svc := webpushtest.NewService(t)
	s, b, sub := newSender(t, svc)
	b.Answer(webpushtest.Answer{Status: 500})
	if err := s.Send(context.Background(), sub, Message{Payload: []byte("x"), Contact: "mailto:me@example.org"}); err != nil {
		t.Fatal(err)
	}
	if first, second := b.Next(t, time.Second), b.Next(t, 10*time.Second); first.Status != 500 || second.Status != 201 {
		t.Errorf("answers %d, %d", first.Status, second.Status)
	}
}

// TestSendCanceled: a canceled context ends a send that waits for a
// slow service, and one that waits to try again.
func TestSendCanceled(t *testing.T) {
	svc := webpushtest.NewService(t)
	s, b, sub := newSender(t, svc)
	m := Message{Payload: []byte("x"), Contact: "mailto:me@example.org"}
	b.Hold()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Send(ctx, sub, m) }()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("held: %v, want context.Canceled", err)
	}
	b.Release()

	// The client tells when Send has read the 503: Send then waits the
	// 20 s asked for, and cancel must end that wait (the error then
	// tells of the 503; were the wait not canceled, Send would try again
	// 20 s later and fail on the canceled request instead).
	read := make(chan struct{}, 1)
	s.Client = &http.Client{Transport: hook{svc.Client().Transport, read}}
	b.Answer(webpushtest.Answer{Status: 503, RetryAfter: "20"})
	ctx, cancel = context.WithCancel(context.Background())
	go func() { done <- s.Send(ctx, sub, m) }()
	<-read
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "503") {
		t.Errorf("waiting to retry: %v, want context.Canceled after the 503", err)
	}
}

func TestSendRefusesBadMessages(t *testing.T) {
	svc := webpushtest.NewService(t)
	s, _, sub := newSender(t, svc)
	for _, m := range []Message{
		{Contact: "den@localhost"},
		{Contact: "mailto:a@b", Urgency: "urgent"},
		{Contact: "mailto:a@b", Topic: strings.Repeat("a", 33)},
		{Contact: "mailto:a@b", Topic: "has space"},
		{Contact: "mailto:a@b", TTL: -time.Second},
	} {
		if err := s.Send(context.Background(), sub, m); !errors.Is(err, ErrBadMessage) {
			t.Errorf("%+v: %v, want ErrBadMessage", m, err)
		}
	}
	if err := s.Send(context.Background(), sub, Message{Contact: "mailto:a@b", Payload: make([]byte, MaxPayload+1)}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a payload too large: %v", err)
	}
}

// hook is a transport that signals on read when a response's body is
// closed: the client is done with the answer.
type hook struct {
	http.RoundTripper
	read chan struct{}
}

func (h hook) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := h.RoundTripper.RoundTrip(r)
	if err == nil {
		resp.Body = closeHook{resp.Body, h.read}
	}
	return resp, err
}

type closeHook struct {
	io.ReadCloser
	read chan struct{}
}

func (c closeHook) Close() error {
	err := c.ReadCloser.Close()
	select {
	case c.read <- struct{}{}:
	default:
	}
	return err
}
