package sqs

import (
	"context"
	"errors"

	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/geoingest/geoingest/internal/awserr"
)

// What CheckQueue found when the server answered no. Each is wrapped by
// the error CheckQueue returns; an error wrapping none of them means no
// answer came (the network, a 5xx, throttling), which may pass.
var (
	// ErrNoSuchQueue: the queue does not exist (under these credentials'
	// account and this region).
	ErrNoSuchQueue = errors.New("the queue does not exist")
	// ErrAccessDenied: the credentials are valid but not allowed
	// sqs:GetQueueAttributes on the queue.
	ErrAccessDenied = errors.New("access denied")
	// ErrBadCredentials: the server refused the credentials (unknown
	// key, wrong secret, expired token).
	ErrBadCredentials = errors.New("the credentials were refused")
	// ErrRefused: any other refusal of the request (a malformed URL, an
	// invalid parameter): retrying cannot help.
	ErrRefused = errors.New("the request was refused")
)

// CheckError is CheckQueue's refusal: Reason is one of ErrNoSuchQueue,
// ErrAccessDenied, ErrBadCredentials or ErrRefused, Err the server's
// answer. errors.Is finds either.
type CheckError struct {
	Reason, Err error
}

func (e *CheckError) Error() string   { return e.Reason.Error() + ": " + e.Err.Error() }
func (e *CheckError) Unwrap() []error { return []error{e.Reason, e.Err} }

// CheckQueue asks the queue at url for its ARN (GetQueueAttributes): nil
// when it answers. A refusal is a *CheckError; any other error is the
// absence of an answer (awserr.NoAnswer), which may pass.
func CheckQueue(ctx context.Context, client *awssqs.Client, url string) error {
	_, err := client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: &url,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err == nil {
		return nil
	}
	var why error
	switch awserr.Classify(err) {
	case awserr.NoAnswer:
		return err
	case awserr.NotFound:
		why = ErrNoSuchQueue
	case awserr.AccessDenied:
		why = ErrAccessDenied
	case awserr.BadCredentials:
		why = ErrBadCredentials
	default:
		why = ErrRefused
	}
	return &CheckError{Reason: why, Err: err}
}
