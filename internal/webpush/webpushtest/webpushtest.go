// Package webpushtest is a fake push service for tests: an https server
// (httptest, TLS) that checks each message as a push service does and
// decrypts it as the subscribed browser would, with code of its own
// written from RFC 8291, RFC 8188 and RFC 8292 (HMAC-SHA-256 steps, not
// the hkdf package webpush uses), so that a mistake in webpush does not
// cancel out.
//
// A message that breaks a rule is answered as a push service answers it
// (400 or 401 and a reason) and recorded with Err set; tests read every
// message from Browser.Received.
package webpushtest

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Service is a fake push service.
type Service struct {
	*httptest.Server
	mu       sync.Mutex
	browsers map[string]*Browser // by URL path
	n        int
}

// NewService starts a fake push service, closed when the test ends.
func NewService(t testing.TB) *Service {
	s := &Service{browsers: map[string]*Browser{}}
	s.Server = httptest.NewTLSServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// CertPEM is the service's certificate in PEM: for SSL_CERT_FILE, so
// that a den process trusts it.
func (s *Service) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}

// Browser is one subscription as the browser holds it: the endpoint and
// the keys it gave, and the private key only it knows.
type Browser struct {
	Endpoint     string
	P256dh, Auth []byte
	// ServerKey is the applicationServerKey the browser subscribed
	// with: messages must carry it as the VAPID k.
	ServerKey []byte

	private  *ecdh.PrivateKey
	received chan Received

	mu      sync.Mutex
	answers []Answer
	hold    chan struct{} // while set, requests wait for it to close
}

// Answer is what the service answers one request with, before the
// message is checked.
type Answer struct {
	Status     int
	RetryAfter string // the Retry-After header, when not ""
	Body       string
}

// Received is one request the service got for a browser.
type Received struct {
	Header  http.Header
	Payload []byte // the decrypted plaintext, when Err is nil
	Body    []byte // the request body as sent
	Claims  Claims
	Status  int   // what the service answered
	Err     error // why the message was refused, when it was
}

// Claims are a VAPID token's claims.
type Claims struct {
	Aud string `json:"aud"`
	Exp int64  `json:"exp"`
	Sub string `json:"sub"`
}

// Subscribe makes a browser subscribed with serverKey (the application
// server's public key, uncompressed): a fresh key pair and auth secret,
// and an endpoint of this service.
func (s *Service) Subscribe(serverKey []byte) *Browser {
	priv, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	auth := make([]byte, 16)
	rand.Read(auth)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	path := fmt.Sprintf("/push/%d-%x", s.n, auth[:6])
	b := &Browser{Endpoint: s.URL + path, P256dh: priv.PublicKey().Bytes(), Auth: auth, ServerKey: serverKey,
		private: priv, received: make(chan Received, 100)}
	s.browsers[path] = b
	return b
}

// Keys are the browser's keys as PushSubscription.toJSON() gives them.
func (b *Browser) Keys() (p256dh, auth string) {
	return base64.RawURLEncoding.EncodeToString(b.P256dh), base64.RawURLEncoding.EncodeToString(b.Auth)
}

// Answer queues answers for the next requests; once they are used up
// the service takes messages (201).
func (b *Browser) Answer(a ...Answer) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.answers = append(b.answers, a...)
}

// Hold makes requests wait (the service is slow) until Release or the
// request ends.
func (b *Browser) Hold() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hold == nil {
		b.hold = make(chan struct{})
	}
}

// Release lets held requests go on.
func (b *Browser) Release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.hold != nil {
		close(b.hold)
		b.hold = nil
	}
}

// Received are the requests for this browser, in order.
func (b *Browser) Received() <-chan Received { return b.received }

// Next waits up to timeout for the next request for this browser.
func (b *Browser) Next(t testing.TB, timeout time.Duration) Received {
	t.Helper()
	select {
	case r := <-b.received:
		return r
	case <-time.After(timeout):
		t.Fatalf("the push service got nothing for %s in %v", b.Endpoint, timeout)
		return Received{}
	}
}

func (s *Service) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	b := s.browsers[r.URL.Path]
	s.mu.Unlock()
	if b == nil || r.Method != http.MethodPost {
		http.Error(w, `{"reason":"no such subscription"}`, http.StatusNotFound)
		return
	}
	b.mu.Lock()
	hold := b.hold
	var a *Answer
	if len(b.answers) > 0 {
		a = &b.answers[0]
		b.answers = b.answers[1:]
	}
	b.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-r.Context().Done():
			return
		}
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	rec := Received{Header: r.Header.Clone(), Body: body}
	defer func() { b.received <- rec }()
	if a != nil {
		if a.RetryAfter != "" {
			w.Header().Set("Retry-After", a.RetryAfter)
		}
		rec.Status = a.Status
		w.WriteHeader(a.Status)
		io.WriteString(w, a.Body)
		return
	}
	rec.Claims, rec.Err = s.checkVAPID(r, b)
	if rec.Err != nil {
		rec.Status = http.StatusUnauthorized
		http.Error(w, rec.Err.Error(), rec.Status)
		return
	}
	rec.Payload, rec.Err = s.checkMessage(r, b, body)
	if rec.Err != nil {
		rec.Status = http.StatusBadRequest
		http.Error(w, rec.Err.Error(), rec.Status)
		return
	}
	rec.Status = http.StatusCreated
	w.Header().Set("Location", s.URL+"/message/"+strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusCreated)
}

