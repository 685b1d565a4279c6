package daemon

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"den.dev/den/internal/computer"
	"den.dev/den/internal/config"
	"den.dev/den/internal/webpush"
)

// pushDaemon serves on dataDir with cfg until the test ends or it is
// stopped.
func pushDaemon(t *testing.T, dataDir string, cfg *config.Config) (*testDaemon, error) {
	t.Helper()
	d, err := New(Options{DataDir: dataDir, ConfigPath: filepath.Join(t.TempDir(), "config.toml"), Config: cfg, Listen: "127.0.0.1:0",
		Computer: func(context.Context, string) (*computer.Computer, computer.SessionOptions, error) {
			return nil, computer.SessionOptions{}, errors.New("no computers in this test")
		},
		Env: func(k string) string {
			if k == "DEN_TOKEN" {
				return testToken
			}
			return ""
		}})
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- d.Serve(context.Background()) }()
	t.Cleanup(func() {
		d.Stop()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return &testDaemon{Daemon: d, url: d.BaseURL()}, nil
}

// TestPushKey: den serve makes its VAPID key in DATA/push, private, and
// serves its public half; with push = false it makes none and the push
// routes are 404; a key file others may read stops den with a message
// that says what to do.
func TestPushKey(t *testing.T) {
	data := t.TempDir()
	d, err := pushDaemon(t, data, &config.Config{})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(data, "push", webpush.KeyFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key file: %v %v", fi, err)
	}
	keys, err := webpush.LoadKeys(filepath.Join(data, "push"))
	if err != nil {
		t.Fatal(err)
	}
	resp, body := d.do(t, "GET", "/api/v1/push", "", bearer(testToken))
	if resp.StatusCode != 200 || !strings.Contains(body, `"public_key":"`+keys.PublicKeyString()+`"`) {
		t.Errorf("GET /api/v1/push: %d %s", resp.StatusCode, body)
	}
	d.Stop()

	off := false
	data2 := t.TempDir()
	d2, err := pushDaemon(t, data2, &config.Config{Server: config.Server{Push: &off}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(data2, "push")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("push = false made %s/push: %v", data2, err)
	}
	resp, body = d2.do(t, "GET", "/api/v1/push", "", bearer(testToken))
	if resp.StatusCode != 404 || !strings.Contains(body, "push = false") {
		t.Errorf("GET /api/v1/push with push off: %d %s", resp.StatusCode, body)
	}
	d2.Stop()

	if err := os.Chmod(filepath.Join(data, "push", webpush.KeyFile), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = pushDaemon(t, data, &config.Config{})
	if !errors.Is(err, webpush.ErrInsecureKey) || !strings.Contains(err.Error(), "push = false") {
		t.Errorf("a key others may read: %v", err)
	}
}
