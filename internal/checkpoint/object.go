package checkpoint

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"golang.org/x/sys/unix"
)

// A file's content hash is SHA-256 over "den-file 1\n", its size (8
// bytes, little-endian) and the SHA-256 of each of its 1 MiB blocks.
// Hashing by blocks lets a hole (a block the file system never
// allocated, which reads as zeros) be hashed without reading it, so a
// huge sparse file the computer makes costs what its data costs, and
// the hash stays the same however the zeros are stored.
const blockSize = 1 << 20

const fileMagic = "den-file 1\n"

// zeroBlock is the hash of a whole block of zeros.
var zeroBlock = sync.OnceValue(func() Hash { return sha256.Sum256(make([]byte, blockSize)) })

func zeroHash(n int64) Hash {
	if n == blockSize {
		return zeroBlock()
	}
	return sha256.Sum256(make([]byte, n))
}

// holes finds a file's data, one region at a time: SEEK_DATA and
// SEEK_HOLE, asked only when the file has fewer blocks than its size
// needs (a file without holes is all data).
type holes struct {
	fd     int
	size   int64
	sparse bool
	data   int64 // start of the next data at or after the last question
	hole   int64 // start of the hole after it
}

func newHoles(fd int, st *unix.Stat_t) *holes {
	h := &holes{fd: fd, size: st.Size, sparse: st.Blocks*512 < st.Size, hole: -1}
	if !h.sparse {
		h.data, h.hole = 0, st.Size
	}
	return h
}

// anyData reports whether [off, off+n) holds any data.
func (h *holes) anyData(off, n int64) bool {
	if !h.sparse {
		return true
	}
	if off >= h.hole {
		d, err := unix.Seek(h.fd, off, unix.SEEK_DATA)
		if err != nil {
			// ENXIO: no data after off. Another error: read it all.
			if errors.Is(err, unix.ENXIO) {
				h.data, h.hole = h.size, h.size+1
				return false
			}
			h.sparse = false
			return true
		}
		e, err := unix.Seek(h.fd, d, unix.SEEK_HOLE)
		if err != nil {
			e = h.size
		}
		h.data, h.hole = d, max(e, d+1)
	}
	return h.data < off+n
}

// hashCopy reads the first size bytes of src, a block at a time,
// and returns their content hash. With dst >= 0 it writes what it read
// there at the same offsets, except blocks of zeros, and sets dst's
// size: dst is a sparse copy. A file cut short while it is read reads
// as zeros past its end.
func hashCopy(src, dst int, st *unix.Stat_t, buf []byte) (Hash, error) {
	h := sha256.New()
	var hdr [8]byte
	binary.LittleEndian.PutUint64(hdr[:], uint64(st.Size))
	h.Write([]byte(fileMagic))
	h.Write(hdr[:])
	hs := newHoles(src, st)
	buf = buf[:blockSize]
	for off := int64(0); off < st.Size; off += blockSize {
		n := min(blockSize, st.Size-off)
		if !hs.anyData(off, n) {
			b := zeroHash(n)
			h.Write(b[:])
			continue
		}
		block := buf[:n]
		if err := preadFull(src, block, off); err != nil {
			return Hash{}, err
		}
		b := sha256.Sum256(block)
		h.Write(b[:])
		if dst >= 0 {
			if err := writeData(dst, block, off); err != nil {
				return Hash{}, err
			}
		}
	}
	if dst >= 0 {
		if err := unix.Ftruncate(dst, st.Size); err != nil {
			return Hash{}, fmt.Errorf("truncate: %w", err)
		}
	}
	var sum Hash
	h.Sum(sum[:0])
	return sum, nil
}

func preadFull(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := unix.Pread(fd, b, off)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if n == 0 {
			clear(b) // cut short meanwhile
			return nil
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

func pwriteFull(fd int, b []byte, off int64) error {
	for len(b) > 0 {
		n, err := unix.Pwrite(fd, b, off)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return fmt.Errorf("write: %w", err)
		}
		if n == 0 {
			return fmt.Errorf("write: %w", io.ErrShortWrite)
		}
		b, off = b[n:], off+int64(n)
	}
	return nil
}

// writeData writes a block's pages that are not all zeros: the copy
// has holes where the file had holes or zeros.
func writeData(fd int, block []byte, off int64) error {
	const page = 4096
	start := -1 // first page of a run to write
	for p := 0; p < len(block); p += page {
		zero := allZero(block[p:min(p+page, len(block))])
		switch {
		case !zero && start < 0:
			start = p
		case zero && start >= 0:
			if err := pwriteFull(fd, block[start:p], off+int64(start)); err != nil {
				return err
			}
			start = -1
		}
	}
	if start >= 0 {
		return pwriteFull(fd, block[start:], off+int64(start))
	}
	return nil
}

func allZero(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// copyData copies src's data to dst (a new, empty file) and sets dst's
// size: a clone where the file system shares blocks (reflink), else
// the data regions only, so holes stay holes.
func copyData(dst, src int, st *unix.Stat_t, reflink bool) error {
	if reflink && unix.IoctlFileClone(dst, src) == nil {
		return nil
	}
	hs := newHoles(src, st)
	off := int64(0)
	for off < st.Size {
		if !hs.anyData(off, st.Size-off) {
			break
		}
		start := max(off, hs.data)
		end := min(st.Size, hs.hole)
		for start < end {
			in, out := start, start
			n, err := unix.CopyFileRange(src, &in, dst, &out, int(min(end-start, 1<<30)), 0)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				return fmt.Errorf("copy: %w", err)
			}
			if n == 0 {
				break // cut short
			}
			start += int64(n)
		}
		off = end
	}
	if err := unix.Ftruncate(dst, st.Size); err != nil {
		return fmt.Errorf("truncate: %w", err)
	}
	return nil
}
