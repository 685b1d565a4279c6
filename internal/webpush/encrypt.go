package webpush

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

const (
	// MaxBody is the largest body a push service must accept (RFC 8030
	// section 7.2).
	MaxBody = 4096
	// headerLen is the aes128gcm header: salt (16), record size (4),
	// key id length (1) and the key id, an uncompressed P-256 point (65).
	headerLen = 16 + 4 + 1 + 65
	// tagLen is AES-GCM's authentication tag.
	tagLen = 16
	// MaxPayload is the longest plaintext that fits in MaxBody with the
	// header, the padding delimiter and the tag: 3993 bytes.
	MaxPayload = MaxBody - headerLen - 1 - tagLen
	// recordSize is the rs the header declares. A message is one record,
	// so any size above the plaintext's would do; 4096 is what the
	// RFC's example and browsers use.
	recordSize = 4096
)

// Encrypt encrypts plaintext for sub (RFC 8291) and returns the request
// body: the aes128gcm header and the one record. The ephemeral key and
// the salt are new for every call. A plaintext longer than MaxPayload is
// refused with ErrTooLarge.
func Encrypt(sub Subscription, plaintext []byte) ([]byte, error) {
	if err := sub.check(); err != nil {
		return nil, err
	}
	ephemeral, err := ecdh.P256().GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("webpush: encrypt: %w", err)
	}
	salt := make([]byte, 16)
	rand.Read(salt) // never fails (crypto/rand crashes the program instead)
	return encrypt(sub.P256dh, sub.Auth, ephemeral, salt, plaintext)
}

// encrypt is Encrypt with the sender's ephemeral key and the salt given:
// deterministic, so that it can be checked against RFC 8291's example.
func encrypt(uaPublic, authSecret []byte, ephemeral *ecdh.PrivateKey, salt, plaintext []byte) ([]byte, error) {
	if len(plaintext) > MaxPayload {
		return nil, fmt.Errorf("webpush: %w: a payload of %d bytes makes a body over %d bytes (at most %d bytes of payload)",
			ErrTooLarge, len(plaintext), MaxBody, MaxPayload)
	}
	ua, err := ecdh.P256().NewPublicKey(uaPublic)
	if err != nil {
		return nil, fmt.Errorf("webpush: encrypt: %w: keys.p256dh: %v", ErrBadSubscription, err)
	}
	ecdhSecret, err := ephemeral.ECDH(ua)
	if err != nil {
		return nil, fmt.Errorf("webpush: encrypt: %w", err)
	}
	asPublic := ephemeral.PublicKey().Bytes()

	// RFC 8291 section 3.4: combine the ECDH and authentication secrets
	// (PRK_key = HKDF-Extract(auth_secret, ecdh_secret), then expand with
	// key_info), then RFC 8188's key and nonce from the salt.
	keyInfo := "WebPush: info\x00" + string(uaPublic) + string(asPublic)
	ikm, err := hkdf.Key(sha256.New, ecdhSecret, authSecret, keyInfo, 32)
	if err != nil {
		return nil, fmt.Errorf("webpush: encrypt: %w", err)
	}
	prk, err := hkdf.Extract(sha256.New, ikm, salt)
	if err != nil {
		return nil, fmt.Errorf("webpush: encrypt: %w", err)
	}
	cek, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: aes128gcm\x00", 16)
	if err != nil {
		return nil, fmt.Errorf("webpush: encrypt: %w", err)
	}
	nonce, err := hkdf.Expand(sha256.New, prk, "Content-Encoding: nonce\x00", 12)
	if err != nil {
		return nil, fmt.Errorf("webpush: encrypt: %w", err)
	}
	block, err := aes.NewCipher(cek)
	if err != nil {
		return nil, fmt.Errorf("webpush: encrypt: %w", err)
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("webpush: encrypt: %w", err)
	}

	body := make([]byte, 0, headerLen+len(plaintext)+1+tagLen)
	body = append(body, salt...)
	body = binary.BigEndian.AppendUint32(body, recordSize)
	body = append(body, byte(len(asPublic)))
	body = append(body, asPublic...)
	record := make([]byte, 0, len(plaintext)+1)
	record = append(append(record, plaintext...), 0x02) // the last (and only) record's delimiter, no padding
	// One record: its sequence number is 0, so the nonce is used as is.
	return gcm.Seal(body, nonce, record, nil), nil
}
