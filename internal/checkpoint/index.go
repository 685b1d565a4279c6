package checkpoint

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
)

// A take compares each folder with its listing in the last checkpoint:
// reading those listings one object at a time costs a few system calls
// each, thousands of them for a rootfs. So the store keeps the last
// take's listings decoded in memory (for the next take in the same
// process: den serve), and all of them in one file, DIR/index, read at
// once by the next process's first take (den run). Listings are named
// by their content: a cached one is never stale, only possibly absent,
// and each is checked against its name when it is decoded.

// listing is a folder's listing, decoded and as stored.
type listing struct {
	entries []Entry
	enc     []byte
}

const indexMagic = "den-index 1\n"

// cached returns a listing of the last take, from memory or the index.
func (s *Store) cached(h Hash) (listing, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.cache[h]; ok {
		return l, true
	}
	if !s.indexed {
		s.indexed = true
		s.index = s.readIndex()
	}
	b, ok := s.index[h]
	if !ok || treeHash(b) != h {
		return listing{}, false
	}
	es, err := decodeTree(b)
	if err != nil {
		return listing{}, false
	}
	l := listing{es, b}
	if s.cache == nil {
		s.cache = map[Hash]listing{}
	}
	s.cache[h] = l
	return l, true
}

// readIndex reads DIR/index; a missing or damaged one is no index.
func (s *Store) readIndex() map[Hash][]byte {
	b, err := os.ReadFile(filepath.Join(s.dir, "index"))
	if err != nil || !bytes.HasPrefix(b, []byte(indexMagic)) {
		return nil
	}
	b = b[len(indexMagic):]
	out := map[Hash][]byte{}
	for len(b) > 0 {
		var h Hash
		if len(b) < len(h) {
			return out
		}
		copy(h[:], b)
		b = b[len(h):]
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return out
		}
		out[h] = b[k : k+int(n)]
		b = b[k+int(n):]
	}
	return out
}

// remember keeps the listings of a take in memory, and with write in
// DIR/index too (written beside, then renamed into place). A take
// writes the index when the caches missed much of what it needed: an
// index a little behind still holds every folder unchanged since, most
// of a rootfs, so writing it at every take would cost more than it
// saves.
func (s *Store) remember(seen map[Hash]listing, write bool) error {
	s.mu.Lock()
	s.cache, s.index, s.indexed = seen, nil, true
	s.mu.Unlock()
	if !write {
		return nil
	}
	size := len(indexMagic)
	for _, l := range seen {
		size += len(Hash{}) + binary.MaxVarintLen64 + len(l.enc)
	}
	b := make([]byte, 0, size)
	b = append(b, indexMagic...)
	for h, l := range seen {
		b = append(b, h[:]...)
		b = binary.AppendUvarint(b, uint64(len(l.enc)))
		b = append(b, l.enc...)
	}
	tmp := filepath.Join(s.dir, ".index-"+randomName())
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("checkpoint: index: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(s.dir, "index")); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("checkpoint: index: %w", err)
	}
	return nil
}
