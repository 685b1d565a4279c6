package auth

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestBodyLimit(t *testing.T) {
	h := newHarness(t, false, func(o *Options) { o.MaxBody = 1024 })
	for _, tc := range []struct {
		target string
		size   int
		want   int
	}{
		{"/x", 1024, http.StatusOK},
		{"/x", 1025, http.StatusRequestEntityTooLarge},
		{"/upload", 4096, http.StatusOK},
		{"/upload", 4097, http.StatusRequestEntityTooLarge},
	} {
		r := h.send(nil, "POST", tc.target, strings.NewReader(strings.Repeat("a", tc.size)), withBearer(h.token))
		if r.code != tc.want {
			t.Errorf("POST %s with %d bytes: %d %s, want %d", tc.target, tc.size, r.code, r.body, tc.want)
			continue
		}
		if tc.want == http.StatusRequestEntityTooLarge && r.errCode(t) != "too_large" {
			t.Errorf("POST %s with %d bytes: body %s, want code too_large", tc.target, tc.size, r.body)
		}
	}
}

// TestLimitBodyAfterRead checks that bytes read before LimitBody count.
func TestLimitBodyAfterRead(t *testing.T) {
	g, err := New(Options{DataDir: t.TempDir(), Env: noEnv, MaxBody: 10, Public: func(*http.Request) bool { return true }})
	if err != nil {
		t.Fatal(err)
	}
	h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadFull(r.Body, make([]byte, 5)); err != nil {
			t.Fatal(err)
		}
		LimitBody(w, r, 8)
		if _, err := io.ReadAll(r.Body); err != nil && !BodyError(w, err) {
			t.Error(err)
		}
	}))
	for _, size := range []int{8, 9} {
		req, err := http.NewRequest("POST", "http://localhost/", strings.NewReader(strings.Repeat("a", size)))
		if err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		want := map[int]int{8: http.StatusOK, 9: http.StatusRequestEntityTooLarge}[size]
		if rec.Code != want {
			t.Errorf("%d bytes with a limit of 8 set after reading 5: %d, want %d", size, rec.Code, want)
		}
	}
}
