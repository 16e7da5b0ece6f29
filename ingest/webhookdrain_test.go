package ingest

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// releasingFeed is a change feed of one record that its first read finds
// held back, and that is released right after that read: the order in
// which a batch run's last record meets another client's transaction that
// ends between Drain's read and its check. Reads and the check follow
// ChangeLog's contract for that order (the check no longer counts a
// released record; the next read returns it).
type releasingFeed struct {
	mu   sync.Mutex
	rec  Changes
	held bool
}

func (f *releasingFeed) ChangeFeed(_ context.Context, after string, _ int) ([]Changes, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if after >= f.rec.Cursor {
		return nil, nil
	}
	if f.held {
		f.held = false // its older transaction ends just after this read
		return nil, nil
	}
	return []Changes{f.rec}, nil
}

func (f *releasingFeed) ChangeFeedBehind(_ context.Context, after string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held && after < f.rec.Cursor, nil
}

func (f *releasingFeed) JobChanges(context.Context, string, bool) (Changes, []FeatureChange, error) {
	return Changes{}, nil, errors.New("not used")
}

func (f *releasingFeed) SourceChanges(context.Context, string, string, time.Time) ([]Changes, error) {
	return nil, errors.New("not used")
}

// oneSubscriber is one subscriber's durable cursor, always held.
type oneSubscriber struct {
	mu        sync.Mutex
	cursor    string
	delivered int
}

func (s *oneSubscriber) TakeSubscriber(context.Context, string, string, time.Duration) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cursor, true, nil
}

func (s *oneSubscriber) SaveSubscriberCursor(_ context.Context, _, _, cursor string, delivered int, _ time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if cursor > s.cursor {
		s.cursor = cursor
	}
	s.delivered += delivered
	return true, nil
}

func (s *oneSubscriber) ReleaseSubscriber(context.Context, string, string) error { return nil }

// TestDrainReadsARecordReleasedAfterItsCheck: a record the feed held back
// at Drain's read and released before its check is still delivered (the
// receiver up) or reported left (the receiver down), never passed over as
// the end of the feed. Drain once returned nil there, and a batch run
// exited saying nothing (TestIngestDeliversWebhooks failed so under CI's
// load).
func TestDrainReadsARecordReleasedAfterItsCheck(t *testing.T) {
	for _, up := range []bool{true, false} {
		var mu sync.Mutex
		posts := 0
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			posts++
			mu.Unlock()
			if !up {
				rw.WriteHeader(http.StatusServiceUnavailable)
			}
		}))
		feed := &releasingFeed{rec: Changes{Job: "j1", Cursor: "100"}, held: true}
		subs := &oneSubscriber{cursor: "050"} // cursors of one length compare as strings
		w := &Webhook{URL: srv.URL, Feed: feed, Subscribers: subs, Holder: "test"}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := w.Drain(ctx)
		cancel()
		srv.Close()
		require.Equal(t, 1, posts, "up %v: the record was POSTed once", up)
		if up {
			require.NoError(t, err)
			require.Equal(t, "100", subs.cursor)
			require.Equal(t, 1, subs.delivered)
		} else {
			require.ErrorContains(t, err, "j1 not delivered")
			require.Equal(t, "050", subs.cursor, "the refused record stays after the cursor")
		}
	}
}