// checkVAPID checks the Authorization header (RFC 8292): "vapid t=JWT,
// k=KEY", the key the browser subscribed with, an ES256 signature that
// verifies with it, aud this service's origin, exp in the future and no
// more than 24 hours ahead, sub a mailto: or https: URI.
func (s *Service) checkVAPID(r *http.Request, b *Browser) (Claims, error) {
	var c Claims
	v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "vapid ")
	if !ok {
		return c, errors.New("no vapid Authorization")
	}
	params := map[string]string{}
	for _, p := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(p), "=")
		params[k] = val
	}
	k, err := base64.RawURLEncoding.DecodeString(params["k"])
	if err != nil || !bytes.Equal(k, b.ServerKey) {
		return c, fmt.Errorf("vapid k %q is not the key the browser subscribed with", params["k"])
	}
	parts := strings.Split(params["t"], ".")
	if len(parts) != 3 {
		return c, errors.New("vapid t is not a JWT")
	}
	head, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil {
		return c, fmt.Errorf("JWT header: %v", err)
	}
	var h struct{ Typ, Alg string }
	if err := json.Unmarshal(head, &h); err != nil || h.Alg != "ES256" || h.Typ != "JWT" {
		return c, fmt.Errorf("JWT header %s: want typ JWT, alg ES256", head)
	}
	claims, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return c, fmt.Errorf("JWT claims: %v", err)
	}
	if err := json.Unmarshal(claims, &c); err != nil {
		return c, fmt.Errorf("JWT claims %s: %v", claims, err)
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return c, errors.New("JWT signature is not 64 bytes of base64url")
	}
	pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), k)
	if err != nil {
		return c, fmt.Errorf("vapid k: %v", err)
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(pub, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		return c, errors.New("JWT signature does not verify with k")
	}
	if c.Aud != s.URL {
		return c, fmt.Errorf("JWT aud %q, want %q", c.Aud, s.URL)
	}
	now := time.Now().Unix()
	if c.Exp <= now || c.Exp > now+24*3600 {
		return c, fmt.Errorf("JWT exp %d is not within 24 hours from now (%d)", c.Exp, now)
	}
	if !strings.HasPrefix(c.Sub, "mailto:") && !strings.HasPrefix(c.Sub, "https://") {
		return c, fmt.Errorf("JWT sub %q is not a mailto: or https: URI", c.Sub)
	}
	return c, nil
}

// checkMessage checks the headers RFC 8030 and RFC 8291 require and
// decrypts the body as b.
func (s *Service) checkMessage(r *http.Request, b *Browser, body []byte) ([]byte, error) {
	if ce := r.Header.Get("Content-Encoding"); ce != "aes128gcm" {
		return nil, fmt.Errorf("Content-Encoding %q, want aes128gcm", ce)
	}
	if ttl, err := strconv.Atoi(r.Header.Get("TTL")); err != nil || ttl < 0 {
		return nil, fmt.Errorf("TTL %q is not a number of seconds", r.Header.Get("TTL"))
	}
	switch u := r.Header.Get("Urgency"); u {
	case "", "very-low", "low", "normal", "high":
	default:
		return nil, fmt.Errorf("Urgency %q", u)
	}
	if len(body) > 4096 {
		return nil, fmt.Errorf("body of %d bytes, over 4096", len(body))
	}
	return Decrypt(b.private, b.Auth, body)
}

// Decrypt opens an aes128gcm body of one record for the browser whose
// private key and auth secret are given (RFC 8291 section 3, RFC 8188
// section 2), checking the padding delimiter.
func Decrypt(private *ecdh.PrivateKey, auth, body []byte) ([]byte, error) {
	if len(body) < 21 {
		return nil, errors.New("body shorter than the aes128gcm header")
	}
	salt, rs, idlen := body[:16], binary.BigEndian.Uint32(body[16:20]), int(body[20])
	if idlen != 65 || len(body) < 21+idlen+17 {
		return nil, fmt.Errorf("key id of %d bytes, want an uncompressed P-256 point (65)", idlen)
	}
	keyid, record := body[21:21+idlen], body[21+idlen:]
	if uint32(len(record)) > rs {
		return nil, fmt.Errorf("a record of %d bytes is over the record size %d: more than one record", len(record), rs)
	}
	asPublic, err := ecdh.P256().NewPublicKey(keyid)
	if err != nil {
		return nil, fmt.Errorf("key id: %v", err)
	}
	secret, err := private.ECDH(asPublic)
	if err != nil {
		return nil, err
	}
	uaPublic := private.PublicKey().Bytes()
	prkKey := hmacSHA256(auth, secret)
	ikm := hmacSHA256(prkKey, []byte("WebPush: info\x00"), uaPublic, keyid, []byte{1})
	prk := hmacSHA256(salt, ikm)
	cek := hmacSHA256(prk, []byte("Content-Encoding: aes128gcm\x00"), []byte{1})[:16]
	nonce := hmacSHA256(prk, []byte("Content-Encoding: nonce\x00"), []byte{1})[:12]
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	plain, err := gcm.Open(nil, nonce, record, nil)
	if err != nil {
		return nil, fmt.Errorf("decrypt: %v", err)
	}
	i := len(plain) - 1
	for i >= 0 && plain[i] == 0 {
		i--
	}
	if i < 0 || plain[i] != 2 {
		return nil, errors.New("no 0x02 delimiter: not the last record")
	}
	return plain[:i], nil
}

func hmacSHA256(key []byte, data ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, d := range data {
		m.Write(d)
	}
	return m.Sum(nil)
}
