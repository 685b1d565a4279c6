package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// PushSubscription is a browser subscribed to Web Push.
type PushSubscription struct {
	Endpoint  string // the push service's URL for this browser; the key
	P256dh    []byte // the browser's P-256 public key, uncompressed (65 bytes)
	Auth      []byte // its authentication secret (16 bytes)
	UserAgent string // the browser's User-Agent when it subscribed
	Origin    string // the origin of the page it subscribed from
	Created   time.Time
	// LastSuccess is when a push service last took a message for it
	// (zero: never); Failures counts the sends that failed since.
	LastSuccess time.Time
	Failures    int
}

// AddPushSubscription stores p, or replaces the keys, user agent and
// origin of the subscription with its endpoint (a browser that
// subscribes again), whose failures then start again from 0.
func (s *Store) AddPushSubscription(ctx context.Context, p PushSubscription) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO push_subscriptions (endpoint, p256dh, auth, user_agent, origin, created_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (endpoint) DO UPDATE SET p256dh = excluded.p256dh, auth = excluded.auth,
				user_agent = excluded.user_agent, origin = excluded.origin, failures = 0`,
			p.Endpoint, p.P256dh, p.Auth, p.UserAgent, p.Origin, now())
		return err
	})
	if err != nil {
		return fmt.Errorf("store: add push subscription: %w", err)
	}
	return nil
}

// PushSubscriptions lists the subscriptions, oldest first.
func (s *Store) PushSubscriptions(ctx context.Context) ([]PushSubscription, error) {
	var out []PushSubscription
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT endpoint, p256dh, auth, user_agent, origin, created_at, last_success, failures
			FROM push_subscriptions ORDER BY created_at, endpoint`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p PushSubscription
			var created int64
			var last sql.NullInt64
			if err := rows.Scan(&p.Endpoint, &p.P256dh, &p.Auth, &p.UserAgent, &p.Origin, &created, &last, &p.Failures); err != nil {
				return err
			}
			p.Created = fromNanos(created)
			if last.Valid {
				p.LastSuccess = fromNanos(last.Int64)
			}
			out = append(out, p)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: push subscriptions: %w", err)
	}
	return out, nil
}

// DeletePushSubscription forgets the subscription with endpoint; it is
// ErrNotFound when there is none.
func (s *Store) DeletePushSubscription(ctx context.Context, endpoint string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM push_subscriptions WHERE endpoint = ?`, endpoint)
		if err != nil {
			return err
		}
		return mustAffect(res)
	})
	if err != nil {
		return fmt.Errorf("store: delete push subscription: %w", err)
	}
	return nil
}

// RecordPush records how a send to the subscription with endpoint went:
// taken at time at (the failures start again from 0), or failed. A
// subscription deleted meanwhile is not an error.
func (s *Store) RecordPush(ctx context.Context, endpoint string, ok bool, at time.Time) error {
	err := s.mark(ctx, func(tx *sql.Tx) error {
		var err error
		if ok {
			_, err = tx.ExecContext(ctx, `UPDATE push_subscriptions SET last_success = ?, failures = 0 WHERE endpoint = ?`, at.UnixNano(), endpoint)
		} else {
			_, err = tx.ExecContext(ctx, `UPDATE push_subscriptions SET failures = failures + 1 WHERE endpoint = ?`, endpoint)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("store: record push: %w", err)
	}
	return nil
}
