package webpush

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"
)

// TestAuthorization: the header is "vapid t=JWT, k=KEY" with k the
// public key; the JWT's header says ES256, its signature (r||s)
// verifies with k, and its claims are the endpoint's origin, twelve
// hours from now and the contact as given.
func TestAuthorization(t *testing.T) {
	k, err := LoadKeys(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_700_000_000, 0)
	for _, c := range []struct{ endpoint, aud, contact string }{
		{"https://fcm.example.com/fcm/send/abc:def", "https://fcm.example.com", "mailto:me@example.org"},
		{"https://push.example.net:8443/wpush/v2/xyz?q=1", "https://push.example.net:8443", "https://den.example.ts.net"},
	} {
		h, err := k.Authorization(c.endpoint, c.contact, now)
		if err != nil {
			t.Fatal(err)
		}
		rest, ok := strings.CutPrefix(h, "vapid t=")
		tok, key, ok2 := strings.Cut(rest, ", k=")
		if !ok || !ok2 {
			t.Fatalf("header %q", h)
		}
		if key != k.PublicKeyString() {
			t.Errorf("k=%s, want the public key %s", key, k.PublicKeyString())
		}
		parts := strings.Split(tok, ".")
		if len(parts) != 3 {
			t.Fatalf("JWT %q", tok)
		}
		var head map[string]string
		var claims map[string]any
		if err := json.Unmarshal(b64(t, parts[0]), &head); err != nil || head["alg"] != "ES256" || head["typ"] != "JWT" {
			t.Errorf("JWT header %s", b64(t, parts[0]))
		}
		if err := json.Unmarshal(b64(t, parts[1]), &claims); err != nil {
			t.Fatal(err)
		}
		if claims["aud"] != c.aud || claims["sub"] != c.contact || claims["exp"] != float64(now.Add(12*time.Hour).Unix()) || len(claims) != 3 {
			t.Errorf("claims %v, want aud %s, exp %d, sub %s", claims, c.aud, now.Add(12*time.Hour).Unix(), c.contact)
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), b64(t, key))
		if err != nil {
			t.Fatal(err)
		}
		sig := b64(t, parts[2])
		digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
		if len(sig) != 64 || !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
			t.Error("the JWT's signature does not verify with k")
		}
		tampered := sha256.Sum256([]byte(parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"aud":"x"}`))))
		if ecdsa.Verify(pub, tampered[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
			t.Error("the signature verifies other claims too")
		}
	}
}

func TestAuthorizationRefusesContacts(t *testing.T) {
	k, err := LoadKeys(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, contact := range []string{"", "den@example.org", "mailto:", "http://example.org", "https://", "mailto:a b@example.org"} {
		if _, err := k.Authorization("https://push.example/x", contact, time.Now()); !errors.Is(err, ErrBadMessage) {
			t.Errorf("contact %q: %v, want ErrBadMessage", contact, err)
		}
	}
}
