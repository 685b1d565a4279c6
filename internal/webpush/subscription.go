package webpush

import (
	"crypto/ecdh"
	"encoding/base64"
	"fmt"
	"net/url"
	"strings"
)

// MaxEndpoint bounds an endpoint's length. The endpoints of the push
// services browsers use are a few hundred characters.
const MaxEndpoint = 2048

// Subscription is where and for whom to encrypt a message: a browser's
// PushSubscription.
type Subscription struct {
	Endpoint string
	P256dh   []byte // the browser's P-256 public key, uncompressed (65 bytes)
	Auth     []byte // the authentication secret (16 bytes)
}

// ParseSubscription checks and decodes what a browser's
// PushSubscription.toJSON() holds: the endpoint, an https URL, and the
// keys p256dh (a P-256 point) and auth (16 bytes) in base64url, with
// or without padding. Its errors wrap ErrBadSubscription.
func ParseSubscription(endpoint, p256dh, auth string) (Subscription, error) {
	if err := CheckEndpoint(endpoint); err != nil {
		return Subscription{}, err
	}
	key, err := decode64(p256dh)
	if err != nil {
		return Subscription{}, fmt.Errorf("%w: keys.p256dh is not base64url: %v", ErrBadSubscription, err)
	}
	secret, err := decode64(auth)
	if err != nil {
		return Subscription{}, fmt.Errorf("%w: keys.auth is not base64url: %v", ErrBadSubscription, err)
	}
	s := Subscription{Endpoint: endpoint, P256dh: key, Auth: secret}
	if err := s.check(); err != nil {
		return Subscription{}, err
	}
	return s, nil
}

// CheckEndpoint checks that endpoint can be a push service's: an
// absolute https URL with a host, no user or fragment, at most
// MaxEndpoint bytes. Its errors wrap ErrBadSubscription.
func CheckEndpoint(endpoint string) error {
	if endpoint == "" {
		return fmt.Errorf("%w: the endpoint is empty", ErrBadSubscription)
	}
	if len(endpoint) > MaxEndpoint {
		return fmt.Errorf("%w: the endpoint is %d bytes long, over %d", ErrBadSubscription, len(endpoint), MaxEndpoint)
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return fmt.Errorf("%w: the endpoint is not a URL", ErrBadSubscription)
	}
	if u.Scheme != "https" {
		return fmt.Errorf("%w: the endpoint must be an https URL, not %q", ErrBadSubscription, u.Scheme+":")
	}
	if u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%w: the endpoint has no host", ErrBadSubscription)
	}
	if u.User != nil || u.Fragment != "" || strings.ContainsAny(endpoint, " \t\r\n") {
		return fmt.Errorf("%w: the endpoint has a user, a fragment or spaces", ErrBadSubscription)
	}
	return nil
}

// check validates a Subscription made by hand or read back from
// storage.
func (s Subscription) check() error {
	if err := CheckEndpoint(s.Endpoint); err != nil {
		return err
	}
	if _, err := ecdh.P256().NewPublicKey(s.P256dh); err != nil {
		return fmt.Errorf("%w: keys.p256dh is not an uncompressed P-256 public key (%d bytes)", ErrBadSubscription, len(s.P256dh))
	}
	if len(s.Auth) != 16 {
		return fmt.Errorf("%w: keys.auth is %d bytes, not 16", ErrBadSubscription, len(s.Auth))
	}
	return nil
}

// decode64 reads base64url with or without padding (browsers send it
// without; some libraries add it).
func decode64(s string) ([]byte, error) {
	return base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "="))
}

// encode64 is base64url without padding, as Web Push writes keys.
func encode64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
