// Package webpush sends Web Push messages: RFC 8030 delivery to a push
// service, RFC 8291 message encryption (the aes128gcm content coding of
// RFC 8188) and RFC 8292 VAPID identification of the sender.
//
// It is written on the standard library alone (crypto/ecdh, crypto/hkdf,
// crypto/aes and crypto/cipher, crypto/ecdsa) rather than on the common
// Go module for Web Push, which pads every message to 4 KiB and prefixes
// a second "mailto:" to a subject that already has one; the standard
// library now has every primitive the protocol needs.
//
// # Contracts
//
//   - A Subscription is what a browser's PushSubscription gives:
//     an https endpoint, the browser's P-256 public key (p256dh) and a
//     16-byte authentication secret. ParseSubscription refuses anything
//     else, with an error wrapping ErrBadSubscription that says what is
//     wrong.
//   - Encrypt makes the whole request body: one record, the 86-byte
//     header (salt, record size 4096, key id = a fresh ephemeral P-256
//     public key), the plaintext, a single 0x02 padding delimiter and no
//     padding beyond it. A plaintext that would make the body longer
//     than MaxBody (4096 bytes, what every push service must accept) is
//     refused with ErrTooLarge; nothing is ever cut.
//   - Keys is the application server's VAPID key pair. LoadKeys keeps
//     it in DIR/vapid.key (PKCS#8 PEM, mode 0600, DIR 0700), created on
//     first use so that two processes starting at once agree on one key
//     (the file is linked into place, which fails if it exists). A key
//     file that is a symbolic link, not a regular file, or that group or
//     others may read is refused with ErrInsecureKey, never used.
//   - Authorization is the header value "vapid t=JWT, k=KEY": an ES256
//     JWT whose aud is the endpoint's origin, exp twelve hours ahead (the
//     protocol allows at most 24) and sub the contact given, verbatim.
//   - Sender.Send posts one message and classifies the push service's
//     answer: 201 or 202 is nil; 404 and 410 wrap ErrGone (the
//     subscription no longer exists: forget it); 413 wraps ErrTooLarge;
//     429 and 5xx are tried again (at most MaxTries times in all, waiting
//     as Retry-After says or 1 s, 2 s, … without it, never longer than
//     MaxRetryWait) and then reported; every other answer is a
//     *StatusError with the status and the start of the service's body.
//     The context cancels a send, waits included.
//
// # Concurrency
//
// Keys and Sender are safe for concurrent use; they hold no state that
// changes after they are made.
package webpush
