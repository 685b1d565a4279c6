package hostcmd

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"testing"

	"den.dev/den/internal/hostcmd/wire"
)

// What den allocates for a payload follows the bytes that arrive, not
// the length the header claims.
func TestPayloadGrowsWithData(t *testing.T) {
	allocated := func(f func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	f := newFrames(bytes.NewReader(make([]byte, 100)))
	var err error
	n := allocated(func() { _, err = f.payload(wire.MaxRequest) })
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("cut payload: %v", err)
	}
	if n > 2*wire.MaxData {
		t.Errorf("a claim of %d bytes with 100 sent allocated %d bytes", wire.MaxRequest, n)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), wire.MaxRequest/16)
	f = newFrames(bytes.NewReader(data))
	p, err := f.payload(len(data))
	if err != nil || !bytes.Equal(p, data) {
		t.Errorf("payload of %d bytes: %d, %v", len(data), len(p), err)
	}
}
