package auth

import (
	"encoding/json"
	"errors"
	"net/http"
)

// Each sentinel is wrapped with what it concerns (the token file's path,
// or DEN_TOKEN) and the fix, and reads as part of that sentence:
// "auth: /home/me/.den/token: token file is not private: ...". No error
// ever contains the token.
var (
	// ErrInvalidToken is a token shorter than 16 characters, or one with
	// a space or control character in it.
	ErrInvalidToken = errors.New("invalid token")

	// ErrTokenFromEnv is a rotation asked of a guard whose token comes
	// from DEN_TOKEN: den cannot change its environment.
	ErrTokenFromEnv = errors.New("the token comes from DEN_TOKEN")

	// ErrInsecureFile is a token file that is a symbolic link, is not a
	// regular file, or grants group or others any permission.
	ErrInsecureFile = errors.New("token file is not private")
)

// code is the machine-readable half of an error response.
type code string

const (
	codeUnauthorized code = "unauthorized"
	codeForbidden    code = "forbidden"
	codeMisdirected  code = "misdirected"
	codeRateLimited  code = "rate_limited"
	codeTooLarge     code = "too_large"
	codeUnavailable  code = "unavailable"
)

// status is the one table from error code to HTTP status.
func (c code) status() int {
	switch c {
	case codeUnauthorized:
		return http.StatusUnauthorized
	case codeForbidden:
		return http.StatusForbidden
	case codeMisdirected:
		return http.StatusMisdirectedRequest
	case codeRateLimited:
		return http.StatusTooManyRequests
	case codeTooLarge:
		return http.StatusRequestEntityTooLarge
	default:
		return http.StatusServiceUnavailable
	}
}

// writeError answers with {"error": {"code": c, "message": msg}}. Any
// header the caller set before (WWW-Authenticate, Retry-After,
// Set-Cookie) is kept.
func writeError(w http.ResponseWriter, c code, msg string) {
	var body struct {
		Error struct {
			Code    code   `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	body.Error.Code, body.Error.Message = c, msg
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(c.status())
	// The client has gone if this fails; there is no one left to tell.
	_ = json.NewEncoder(w).Encode(body)
}
