package store

import (
	"crypto/rand"
	"encoding/binary"
	"time"
)

// crockford is Crockford's base32 alphabet in lower case: URL-safe, no
// ambiguous letters, and its byte order is its numeric order.
const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// newID returns a 20-character id: 10 characters of t in Unix
// milliseconds, then 10 of randomness (50 bits). Ids sort by creation
// millisecond; within one millisecond their order is random.
func newID(t time.Time) string {
	var b [20]byte
	ms := uint64(t.UnixMilli())
	for i := 9; i >= 0; i-- {
		b[i] = crockford[ms&31]
		ms >>= 5
	}
	var r [8]byte
	rand.Read(r[:]) // never fails (crypto/rand, Go 1.24+)
	x := binary.BigEndian.Uint64(r[:])
	for i := 19; i >= 10; i-- {
		b[i] = crockford[x&31]
		x >>= 5
	}
	return string(b[:])
}

// NewID returns a new id of the kind the store gives its rows, for
// things that live outside it (a request to a browser).
func NewID() string { return newID(time.Now()) }
