package webpush

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

const (
	// MaxTries bounds the attempts of one Send: a push service that
	// answers 429 or 5xx gets the message at most this many times.
	MaxTries = 3
	// MaxRetryWait is the longest wait between two attempts. A service
	// that asks for longer (Retry-After) is not tried again.
	MaxRetryWait = 30 * time.Second
	// firstRetry is the wait after a first failure without Retry-After;
	// it doubles after each one.
	firstRetry = time.Second
	// maxTopic is the longest Topic header (RFC 8030 section 5.4).
	maxTopic = 32
	// maxShownBody bounds what an error quotes of a service's answer.
	maxShownBody = 200
)

// Urgency is how soon a message should reach the device (RFC 8030
// section 5.3); push services save a phone's battery with it.
type Urgency string

// Urgencies.
const (
	VeryLow Urgency = "very-low"
	Low     Urgency = "low"
	Normal  Urgency = "normal"
	High    Urgency = "high"
)

// Message is one push message and its delivery options.
type Message struct {
	Payload []byte
	// TTL is how long the push service keeps the message for a device
	// that is offline (whole seconds; 0: deliver now or drop).
	TTL time.Duration
	// Urgency is "" for the service's default (normal).
	Urgency Urgency
	// Topic, when set, replaces a message with the same topic that the
	// service still holds: at most 32 base64url characters.
	Topic string
	// Contact is the VAPID subject: a mailto: or https: URI.
	Contact string
}

// Sender posts messages to push services.
type Sender struct {
	Client *http.Client // nil: http.DefaultClient
	Keys   *Keys
}

// Send encrypts m for sub and posts it to sub's endpoint, trying again
// when the service asks to (see the package doc for how answers are
// classified). It returns nil once the service took the message.
func (s *Sender) Send(ctx context.Context, sub Subscription, m Message) error {
	if err := checkMessage(m); err != nil {
		return err
	}
	body, err := Encrypt(sub, m.Payload)
	if err != nil {
		return err
	}
	backoff := firstRetry
	for try := 1; ; try++ {
		err := s.post(ctx, sub.Endpoint, body, m)
		se, ok := err.(*StatusError)
		if !ok || !se.Retryable() || try == MaxTries {
			return err
		}
		wait := backoff
		if se.retryAfterSet {
			wait = se.RetryAfter
		}
		if wait > MaxRetryWait {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("webpush: send to %s: %w (after %v)", hostOf(sub.Endpoint), ctx.Err(), err)
		case <-t.C:
		}
		backoff *= 2
	}
}

// post makes one attempt. Its error is a *StatusError for an answer
// other than 201 or 202, or the transport's.
func (s *Sender) post(ctx context.Context, endpoint string, body []byte, m Message) error {
	auth, err := s.Keys.Authorization(endpoint, m.Contact, time.Now())
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webpush: send to %s: %w", hostOf(endpoint), err)
	}
	h := req.Header
	h.Set("Authorization", auth)
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Encoding", "aes128gcm")
	h.Set("TTL", strconv.FormatInt(int64(m.TTL/time.Second), 10))
	if m.Urgency != "" {
		h.Set("Urgency", string(m.Urgency))
	}
	if m.Topic != "" {
		h.Set("Topic", m.Topic)
	}
	client := s.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		// Not the *url.Error itself: it quotes the whole endpoint, whose
		// path identifies the browser.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("webpush: send to %s: %w", hostOf(endpoint), err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	switch resp.StatusCode {
	case http.StatusCreated, http.StatusAccepted:
		return nil
	}
	se := &StatusError{Status: resp.StatusCode, Body: shorten(answer)}
	se.RetryAfter, se.retryAfterSet = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	return se
}

// retryAfter reads a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0, false
		}
		if n > int64(24*time.Hour/time.Second) {
			n = int64(24 * time.Hour / time.Second)
		}
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// checkMessage refuses headers a push service would reject.
func checkMessage(m Message) error {
	switch m.Urgency {
	case "", VeryLow, Low, Normal, High:
	default:
		return fmt.Errorf("webpush: %w: urgency %q: want very-low, low, normal or high", ErrBadMessage, m.Urgency)
	}
	if m.TTL < 0 {
		return fmt.Errorf("webpush: %w: a negative TTL", ErrBadMessage)
	}
	if len(m.Topic) > maxTopic {
		return fmt.Errorf("webpush: %w: topic %q is over %d characters", ErrBadMessage, m.Topic, maxTopic)
	}
	for _, r := range m.Topic {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("webpush: %w: topic %q: only base64url characters (A-Z a-z 0-9 - _)", ErrBadMessage, m.Topic)
		}
	}
	return CheckContact(m.Contact)
}

// shorten is the start of a service's answer, on one line, printable.
func shorten(b []byte) string {
	s := strings.ToValidUTF8(string(b), "?")
	s = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return ' '
		}
		if !unicode.IsPrint(r) {
			return -1
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > maxShownBody {
		s = string([]rune(s)[:maxShownBody]) + "…"
	}
	return s
}

// hostOf is the endpoint's host: what errors and logs name, rather than
// the endpoint, whose path is the subscription's secret.
func hostOf(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "the push service"
	}
	return u.Host
}
