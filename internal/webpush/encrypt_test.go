package webpush

import (
	"bytes"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"den.dev/den/internal/webpush/webpushtest"
)

func b64(t *testing.T, s string) []byte {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return b
}

// TestRFC8291Example encrypts the example of RFC 8291 section 5 (keys,
// auth secret, salt and plaintext from its Appendix A) and gets the
// body the RFC shows, byte for byte.
func TestRFC8291Example(t *testing.T) {
	uaPublic := b64(t, "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcx aOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4")
	auth := b64(t, "BTBZMqHH6r4Tts7J_aSIgg")
	asPrivate, err := ecdh.P256().NewPrivateKey(b64(t, "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := asPrivate.PublicKey().Bytes(), b64(t, "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIg Dll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"); !bytes.Equal(got, want) {
		t.Fatal("the sender's private key does not give the RFC's public key")
	}
	salt := b64(t, "DGv6ra1nlYgDCS1FRnbzlw")
	plaintext := []byte("When I grow up, I want to be a watermelon")
	want := b64(t, `DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27ml
		mlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPT
		pK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN`)
	got, err := encrypt(uaPublic, auth, asPrivate, salt, plaintext)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("body\n%s\nwant\n%s", base64.RawURLEncoding.EncodeToString(got), base64.RawURLEncoding.EncodeToString(want))
	}
	// The example's Content-Length says 145, but the body it shows (and
	// 86 + 41 + 1 + 16) is 144 bytes.
	if len(got) != 144 {
		t.Errorf("body of %d bytes, want 144", len(got))
	}
}

// newBrowser is a subscriber's keys, made as a browser makes them.
func newBrowser(t *testing.T) (*ecdh.PrivateKey, Subscription) {
	t.Helper()
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	auth := make([]byte, 16)
	rand.Read(auth)
	return priv, Subscription{Endpoint: "https://push.example.net/x", P256dh: priv.PublicKey().Bytes(), Auth: auth}
}

// TestEncryptRoundTrip: what Encrypt makes, the browser decrypts (with
// webpushtest's own RFC 8291 code) to the plaintext; the body is the
// header, the plaintext, one delimiter and the tag, no padding; two
// encryptions of one plaintext differ (a fresh key and salt each).
func TestEncryptRoundTrip(t *testing.T) {
	priv, sub := newBrowser(t)
	for _, plain := range [][]byte{{}, []byte(`{"title":"den","body":"hi"}`), bytes.Repeat([]byte("é"), MaxPayload/2)} {
		body, err := Encrypt(sub, plain)
		if err != nil {
			t.Fatal(err)
		}
		if len(body) != 86+len(plain)+1+16 {
			t.Errorf("%d bytes of plaintext made %d bytes of body, want %d", len(plain), len(body), 86+len(plain)+17)
		}
		got, err := webpushtest.Decrypt(priv, sub.Auth, body)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, plain) {
			t.Errorf("decrypted %q, want %q", got, plain)
		}
		again, _ := Encrypt(sub, plain)
		if bytes.Equal(again, body) || bytes.Equal(again[:16], body[:16]) || bytes.Equal(again[21:86], body[21:86]) {
			t.Error("two encryptions share a salt or an ephemeral key")
		}
	}
	// Another browser's keys open nothing.
	other, _ := newBrowser(t)
	body, _ := Encrypt(sub, []byte("secret"))
	if _, err := webpushtest.Decrypt(other, sub.Auth, body); err == nil {
		t.Error("another browser's key decrypted the message")
	}
}

// TestEncryptLimit: the largest payload that fits makes a body of
// exactly MaxBody bytes; one byte more is ErrTooLarge.
func TestEncryptLimit(t *testing.T) {
	_, sub := newBrowser(t)
	body, err := Encrypt(sub, make([]byte, MaxPayload))
	if err != nil || len(body) != MaxBody {
		t.Fatalf("%d bytes of payload: %d bytes of body, %v", MaxPayload, len(body), err)
	}
	if _, err := Encrypt(sub, make([]byte, MaxPayload+1)); !errors.Is(err, ErrTooLarge) {
		t.Errorf("%d bytes of payload: %v, want ErrTooLarge", MaxPayload+1, err)
	}
}

func TestParseSubscription(t *testing.T) {
	priv, _ := newBrowser(t)
	key := base64.RawURLEncoding.EncodeToString(priv.PublicKey().Bytes())
	auth := base64.RawURLEncoding.EncodeToString(make([]byte, 16))
	s, err := ParseSubscription("https://fcm.example/wp/abc", key, auth+"==")
	if err != nil || len(s.P256dh) != 65 || len(s.Auth) != 16 {
		t.Fatalf("a browser's subscription: %+v %v", s, err)
	}
	offCurve := make([]byte, 65)
	offCurve[0] = 4
	for _, c := range []struct{ endpoint, key, auth, want string }{
		{"http://push.example/x", key, auth, "https"},
		{"ftp://push.example/x", key, auth, "https"},
		{"https:///x", key, auth, "no host"},
		{"https://push.example/" + strings.Repeat("a", MaxEndpoint), key, auth, "long"},
		{"https://u:p@push.example/x", key, auth, "user"},
		{"", key, auth, "empty"},
		{"https://push.example/x", base64.RawURLEncoding.EncodeToString(offCurve), auth, "P-256"},
		{"https://push.example/x", key[:40], auth, "P-256"},
		{"https://push.example/x", "not base64!", auth, "base64url"},
		{"https://push.example/x", key, base64.RawURLEncoding.EncodeToString(make([]byte, 15)), "not 16"},
	} {
		_, err := ParseSubscription(c.endpoint, c.key, c.auth)
		if !errors.Is(err, ErrBadSubscription) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%.40q %.20q %q: %v, want ErrBadSubscription saying %q", c.endpoint, c.key, c.auth, err, c.want)
		}
	}
}
