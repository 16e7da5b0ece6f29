package sqs

import (
	"context"
	"errors"
	"net"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
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
// when it answers. A refusal is a *CheckError; any other error is the absence of an
// answer (see Unanswered).
func CheckQueue(ctx context.Context, client *awssqs.Client, url string) error {
	_, err := client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{QueueUrl: &url,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err == nil {
		return nil
	}
	if why := refusal(err); why != nil {
		return &CheckError{Reason: why, Err: err}
	}
	return err
}

// refusal says what a refused request's error means, or nil when err is
// not a refusal (no answer came).
func refusal(err error) error {
	if Unanswered(err) {
		return nil
	}
	var nq *types.QueueDoesNotExist
	if errors.As(err, &nq) {
		return ErrNoSuchQueue
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", "NonExistentQueue":
			return ErrNoSuchQueue
		case "AccessDenied", "AccessDeniedException", "KMS.AccessDeniedException":
			return ErrAccessDenied
		case "InvalidClientTokenId", "SignatureDoesNotMatch", "UnrecognizedClientException", "ExpiredToken",
			"InvalidSecurity", "MissingAuthenticationToken", "IncompleteSignature", "InvalidAccessKeyId",
			"MissingAuthenticationTokenException":
			return ErrBadCredentials
		}
		return ErrRefused
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		switch code := re.HTTPStatusCode(); {
		case code == 404:
			return ErrNoSuchQueue
		case code == 403:
			return ErrAccessDenied
		case code >= 400 && code < 500:
			return ErrRefused
		}
	}
	return nil
}

// Unanswered reports whether err means the server gave no answer that
// says no: the request could not be sent (a network failure, a refused
// connection), the server failed (5xx) or throttled it, or it timed out.
// Such a failure may pass on its own.
func Unanswered(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var se *smithyhttp.RequestSendError
	var ne net.Error
	if errors.As(err, &se) || errors.As(err, &ne) {
		return true
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		if code := re.HTTPStatusCode(); code >= 500 || code == 429 {
			return true
		}
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "RequestThrottled", "ThrottlingException", "Throttling", "ServiceUnavailable",
			"InternalFailure", "InternalError", "RequestTimeout":
			return true
		}
		return false
	}
	// Neither an answer nor a known transport failure: treated as no
	// answer, so that start-up waits for it rather than give up at once.
	return re == nil
}
