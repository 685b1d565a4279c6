package hostcmd

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// The shims are cross-compiled from ./cmd/den-hostcmd and committed, so
// that `go build` alone produces a den that ships them. TestShimFresh
// fails when they no longer match the source.
//
//go:generate env CGO_ENABLED=0 GOOS=linux GOARCH=amd64 GOAMD64=v1 GOFLAGS= go build -trimpath -buildvcs=false "-ldflags=-s -w -buildid=" -o shim/den-hostcmd-linux-amd64 den.dev/den/cmd/den-hostcmd
//go:generate env CGO_ENABLED=0 GOOS=linux GOARCH=arm64 GOARM64=v8.0 GOFLAGS= go build -trimpath -buildvcs=false "-ldflags=-s -w -buildid=" -o shim/den-hostcmd-linux-arm64 den.dev/den/cmd/den-hostcmd

var (
	//go:embed shim/den-hostcmd-linux-amd64
	shimAMD64 []byte
	//go:embed shim/den-hostcmd-linux-arm64
	shimARM64 []byte
)

// Shim returns den-hostcmd for goarch ("amd64" or "arm64").
func Shim(goarch string) ([]byte, error) {
	switch goarch {
	case "amd64":
		return shimAMD64, nil
	case "arm64":
		return shimARM64, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrNoShim, goarch)
}

// ShimPath writes den-hostcmd for this machine to
// DATA/bin/den-hostcmd-<sha256 prefix> (mode 0755, atomically, never
// replacing one that is there) unless it is there already, and returns
// its path: the host file to bind
// read-only at /usr/local/bin/den-hostcmd. The name changes with the
// content, so a running computer keeps the file it was started with.
func ShimPath(dataDir string) (string, error) {
	b, err := Shim(runtime.GOARCH)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	dir := filepath.Join(dataDir, "bin")
	path := filepath.Join(dir, "den-hostcmd-"+hex.EncodeToString(sum[:8]))
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Size() == int64(len(b)) && fi.Mode().Perm() == 0o755 {
		return path, nil
	} else if err == nil {
		os.Remove(path) // not this shim: a broken write of an older den
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("hostcmd: shim: %w", err)
	}
	f, err := os.CreateTemp(dir, ".den-hostcmd-*")
	if err != nil {
		return "", fmt.Errorf("hostcmd: shim: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(b)
	if err == nil {
		err = f.Chmod(0o755)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// Never replace a shim that is there: a computer starting now may
		// have it staged for its bind, and a bind of a file renamed over
		// (unlinked) fails. The name holds the content's hash, so one
		// made meanwhile by another start is this very shim.
		err = os.Link(tmp, path)
		if errors.Is(err, fs.ErrExist) {
			err = nil
		}
	}
	os.Remove(tmp)
	if err != nil {
		return "", fmt.Errorf("hostcmd: shim: %w", err)
	}
	return path, nil
}
