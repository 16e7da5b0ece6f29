package postgis

import (
	"context"
	"errors"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis/internal/db"
	"github.com/jackc/pgx/v5"
)

// The change feed's durable consumers (migration 0032): a cursor per
// name, under a lease, for ingest.Webhook.

var _ ingest.Subscribers = (*Store)(nil)

// TakeSubscriber makes holder the subscriber's holder for lease and
// returns its cursor; ok is false while another holder's lease runs.
func (s *Store) TakeSubscriber(ctx context.Context, name, holder string, lease time.Duration) (string, bool, error) {
	if err := s.q.EnsureSubscriber(ctx, name); err != nil {
		return "", false, err
	}
	cursor, err := s.q.TakeSubscriber(ctx, db.TakeSubscriberParams{Holder: holder, LeaseSecs: lease.Seconds(), Name: name})
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return cursor, true, nil
}

// SaveSubscriberCursor moves the cursor forward to cursor ("": leaves
// it), counts delivered records and renews holder's lease; false when
// holder no longer holds it.
func (s *Store) SaveSubscriberCursor(ctx context.Context, name, holder, cursor string, delivered int, lease time.Duration) (bool, error) {
	n, err := s.q.SaveSubscriberCursor(ctx, db.SaveSubscriberCursorParams{Cursor: cursor, Delivered: int64(delivered),
		LeaseSecs: lease.Seconds(), Name: name, Holder: holder})
	return n == 1, err
}

// ReleaseSubscriber ends holder's lease.
func (s *Store) ReleaseSubscriber(ctx context.Context, name, holder string) error {
	return s.q.ReleaseSubscriber(ctx, db.ReleaseSubscriberParams{Name: name, Holder: holder})
}
