package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"net/url"
	"strings"
)

const (
	// cookieName names den's session cookie.
	cookieName = "den_session"
	// cookieMaxAge is 400 days, the longest browsers keep a cookie.
	cookieMaxAge = 400 * 24 * 60 * 60
	// maxCookie bounds the cookie value verified; a real one is 65 bytes.
	maxCookie = 256
)

// newSession makes a cookie value, nonce.mac, that needs no server-side
// record: mac is HMAC-SHA256 of the nonce under a key derived from the
// token, so it stays valid across restarts and dies with the token.
func newSession(sec *secret) string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand crashes the program instead)
	nonce := base64.RawURLEncoding.EncodeToString(b)
	return nonce + "." + base64.RawURLEncoding.EncodeToString(sessionMAC(sec, nonce))
}

// validSession reports whether v is a cookie value made by newSession
// with sec's token.
func validSession(sec *secret, v string) bool {
	if len(v) > maxCookie {
		return false
	}
	nonce, m, ok := strings.Cut(v, ".")
	if !ok || nonce == "" {
		return false
	}
	got, err := base64.RawURLEncoding.DecodeString(m)
	if err != nil {
		return false
	}
	return subtle.ConstantTimeCompare(got, sessionMAC(sec, nonce)) == 1
}

func sessionMAC(sec *secret, nonce string) []byte {
	h := hmac.New(sha256.New, sec.key)
	h.Write([]byte(nonce))
	return h.Sum(nil)
}

// validBearer compares the token's hash with sec's in constant time, so
// neither the token nor its length leaks through timing.
func validBearer(sec *secret, token string) bool {
	sum := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(sum[:], sec.sum[:]) == 1
}

// cookie is the session cookie for r with value v; maxAge -1 deletes it.
func (g *Guard) cookie(r *http.Request, v string, maxAge int) *http.Cookie {
	return &http.Cookie{
		Name:     cookieName,
		Value:    v,
		Path:     "/",
		MaxAge:   maxAge,
		HttpOnly: true,
		SameSite: http.SameSiteStrictMode,
		Secure:   g.scheme(r) == "https",
	}
}

// login answers a right ?token= with a new session cookie and a 303 to
// the same URL without the token.
func (g *Guard) login(w http.ResponseWriter, r *http.Request, sec *secret) {
	http.SetCookie(w, g.cookie(r, newSession(sec), cookieMaxAge))
	w.Header().Set("Location", withoutToken(r.URL))
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusSeeOther)
}

// withoutToken is u's path and query with every token parameter dropped
// and the others kept as sent. The path starts with exactly one slash,
// so the redirect cannot become a protocol-relative //other.host one.
func withoutToken(u *url.URL) string {
	loc := "/" + strings.TrimLeft(u.EscapedPath(), `/\`)
	var kept []string
	for _, kv := range strings.Split(u.RawQuery, "&") {
		k, _, _ := strings.Cut(kv, "=")
		if key, err := url.QueryUnescape(k); kv == "" || (err == nil && key == "token") {
			continue
		}
		kept = append(kept, kv)
	}
	if len(kept) > 0 {
		loc += "?" + strings.Join(kept, "&")
	}
	return loc
}

// bearerToken is the token of an "Authorization: Bearer" header. Other
// schemes are not den's (a proxy's Basic auth, say) and are ignored.
func bearerToken(r *http.Request) (string, bool) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	return strings.TrimSpace(tok), true
}
