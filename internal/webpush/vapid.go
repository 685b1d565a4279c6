package webpush

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// TokenLife is how long a VAPID token is valid: RFC 8292 allows at most
// 24 hours; push services compare with their own clocks, so den stays
// well inside.
const TokenLife = 12 * time.Hour

// Keys is the application server's VAPID key pair (P-256).
type Keys struct {
	private *ecdsa.PrivateKey
	public  []byte // uncompressed point, 65 bytes
}

// PublicKey is the public key as an uncompressed P-256 point (65
// bytes): the applicationServerKey browsers subscribe with.
func (k *Keys) PublicKey() []byte { return append([]byte(nil), k.public...) }

// PublicKeyString is PublicKey in base64url without padding, as pages
// and the Authorization header carry it.
func (k *Keys) PublicKeyString() string { return encode64(k.public) }

// Authorization is the Authorization header value for a message to
// endpoint (RFC 8292): "vapid t=<JWT>, k=<public key>", the JWT signed
// with ES256 and claiming aud (the endpoint's scheme://host[:port]), exp
// (now + TokenLife) and sub (contact, a mailto: or https: URI, used as
// given).
func (k *Keys) Authorization(endpoint, contact string, now time.Time) (string, error) {
	if err := CheckContact(contact); err != nil {
		return "", err
	}
	u, err := url.Parse(endpoint)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return "", fmt.Errorf("webpush: %w: the endpoint %q is not an absolute URL", ErrBadSubscription, endpoint)
	}
	claims, err := json.Marshal(struct {
		Aud string `json:"aud"`
		Exp int64  `json:"exp"`
		Sub string `json:"sub"`
	}{u.Scheme + "://" + u.Host, now.Add(TokenLife).Unix(), contact})
	if err != nil {
		return "", fmt.Errorf("webpush: vapid claims: %w", err)
	}
	input := encode64([]byte(`{"typ":"JWT","alg":"ES256"}`)) + "." + encode64(claims)
	digest := sha256.Sum256([]byte(input))
	r, s, err := ecdsa.Sign(rand.Reader, k.private, digest[:])
	if err != nil {
		return "", fmt.Errorf("webpush: vapid signature: %w", err)
	}
	// JWS ES256 is r and s as two 32-byte big-endian numbers (RFC 7518
	// section 3.4), not ASN.1.
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return "vapid t=" + input + "." + encode64(sig) + ", k=" + k.PublicKeyString(), nil
}

// CheckContact checks a VAPID subject: a mailto: or https: URI with
// something after the scheme. Its errors wrap ErrBadMessage.
func CheckContact(contact string) error {
	rest, ok := strings.CutPrefix(contact, "mailto:")
	if !ok {
		rest, ok = strings.CutPrefix(contact, "https://")
	}
	if !ok || rest == "" || strings.ContainsAny(contact, " \t\r\n\"\\") {
		return fmt.Errorf("webpush: %w: the contact %q is not a mailto: or https: URI", ErrBadMessage, contact)
	}
	return nil
}
