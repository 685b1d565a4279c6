package server

import (
	"fmt"
	"net/http"
	"testing"

	"den.dev/den/internal/server/auth"
)

// TestRotateTokenRoute: the route answers the new token and passes on
// the cookie the guard set; a token from DEN_TOKEN is 409. (The guard
// itself, in front of the real route, is tested in internal/daemon.)
func TestRotateTokenRoute(t *testing.T) {
	fromEnv := false
	a := newAPI(t, "", func(o *Options) {
		o.RotateToken = func(w http.ResponseWriter, r *http.Request) (string, error) {
			if fromEnv {
				return "", fmt.Errorf("auth: rotate token: %w", auth.ErrTokenFromEnv)
			}
			http.SetCookie(w, &http.Cookie{Name: "den_session", Value: "fresh"})
			return "new-token-0123456789", nil
		}
	})
	w := a.serve("POST", "/api/v1/token/rotate", "")
	if w.Code != http.StatusOK || w.Body.String() != `{"token":"new-token-0123456789"}`+"\n" ||
		len(w.Result().Cookies()) != 1 || w.Result().Cookies()[0].Value != "fresh" {
		t.Errorf("rotate: %d %s %v", w.Code, w.Body, w.Result().Cookies())
	}
	fromEnv = true
	a.fails("POST", "/api/v1/token/rotate", "", http.StatusConflict, "token_from_env")

	none := newAPI(t, "", nil)
	none.fails("POST", "/api/v1/token/rotate", "", http.StatusNotFound, "not_found")
	none.fails("GET", "/api/v1/token/rotate", "", http.StatusNotFound, "not_found")
}
