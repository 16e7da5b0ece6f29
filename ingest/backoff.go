package ingest

import "time"

// Backoff is geoingest's one capped exponential backoff: the wait after
// the n-th failure in a row is Base, doubled for each failure after the
// first, and at most Max. The consumer's nack delay after a transient
// failure, its pause between failed receives and serve's start-up checks
// all wait by it.
type Backoff struct {
	Base, Max time.Duration
}

// Delay is the wait after the n-th failure in a row (n ≥ 1; n < 1 counts
// as 1): min(Base·2^(n-1), Max).
func (b Backoff) Delay(n int) time.Duration {
	d := b.Base
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}
