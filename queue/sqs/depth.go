package sqs

import (
	"context"
	"fmt"
	"strconv"

	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/geoingest/geoingest/queue"
)

var _ queue.DeadLetterDepther = (*Receiver)(nil)

// DeadLetterDepth implements queue.DeadLetterDepther: the dead-letter
// queue's ApproximateNumberOfMessages (GetQueueAttributes), or
// queue.ErrNoDeadLetterQueue when Options.DeadLetterURL is empty.
func (q *Receiver) DeadLetterDepth(ctx context.Context) (int64, error) {
	if q.opts.DeadLetterURL == "" {
		return 0, queue.ErrNoDeadLetterQueue
	}
	out, err := q.client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: &q.opts.DeadLetterURL,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		return 0, fmt.Errorf("sqs dead-letter depth: %w", err)
	}
	raw := out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)]
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("sqs dead-letter depth: ApproximateNumberOfMessages %q: %w", raw, err)
	}
	return n, nil
}
