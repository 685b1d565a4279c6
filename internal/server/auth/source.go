package auth

import (
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// secret is one token and what the guard derives from it.
type secret struct {
	token string   // only for LoginURL; comparisons use sum
	sum   [32]byte // SHA-256 of the token: comparing sums hides the length too
	key   []byte   // HMAC key of cookie sessions
}

func newSecret(token string) *secret {
	key, err := hkdf.Key(sha256.New, []byte(token), nil, "den auth cookie v1", 32)
	if err != nil {
		panic(err) // only for a key length SHA-256 cannot produce
	}
	return &secret{token: token, sum: sha256.Sum256([]byte(token)), key: key}
}

// version is what the source last read: a secret, or the error that
// made the file unusable, with the info of the file it came from (nil if
// the file could not be opened).
type version struct {
	sec *secret
	err error
	fi  os.FileInfo
}

// source gives the current token. With a token file it stats the file
// on every call and re-reads it when the file is another one (rename),
// or its size, modification time or mode changed. Per call rather than
// once a second: the Lstat costs about 0.5 µs (BenchmarkLstat), and a
// rotation then ends sessions at once, with no window and no timer.
type source struct {
	path   string      // "" for a token from DEN_TOKEN, which never changes
	report func(error) // told of each failed re-read; may be nil
	mu     sync.Mutex  // serializes re-reads, so the last stored is the last read
	cur    atomic.Pointer[version]
}

func staticSource(token string) *source {
	s := &source{}
	s.cur.Store(&version{sec: newSecret(token)})
	return s
}

func fileSource(path, token string, fi os.FileInfo, report func(error)) *source {
	s := &source{path: path, report: report}
	s.cur.Store(&version{sec: newSecret(token), fi: fi})
	return s
}

// get returns the current secret, or the error that makes the token
// file unusable (the guard then accepts no credentials).
func (s *source) get() (*secret, error) {
	v := s.cur.Load()
	if s.path == "" || s.same(v) {
		return v.sec, v.err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if v = s.cur.Load(); s.same(v) {
		return v.sec, v.err
	}
	t, fi, err := readToken(s.path)
	if err != nil {
		if fi == nil {
			// Remember the name's own info (a symbolic link's, say), so
			// that an unchanged broken file is not re-read every call.
			fi, _ = os.Lstat(s.path)
		}
		v = &version{err: err, fi: fi}
		if s.report != nil {
			s.report(err)
		}
	} else {
		v = &version{sec: newSecret(t), fi: fi}
	}
	s.cur.Store(v)
	return v.sec, v.err
}

// rotate writes a new token to the file, as Rotate does, and makes it
// the current secret before it returns: no call of get after rotate
// returns the old one, not even before the file's change could be seen.
// A token from DEN_TOKEN cannot be rotated (ErrTokenFromEnv).
func (s *source) rotate() (*secret, error) {
	if s.path == "" {
		return nil, fmt.Errorf("auth: rotate token: %w", ErrTokenFromEnv)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := Rotate(filepath.Dir(s.path)); err != nil {
		return nil, err
	}
	// What the file holds now: the new token, or a newer one if another
	// process rotated it meanwhile.
	t, fi, err := readToken(s.path)
	if err != nil {
		return nil, err
	}
	v := &version{sec: newSecret(t), fi: fi}
	s.cur.Store(v)
	return v.sec, nil
}

// same reports whether the file at the path is still the one v was read
// from.
func (s *source) same(v *version) bool {
	fi, err := os.Lstat(s.path)
	if err != nil || v.fi == nil {
		return err != nil && v.fi == nil
	}
	return os.SameFile(fi, v.fi) && fi.Size() == v.fi.Size() &&
		fi.ModTime().Equal(v.fi.ModTime()) && fi.Mode() == v.fi.Mode()
}
