package openaiapi

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
)

// CallIDs makes the tool-call ids of one turn unique: an empty id
// becomes a random "call_" id, and an id seen before gets "_2", "_3", ...
// appended. The zero value is ready to use; a CallIDs belongs to one
// turn and is not safe for concurrent use.
type CallIDs struct{ seen map[string]bool }

// Unique returns id, or a replacement no earlier call of the turn has.
func (u *CallIDs) Unique(id string) string {
	if u.seen == nil {
		u.seen = make(map[string]bool)
	}
	if id == "" {
		var b [12]byte
		rand.Read(b[:])
		id = "call_" + hex.EncodeToString(b[:])
	}
	out := id
	for n := 2; u.seen[out]; n++ {
		out = id + "_" + strconv.Itoa(n)
	}
	u.seen[out] = true
	return out
}
