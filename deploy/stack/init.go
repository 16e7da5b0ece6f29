package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// runInit creates the dead-letter queue, the queue with its redrive policy
// (a message received --max-receives times goes to the DLQ) and the bucket
// with versioning on. Each step that finds its resource already there
// leaves it as it is, so init can run on every `compose up`. It waits up to
// --patience for the servers to answer.
func runInit(ctx context.Context, log *slog.Logger, args []string) error {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	bucket := fs.String("bucket", env("STACK_BUCKET", "uploads"), "bucket to create, versioned (env STACK_BUCKET)")
	queue := fs.String("queue", env("STACK_QUEUE", "uploads"), "queue of the bucket's notifications (env STACK_QUEUE)")
	dlq := fs.String("dlq", env("STACK_DLQ", "uploads-dlq"), "its dead-letter queue (env STACK_DLQ)")
	maxReceives := fs.Int("max-receives", 10, "receives before SQS moves a message to the DLQ (above geoingest's own --max-receives)")
	visibility := fs.Duration("visibility", 60*time.Second, "the queue's default visibility timeout")
	patience := fs.Duration("patience", 2*time.Minute, "how long to wait for the servers")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return err
	}
	sq := sqs.NewFromConfig(cfg)
	st := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })

	var dlqURL string
	if err := retry(ctx, *patience, func() error {
		out, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: dlq})
		if err == nil {
			dlqURL = aws.ToString(out.QueueUrl)
		}
		return err
	}); err != nil {
		return fmt.Errorf("create queue %s: %w", *dlq, err)
	}
	attrs, err := sq.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &dlqURL,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		return fmt.Errorf("queue %s: %w", *dlq, err)
	}
	redrive, err := json.Marshal(map[string]string{
		"deadLetterTargetArn": attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)],
		"maxReceiveCount":     strconv.Itoa(*maxReceives),
	})
	if err != nil {
		return err
	}
	q, err := sq.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: queue, Attributes: map[string]string{
		string(sqstypes.QueueAttributeNameRedrivePolicy):     string(redrive),
		string(sqstypes.QueueAttributeNameVisibilityTimeout): strconv.Itoa(int(visibility.Seconds())),
	}})
	if err != nil {
		return fmt.Errorf("create queue %s: %w", *queue, err)
	}
	log.Info("queue", "url", aws.ToString(q.QueueUrl), "dlq", dlqURL, "redrive", string(redrive))

	if err := retry(ctx, *patience, func() error {
		_, err := st.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: bucket})
		var owned *s3types.BucketAlreadyOwnedByYou
		var exists *s3types.BucketAlreadyExists
		if errors.As(err, &owned) || errors.As(err, &exists) {
			return nil
		}
		return err
	}); err != nil {
		return fmt.Errorf("create bucket %s: %w", *bucket, err)
	}
	if _, err := st.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: bucket,
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		return fmt.Errorf("bucket %s: versioning: %w", *bucket, err)
	}
	log.Info("bucket", "name", *bucket, "versioning", "Enabled")
	return nil
}
