package push

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"den.dev/den/internal/store"
	"den.dev/den/internal/webpush"
)

const (
	// MaxConcurrent bounds the sends running at once, over every
	// subscription.
	MaxConcurrent = 8
	// MaxQueued bounds the messages waiting for one subscription.
	MaxQueued = 16
	// SendTimeout bounds one send, its retries included.
	SendTimeout = 90 * time.Second
	// DefaultContact is the VAPID subject when none is configured and the
	// browser subscribed from no https origin. Google's and Mozilla's
	// push services take it; Apple's refuses it (see the package doc).
	DefaultContact = "mailto:den@localhost"
	// maxUserAgent bounds the User-Agent kept with a subscription.
	maxUserAgent = 300
)

// Store is what push keeps and reads in den's store.
type Store interface {
	AddPushSubscription(ctx context.Context, p store.PushSubscription) error
	PushSubscriptions(ctx context.Context) ([]store.PushSubscription, error)
	DeletePushSubscription(ctx context.Context, endpoint string) error
	RecordPush(ctx context.Context, endpoint string, ok bool, at time.Time) error
	GetSession(ctx context.Context, id string) (store.Session, error)
}

// Options configure a Service.
type Options struct {
	Store Store
	Keys  *webpush.Keys
	// Client posts to the push services (nil: http.DefaultClient).
	Client *http.Client
	// Contact returns the configured VAPID subject, "" for none. It is
	// asked at every send, so a changed configuration applies at once.
	Contact func() string
	// InUse reports whether the user is using den in a browser right
	// now; then notifications are not sent, as the user sees what they
	// would say. nil: never.
	InUse func() bool
	Log   *slog.Logger
}

// Service sends notifications to the subscribed browsers.
type Service struct {
	o      Options
	sender *webpush.Sender
	ctx    context.Context // ended by Close: every send stops
	cancel context.CancelFunc
	slots  chan struct{} // one per running send
	wg     sync.WaitGroup

	mu          sync.Mutex
	closed      bool
	queues      map[string][]queued // by endpoint; present while its goroutine runs
	pendingDone map[string]string   // session → the text of its last done event
}

// queued is a message waiting for a subscription.
type queued struct {
	sub store.PushSubscription
	n   Notification
}

// New makes a Service. Nothing runs until notifications are queued.
func New(o Options) *Service {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Contact == nil {
		o.Contact = func() string { return "" }
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Service{o: o, sender: &webpush.Sender{Client: o.Client, Keys: o.Keys}, ctx: ctx, cancel: cancel,
		slots: make(chan struct{}, MaxConcurrent), queues: map[string][]queued{}, pendingDone: map[string]string{}}
}

// PublicKey is the VAPID public key in base64url: the
// applicationServerKey browsers subscribe with.
func (s *Service) PublicKey() string { return s.o.Keys.PublicKeyString() }

// Subscribe stores sub (a browser subscribing again replaces its
// earlier keys), with the browser's User-Agent and the origin of the
// page it subscribed from.
func (s *Service) Subscribe(ctx context.Context, sub webpush.Subscription, userAgent, origin string) error {
	return s.o.Store.AddPushSubscription(ctx, store.PushSubscription{Endpoint: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth,
		UserAgent: cut(oneLine(userAgent), maxUserAgent), Origin: origin})
}

// Unsubscribe forgets the subscription with endpoint (store.ErrNotFound
// when there is none).
func (s *Service) Unsubscribe(ctx context.Context, endpoint string) error {
	return s.o.Store.DeletePushSubscription(ctx, endpoint)
}

// Count is the number of subscriptions.
func (s *Service) Count(ctx context.Context) (int, error) {
	list, err := s.o.Store.PushSubscriptions(ctx)
	return len(list), err
}

// Queue queues n for every subscription and returns at once.
func (s *Service) Queue(n Notification) {
	ctx, cancel := context.WithTimeout(s.ctx, 5*time.Second)
	defer cancel()
	subs, err := s.o.Store.PushSubscriptions(ctx)
	if err != nil {
		s.o.Log.Warn("push: subscriptions not read", "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for _, sub := range subs {
		q, running := s.queues[sub.Endpoint]
		if len(q) >= MaxQueued {
			s.o.Log.Warn("push: too many messages wait for a browser; the oldest is dropped", "host", hostOf(sub.Endpoint))
			q = q[1:]
		}
		s.queues[sub.Endpoint] = append(q, queued{sub, n})
		if !running {
			s.wg.Add(1)
			go s.drain(sub.Endpoint)
		}
	}
}

// drain sends what is queued for endpoint, in order, until nothing is
// left.
func (s *Service) drain(endpoint string) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		q := s.queues[endpoint]
		if len(q) == 0 || s.closed {
			delete(s.queues, endpoint)
			s.mu.Unlock()
			return
		}
		m := q[0]
		s.queues[endpoint] = q[1:]
		s.mu.Unlock()
		if errors.Is(s.send(s.ctx, m.sub, m.n), webpush.ErrGone) {
			s.mu.Lock()
			s.queues[endpoint] = nil // the rest would meet the same answer
			s.mu.Unlock()
		}
	}
}

