package azqueue

import (
	"context"
	"fmt"

	"github.com/geoingest/geoingest/queue"
)

var _ queue.DeadLetterDepther = (*Receiver)(nil)

// DeadLetterDepth implements queue.DeadLetterDepther: the dead-letter
// queue's approximate message count (Get Queue Metadata), or
// queue.ErrNoDeadLetterQueue when Options.DeadLetter is nil. The console
// shows it. (Pub/Sub has no such count but in Cloud Monitoring: its
// receiver does not implement the interface.)
func (r *Receiver) DeadLetterDepth(ctx context.Context) (int64, error) {
	if r.opts.DeadLetter == nil {
		return 0, queue.ErrNoDeadLetterQueue
	}
	p, err := r.opts.DeadLetter.GetProperties(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("azqueue dead-letter depth: %w", err)
	}
	if p.ApproximateMessagesCount == nil {
		return 0, fmt.Errorf("azqueue dead-letter depth: no approximate message count in the answer")
	}
	return int64(*p.ApproximateMessagesCount), nil
}
