package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// deliverer sends the captured notifications to the queue: each one 1-3
// times, every copy at a random moment within a window after its capture,
// so that copies of different notifications (and both versions of a key)
// interleave in a shuffled order.
type deliverer struct {
	sqs      *sqs.Client
	queueURL string
	rng      *rand.Rand // used by the delivering goroutine only

	mu        sync.Mutex
	pending   []pendingCopy
	sent      int         // copies sent, the stealer's included
	copies    map[int]int // notifications by how many copies they were given
	extra     int         // copies the stealer sent beyond a notification's 1-3
	sendFails int
}

type pendingCopy struct {
	at time.Time
	n  notification
}

func newDeliverer(c *sqs.Client, queueURL string, rng *rand.Rand) *deliverer {
	return &deliverer{sqs: c, queueURL: queueURL, rng: rng, copies: map[int]int{}}
}

// schedule gives n its 1-3 copies, at random moments in [now, now+window].
// already copies were sent by the stealer and count among them.
func (d *deliverer) schedule(n notification, window time.Duration, already int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := 1 + d.rng.IntN(3)
	if already > k {
		d.extra += already - k
		k = already
	}
	d.copies[k]++
	now := time.Now()
	for i := already; i < k; i++ {
		at := now
		if window > 0 {
			at = now.Add(time.Duration(d.rng.Int64N(int64(window))))
		}
		d.pending = append(d.pending, pendingCopy{at: at, n: n})
	}
}

// sendDue sends, in random order, every copy due by now (every copy when
// all is set). On an error the copies not sent stay pending.
func (d *deliverer) sendDue(ctx context.Context, all bool) error {
	d.mu.Lock()
	now := time.Now()
	var due, later []pendingCopy
	for _, p := range d.pending {
		if all || !p.at.After(now) {
			due = append(due, p)
		} else {
			later = append(later, p)
		}
	}
	d.pending = later
	d.rng.Shuffle(len(due), func(i, j int) { due[i], due[j] = due[j], due[i] })
	d.mu.Unlock()
	for i, p := range due {
		if err := d.send(ctx, p.n); err != nil {
			// Not sent: still to come. A send cut short by the end of
			// the chaos (ctx) is sent again by the final sendDue.
			d.mu.Lock()
			d.pending = append(d.pending, due[i:]...)
			d.mu.Unlock()
			return err
		}
	}
	return nil
}

// send sends one copy of n now.
func (d *deliverer) send(ctx context.Context, n notification) error {
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		_, err = d.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &d.queueURL, MessageBody: &n.body})
		if err == nil {
			d.mu.Lock()
			d.sent++
			d.mu.Unlock()
			return nil
		}
		if ctx.Err() != nil {
			break
		}
		d.mu.Lock()
		d.sendFails++
		d.mu.Unlock()
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("send a notification for %q: %w", n.key, err)
}

func (d *deliverer) pendingCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pending)
}

func (d *deliverer) sentCount() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sent
}