// send sends n to sub in one of the slots, bounded by SendTimeout, and
// records the outcome: a subscription that is gone is deleted.
func (s *Service) send(ctx context.Context, sub store.PushSubscription, n Notification) error {
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	case <-ctx.Done():
		return ctx.Err()
	}
	ctx, cancel := context.WithTimeout(ctx, SendTimeout)
	defer cancel()
	err := s.sender.Send(ctx, webpush.Subscription{Endpoint: sub.Endpoint, P256dh: sub.P256dh, Auth: sub.Auth}, webpush.Message{
		Payload: n.Payload(), TTL: n.TTL, Urgency: n.Urgency, Topic: n.Topic, Contact: s.contact(sub)})
	// The outcome is recorded even when Close ended the send.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer rcancel()
	switch {
	case err == nil:
		if rerr := s.o.Store.RecordPush(rctx, sub.Endpoint, true, time.Now()); rerr != nil {
			s.o.Log.Warn("push: send not recorded", "err", rerr)
		}
	case errors.Is(err, webpush.ErrGone):
		s.o.Log.Info("push: the browser's subscription is gone; den forgets it", "host", hostOf(sub.Endpoint))
		if derr := s.o.Store.DeletePushSubscription(rctx, sub.Endpoint); derr != nil && !errors.Is(derr, store.ErrNotFound) {
			s.o.Log.Warn("push: subscription not deleted", "err", derr)
		}
	default:
		s.o.Log.Warn("push: not sent", "host", hostOf(sub.Endpoint), "kind", n.Kind, "err", err)
		if rerr := s.o.Store.RecordPush(rctx, sub.Endpoint, false, time.Now()); rerr != nil {
			s.o.Log.Warn("push: send not recorded", "err", rerr)
		}
	}
	return err
}

// contact is the VAPID subject for sub: the configured one, else the
// https origin sub was made from (when it is a name push services can
// resolve), else DefaultContact.
func (s *Service) contact(sub store.PushSubscription) string {
	if c := s.o.Contact(); c != "" {
		return c
	}
	if u, err := url.Parse(sub.Origin); err == nil && u.Scheme == "https" && u.Path == "" && publicName(u.Hostname()) {
		return "https://" + u.Host
	}
	return DefaultContact
}

// publicName reports whether host is a DNS name outside the names
// reserved for local use, which push services refuse in a subject.
func publicName(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "" || net.ParseIP(host) != nil || !strings.Contains(host, ".") {
		return false
	}
	for _, local := range []string{".localhost", ".local", ".invalid", ".test", ".example", ".internal", ".home.arpa", ".lan"} {
		if strings.HasSuffix("."+host, local) {
			return false
		}
	}
	return true
}

// Failure is one subscription a test notification did not reach.
type Failure struct {
	EndpointHost string `json:"endpoint_host"`
	Error        string `json:"error"`
}

// Test sends a test notification to every subscription now, waiting
// for each, and returns how many push services took it and why the
// others did not.
func (s *Service) Test(ctx context.Context) (sent int, failed []Failure, err error) {
	res, err := s.Send(ctx, Notification{Title: "den", Body: "Notifications reach this device.", Tag: "test", Kind: KindTest,
		Urgency: webpush.Normal, TTL: time.Hour}, nil)
	if err != nil {
		return 0, nil, err
	}
	failed = []Failure{}
	for _, r := range res {
		switch {
		case r.Err == nil:
			sent++
		case errors.Is(r.Err, webpush.ErrGone):
			failed = append(failed, Failure{hostOf(r.Endpoint), "the push service says this subscription is gone; den forgot it"})
		default:
			failed = append(failed, Failure{hostOf(r.Endpoint), r.Err.Error()})
		}
	}
	return sent, failed, nil
}

// Sent is what sending to one subscription came to: nil, or why its
// push service did not take the message (webpush.ErrGone: the
// subscription is gone, and den forgot it).
type Sent struct {
	Endpoint string
	Err      error
}

// Host is the push service's host, which logs and answers name rather
// than the endpoint.
func (r Sent) Host() string { return hostOf(r.Endpoint) }

// Send sends n now to every subscription but those skip names, beside
// the queues, waiting for each (within SendTimeout, the sender's
// retries included). It is for messages whose delivery is tracked (the
// scheduler's, which skips the browsers an earlier attempt reached):
// Handle never waits.
func (s *Service) Send(ctx context.Context, n Notification, skip func(endpoint string) bool) ([]Sent, error) {
	subs, err := s.o.Store.PushSubscriptions(ctx)
	if err != nil {
		return nil, err
	}
	var to []store.PushSubscription
	for _, sub := range subs {
		if skip == nil || !skip(sub.Endpoint) {
			to = append(to, sub)
		}
	}
	out := make([]Sent, len(to))
	var wg sync.WaitGroup
	for i, sub := range to {
		out[i].Endpoint = sub.Endpoint
		wg.Go(func() { out[i].Err = s.send(ctx, sub, n) })
	}
	wg.Wait()
	return out, nil
}

// Close cancels the sends in flight, drops what is queued and waits for
// every goroutine of s. Handle and Queue do nothing after it.
func (s *Service) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.cancel()
	s.wg.Wait()
}

// hostOf is the endpoint's host: what logs and answers name, rather
// than the endpoint, whose path identifies the browser.
func hostOf(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return "?"
	}
	return u.Host
}
