// Package awserr is the one reading of the AWS SDK's errors (S3 and SQS)
// in geoingest: whether an answer came at all, and if one did, what it
// refused and why. The callers decide what a class means to them: the
// start-up checks exit or retry (ingest/s3.CheckBucket, queue/sqs.CheckQueue),
// a fetch fails its job permanently or leaves it for a retry
// (ingest/s3's source).
package awserr

import (
	"context"
	"errors"
	"net"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Class is what an error from an AWS request says.
type Class int

const (
	// NoAnswer: no answer that says no came. The request could not be
	// sent (a network failure, a refused connection), the server failed
	// (5xx) or throttled it, or it timed out. It may pass on its own.
	NoAnswer Class = iota
	// NotFound: what the request names does not exist (404, NoSuchKey,
	// NoSuchVersion, NoSuchBucket, QueueDoesNotExist, ...); Code tells
	// which.
	NotFound
	// BadCredentials: the server refused the credentials (an unknown
	// key, a wrong secret, an expired token).
	BadCredentials
	// AccessDenied: valid credentials that may not do this (403,
	// AccessDenied).
	AccessDenied
	// Changed: a condition of the request failed (412
	// PreconditionFailed): the object changed since it was named.
	Changed
	// Refused: any other refusal (a malformed name, an invalid
	// parameter, a bucket in another region): retrying cannot help.
	Refused
)

func (c Class) String() string {
	switch c {
	case NotFound:
		return "not found"
	case BadCredentials:
		return "bad credentials"
	case AccessDenied:
		return "access denied"
	case Changed:
		return "changed"
	case Refused:
		return "refused"
	}
	return "no answer"
}

// The error codes of S3's and SQS's answers, by class. A code in none of
// them is read from the HTTP status.
var (
	noAnswerCodes = codes("SlowDown", "RequestTimeout", "RequestThrottled", "ThrottlingException", "Throttling",
		"ServiceUnavailable", "InternalFailure", "InternalError")
	notFoundCodes = codes("NoSuchKey", "NotFound", "NoSuchVersion", "NoSuchBucket",
		"AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist", "NonExistentQueue")
	credentialCodes = codes("InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken",
		"TokenRefreshRequired", "InvalidClientTokenId", "UnrecognizedClientException", "InvalidSecurity",
		"MissingAuthenticationToken", "IncompleteSignature", "MissingAuthenticationTokenException")
	accessDeniedCodes = codes("AccessDenied", "AccessDeniedException", "KMS.AccessDeniedException")
	changedCodes      = codes("PreconditionFailed")
)

func codes(c ...string) map[string]bool {
	m := make(map[string]bool, len(c))
	for _, v := range c {
		m[v] = true
	}
	return m
}

// Classify says what err, from an AWS SDK request, means. nil is
// NoAnswer; so is an error that is neither an answer (no API error, no
// HTTP response) nor a known failure to send, so that a caller waits for
// it rather than give up at once. An answer's error code decides before
// its HTTP status; a code of no class is read from the status (404
// NotFound, 403 AccessDenied, 412 Changed), and any other answer (another
// 4xx, a redirect, a code with no status) is Refused.
func Classify(err error) Class {
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		return NoAnswer
	}
	var se *smithyhttp.RequestSendError
	var ne net.Error
	if errors.As(err, &se) || errors.As(err, &ne) {
		return NoAnswer
	}
	st := Status(err)
	if st >= 500 || st == 429 {
		return NoAnswer
	}
	code := Code(err)
	switch {
	case noAnswerCodes[code]:
		return NoAnswer
	case notFoundCodes[code]:
		return NotFound
	case credentialCodes[code]:
		return BadCredentials
	case accessDeniedCodes[code]:
		return AccessDenied
	case changedCodes[code]:
		return Changed
	}
	switch {
	case st == 404:
		return NotFound
	case st == 403:
		return AccessDenied
	case st == 412:
		return Changed
	case st != 0 || isAPIError(err):
		// Any other answer: a 4xx, a redirect (a bucket in another
		// region), a code of no class.
		return Refused
	}
	return NoAnswer
}

// Status is the HTTP status of err's response, 0 when none came.
func Status(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// Code is the error code of err's answer ("NoSuchKey", "AccessDenied",
// ...), "" when it has none.
func Code(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func isAPIError(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae)
}
