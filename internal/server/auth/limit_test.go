package auth

import (
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRateLimit(t *testing.T) {
	h := newHarness(t, false, nil)
	c := h.login(nil, h.token)
	wrong := withBearer(newToken())
	for i := range maxFailures {
		if r := h.do(nil, "GET", "/x", wrong); r.code != http.StatusUnauthorized {
			t.Fatalf("wrong attempt %d: %d, want 401", i+1, r.code)
		}
		h.clock.advance(time.Second)
	}
	blocked := func(set func(*http.Request), wantWait int) {
		t.Helper()
		r := h.do(nil, "GET", "/x", set)
		if r.code != http.StatusTooManyRequests || r.errCode(t) != "rate_limited" {
			t.Fatalf("right credentials after %d failures: %d %s, want 429", maxFailures, r.code, r.body)
		}
		if got, _ := strconv.Atoi(r.header.Get("Retry-After")); got != wantWait {
			t.Errorf("Retry-After %q, want %d", r.header.Get("Retry-After"), wantWait)
		}
	}
	// The first failure was 10 s ago: it leaves the window in 50 s.
	blocked(withBearer(h.token), 50)
	blocked(withCookie(c), 50)
	if r := h.do(nil, "GET", "/x"); r.code != http.StatusUnauthorized {
		t.Errorf("no credentials while blocked: %d, want 401", r.code)
	}
	if r := h.do(nil, "GET", "/api/v1/health"); r.code != http.StatusOK {
		t.Errorf("public route while blocked: %d, want 200", r.code)
	}
	other := h.clientFrom("127.0.0.2")
	if r := h.do(other, "GET", "/x", withBearer(h.token)); r.code != http.StatusOK || r.body != "ok 127.0.0.2" {
		t.Errorf("another client IP while 127.0.0.1 is blocked: %d %s", r.code, r.body)
	}
	h.clock.advance(49*time.Second + 500*time.Millisecond)
	blocked(withBearer(h.token), 1) // rounded up: 0 would invite a retry too soon
	h.clock.advance(500 * time.Millisecond)
	if r := h.do(nil, "GET", "/x", withBearer(h.token)); r.code != http.StatusOK {
		t.Errorf("once the first failure left the window: %d, want 200", r.code)
	}
	// Nine failures are still in the window: one more blocks again.
	h.do(nil, "GET", "/x", wrong)
	blocked(withBearer(h.token), 1)
	h.clock.advance(time.Minute)
	if r := h.do(nil, "GET", "/x", withBearer(h.token)); r.code != http.StatusOK {
		t.Errorf("a minute later: %d, want 200", r.code)
	}
}

// TestRateLimitCountsCookies checks that forged cookies count as failures.
func TestRateLimitCountsCookies(t *testing.T) {
	h := newHarness(t, false, nil)
	for i := range maxFailures {
		if r := h.do(nil, "GET", "/x", withCookie("forged.cookie")); r.code != http.StatusUnauthorized {
			t.Fatalf("forged cookie %d: %d", i, r.code)
		}
	}
	if r := h.do(nil, "GET", "/x", withBearer(h.token)); r.code != http.StatusTooManyRequests {
		t.Errorf("after %d forged cookies: %d, want 429", maxFailures, r.code)
	}
}

// TestRateLimitIgnoresSpoofedForwardedFor checks that a client cannot
// escape the limit by changing X-Forwarded-For when den is not behind a
// trusted proxy.
func TestRateLimitIgnoresSpoofedForwardedFor(t *testing.T) {
	h := newHarness(t, false, nil)
	for i := range maxFailures {
		h.do(nil, "GET", "/x", withBearer("wrong-token-0123456789"), withHeader("X-Forwarded-For", "203.0.113."+strconv.Itoa(i)))
	}
	r := h.do(nil, "GET", "/x", withBearer(h.token), withHeader("X-Forwarded-For", "198.51.100.1"), withHeader("X-Real-IP", "198.51.100.2"))
	if r.code != http.StatusTooManyRequests {
		t.Errorf("a fresh X-Forwarded-For from an untrusted peer escaped the limit: %d", r.code)
	}
}

// TestRateLimitBehindProxy checks that behind a trusted proxy each
// forwarded client has its own count.
func TestRateLimitBehindProxy(t *testing.T) {
	h := newHarness(t, false, func(o *Options) {
		o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	attacker := withHeader("X-Forwarded-For", "203.0.113.66")
	for range maxFailures {
		h.do(nil, "GET", "/x", withBearer("wrong-token-0123456789"), attacker)
	}
	if r := h.do(nil, "GET", "/x", withBearer(h.token), attacker); r.code != http.StatusTooManyRequests {
		t.Errorf("the forwarded attacker: %d, want 429", r.code)
	}
	if r := h.do(nil, "GET", "/x", withBearer(h.token), withHeader("X-Forwarded-For", "203.0.113.1")); r.code != http.StatusOK {
		t.Errorf("another forwarded client: %d, want 200", r.code)
	}
}

// TestRateLimitIPv6Prefix checks that a host cannot escape the limit by
// changing addresses within its /64.
func TestRateLimitIPv6Prefix(t *testing.T) {
	g, err := New(Options{DataDir: t.TempDir(), Env: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	key := func(remote string) netip.Addr {
		return g.limitKey(&http.Request{RemoteAddr: remote, Header: http.Header{}})
	}
	if key("[2001:db8:1:2::1]:5000") != key("[2001:db8:1:2:ffff::9]:6000") {
		t.Error("two addresses of one /64 have different keys")
	}
	if key("[2001:db8:1:2::1]:5000") == key("[2001:db8:1:3::1]:5000") {
		t.Error("two /64s share a key")
	}
	if key("[::ffff:192.0.2.1]:1") != key("192.0.2.1:2") {
		t.Error("an IPv4-mapped address is not keyed as IPv4")
	}
}

func TestLimiterBoundedMemory(t *testing.T) {
	l := newLimiter(2, time.Minute, 3)
	now := time.Now()
	ip := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, 0, 0, byte(i)}) }
	fail := func() bool { return false }
	for i := 1; i <= 5; i++ {
		l.try(ip(i), now, fail)
		l.try(ip(i), now, fail)
		now = now.Add(time.Second)
	}
	if len(l.clients) != 3 || l.order.Len() != 3 {
		t.Fatalf("tracking %d clients (%d in order), want the cap, 3", len(l.clients), l.order.Len())
	}
	for i, want := range map[int]bool{1: false, 2: false, 3: true, 4: true, 5: true} {
		if _, ok := l.clients[ip(i)]; ok != want {
			t.Errorf("client %d tracked = %v, want %v (the oldest are evicted)", i, ok, want)
		}
	}
	if _, wait := l.try(ip(5), now, func() bool { return true }); wait <= 0 {
		t.Error("client 5 is not blocked after 2 failures")
	}
}

// TestLimiterParallelGuesses checks that guesses sent at once from one
// client are not verified past the limit.
func TestLimiterParallelGuesses(t *testing.T) {
	l := newLimiter(maxFailures, time.Minute, maxClients)
	ip := netip.MustParseAddr("192.0.2.1")
	now := time.Now()
	var checked atomic.Int32
	var wg sync.WaitGroup
	for range 100 {
		wg.Go(func() {
			l.try(ip, now, func() bool {
				checked.Add(1)
				time.Sleep(time.Millisecond) // widens the race a lock-free limiter would lose
				return false
			})
		})
	}
	wg.Wait()
	if n := checked.Load(); n != maxFailures {
		t.Errorf("%d guesses were checked, want %d", n, maxFailures)
	}
}
