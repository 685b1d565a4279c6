package auth

import (
	"net/http"
	"net/netip"
	"testing"
)

func TestClientIPUntrustedPeer(t *testing.T) {
	h := newHarness(t, false, nil)
	r := h.do(nil, "GET", "/x", withBearer(h.token),
		withHeader("X-Forwarded-For", "203.0.113.7"), withHeader("X-Real-IP", "203.0.113.8"),
		withHeader("Forwarded", "for=203.0.113.9"))
	if r.body != "ok 127.0.0.1" {
		t.Errorf("ClientIP from an untrusted peer = %q, want the peer, 127.0.0.1", r.body)
	}
}

func TestClientIPTrustedProxy(t *testing.T) {
	h := newHarness(t, false, func(o *Options) {
		o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("10.0.0.0/8")}
	})
	for _, tc := range []struct {
		name string
		xff  []string
		want string
	}{
		{"none", nil, "127.0.0.1"},
		{"one", []string{"203.0.113.7"}, "203.0.113.7"},
		{"spoofed left", []string{"198.51.100.1, 203.0.113.7, 10.0.0.2"}, "203.0.113.7"},
		{"two headers", []string{"198.51.100.1", "203.0.113.7,10.0.0.2"}, "203.0.113.7"},
		{"all trusted", []string{"10.0.0.3, 10.0.0.2"}, "10.0.0.3"},
		{"garbage", []string{"203.0.113.7, garbage, 10.0.0.2"}, "10.0.0.2"},
		{"empty entry", []string{"203.0.113.7,,"}, "127.0.0.1"},
		{"with port", []string{"[2001:db8::1]:443"}, "2001:db8::1"},
		{"mapped", []string{"::ffff:203.0.113.9"}, "203.0.113.9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := []func(*http.Request){withBearer(h.token), withHeader("X-Real-IP", "192.0.2.1")}
			for _, v := range tc.xff {
				set = append(set, withHeader("X-Forwarded-For", v))
			}
			if r := h.do(nil, "GET", "/x", set...); r.body != "ok "+tc.want {
				t.Errorf("ClientIP = %q, want %s", r.body, tc.want)
			}
		})
	}
}

// TestForwardedProto checks that X-Forwarded-Proto: https from a trusted
// proxy, and only from one, makes cookies Secure and the expected Origin
// https.
func TestForwardedProto(t *testing.T) {
	for _, trusted := range []bool{false, true} {
		h := newHarness(t, false, func(o *Options) {
			if trusted {
				o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
			}
		})
		proto := withHeader("X-Forwarded-Proto", "https")
		r := h.do(nil, "GET", "/?token="+h.token, proto)
		cookies := (&http.Response{Header: r.header}).Cookies()
		if len(cookies) != 1 || cookies[0].Secure != trusted {
			t.Errorf("trusted=%v: cookie %v, want Secure=%v", trusted, r.header["Set-Cookie"], trusted)
			continue
		}
		want := map[bool]int{true: http.StatusOK, false: http.StatusForbidden}
		r = h.do(nil, "POST", "/x", proto, withCookie(cookies[0].Value), withHost("den.localhost"), withHeader("Origin", "https://den.localhost"))
		if r.code != want[trusted] {
			t.Errorf("trusted=%v: POST with an https Origin: %d, want %d", trusted, r.code, want[trusted])
		}
	}
}
