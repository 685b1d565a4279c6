package auth

import (
	"errors"
	"fmt"
	"io"
	"net/http"
)

// body is the request body the guard installs: the original one behind
// an http.MaxBytesReader, kept so that LimitBody can set another limit.
type body struct {
	orig io.ReadCloser
	w    http.ResponseWriter // the guard's writer, which MaxBytesReader tells to close the connection
	lim  io.ReadCloser
	read int64
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.lim.Read(p)
	b.read += int64(n)
	return n, err
}

func (b *body) Close() error { return b.lim.Close() }

// LimitBody sets the limit of r's body to n bytes, raising or lowering
// the guard's Options.MaxBody for one route (a file upload, say). Call
// it before reading the body; bytes already read count against n. On a
// body the guard did not install (no guard, or a middleware replaced
// it) it wraps the body in an http.MaxBytesReader, which can only
// lower the limit further.
func LimitBody(w http.ResponseWriter, r *http.Request, n int64) {
	if b, ok := r.Body.(*body); ok {
		b.lim = http.MaxBytesReader(b.w, b.orig, n-b.read)
		return
	}
	if r.Body != nil {
		r.Body = http.MaxBytesReader(w, r.Body, n)
	}
}

// BodyError answers a request with 413 and a too_large JSON error if
// err, from reading its body, is the limit's error, and reports whether
// it did. Other errors are left to the caller.
func BodyError(w http.ResponseWriter, err error) bool {
	var tooLarge *http.MaxBytesError
	if !errors.As(err, &tooLarge) {
		return false
	}
	writeError(w, codeTooLarge, fmt.Sprintf("the request body is over the limit of %d bytes", tooLarge.Limit))
	return true
}
