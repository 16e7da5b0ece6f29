package ingest

import (
	"errors"
	"testing"
	"time"
)

// TestBackoff: Base, doubled per failure after the first, capped at Max;
// the consumer's nack delay and the pause between failed receives follow
// it.
func TestBackoff(t *testing.T) {
	b := Backoff{Base: 5 * time.Second, Max: 15 * time.Minute}
	for n, want := range map[int]time.Duration{0: 5 * time.Second, 1: 5 * time.Second, 2: 10 * time.Second,
		3: 20 * time.Second, 8: 640 * time.Second, 9: 15 * time.Minute, 1000: 15 * time.Minute} {
		if got := b.Delay(n); got != want {
			t.Errorf("Delay(%d) = %s, want %s", n, got, want)
		}
	}
	if got := (Backoff{Base: time.Minute, Max: time.Second}).Delay(1); got != time.Second {
		t.Errorf("a Base over Max waits Max: got %s", got)
	}
	c := &Consumer{BackoffBase: time.Second, BackoffMax: 3 * time.Second}
	if got := []time.Duration{c.backoff(1), c.backoff(2), c.backoff(3)}; got[0] != time.Second || got[1] != 2*time.Second || got[2] != 3*time.Second {
		t.Errorf("consumer backoff: %v", got)
	}
	var h receiveHealth
	now := time.Now()
	var waits []time.Duration
	for i := 0; i < 5; i++ {
		w, _, _ := h.failed(errors.New("down"), now)
		waits = append(waits, w)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second, 5 * time.Second}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("receive retries: %v, want %v", waits, want)
		}
	}
}
