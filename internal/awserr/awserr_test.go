package awserr

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// answer is an error as the SDK returns a server's answer: an operation
// error wrapping the HTTP response's status and, when the body said one,
// the API error and its code.
func answer(status int, code string) error {
	var api error = errors.New("no body")
	if code != "" {
		api = &smithy.GenericAPIError{Code: code, Message: "the server says " + code}
	}
	return &smithy.OperationError{ServiceID: "S3", OperationName: "GetObject", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: api},
		RequestID:     "req-1",
	}}
}

// TestClassify: S3's and SQS's answers, and the failures to get one, each
// read once for both services (the start-up checks and the fetches read
// them through Classify).
func TestClassify(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want Class
	}{
		{"nil", nil, NoAnswer},
		{"deadline", fmt.Errorf("get: %w", context.DeadlineExceeded), NoAnswer},
		{"connection refused", &smithy.OperationError{Err: &smithyhttp.RequestSendError{Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}}, NoAnswer},
		{"net error", &net.DNSError{Err: "no such host", Name: "s3.invalid"}, NoAnswer},
		{"unknown failure, no answer", errors.New("something odd"), NoAnswer},
		{"S3 503 SlowDown", answer(503, "SlowDown"), NoAnswer},
		{"500 with no body", answer(500, ""), NoAnswer},
		{"429", answer(429, ""), NoAnswer},
		{"S3 RequestTimeout (400)", answer(400, "RequestTimeout"), NoAnswer},
		{"SQS throttling (400)", answer(400, "ThrottlingException"), NoAnswer},
		{"SQS RequestThrottled", answer(403, "RequestThrottled"), NoAnswer},
		{"NoSuchKey", answer(404, "NoSuchKey"), NotFound},
		{"NoSuchVersion", answer(404, "NoSuchVersion"), NotFound},
		{"NoSuchBucket", answer(404, "NoSuchBucket"), NotFound},
		{"HEAD 404 NotFound", answer(404, "NotFound"), NotFound},
		{"404 with no body", answer(404, ""), NotFound},
		{"SQS queue gone (400)", answer(400, "AWS.SimpleQueueService.NonExistentQueue"), NotFound},
		{"SQS typed QueueDoesNotExist", &types.QueueDoesNotExist{Message: new(string)}, NotFound},
		{"InvalidAccessKeyId (403)", answer(403, "InvalidAccessKeyId"), BadCredentials},
		{"SignatureDoesNotMatch", answer(403, "SignatureDoesNotMatch"), BadCredentials},
		{"S3 ExpiredToken (400)", answer(400, "ExpiredToken"), BadCredentials},
		{"SQS InvalidClientTokenId", answer(403, "InvalidClientTokenId"), BadCredentials},
		{"AccessDenied", answer(403, "AccessDenied"), AccessDenied},
		{"SQS KMS access denied", answer(400, "KMS.AccessDeniedException"), AccessDenied},
		{"HEAD 403 with no body", answer(403, ""), AccessDenied},
		{"403 with a code of no class", answer(403, "Forbidden"), AccessDenied},
		{"PreconditionFailed", answer(412, "PreconditionFailed"), Changed},
		{"412 with no body", answer(412, ""), Changed},
		{"InvalidBucketName (400)", answer(400, "InvalidBucketName"), Refused},
		{"400 with no body", answer(400, ""), Refused},
		{"301: a bucket in another region", answer(301, ""), Refused},
		{"a code with no status", &smithy.GenericAPIError{Code: "InvalidParameterValue"}, Refused},
	} {
		if got := Classify(c.err); got != c.want {
			t.Errorf("%s: Classify(%v) = %v, want %v", c.name, c.err, got, c.want)
		}
	}
	if got := Status(answer(404, "NoSuchKey")); got != 404 {
		t.Errorf("Status = %d, want 404", got)
	}
	if got := Code(fmt.Errorf("wrapped: %w", answer(404, "NoSuchBucket"))); got != "NoSuchBucket" {
		t.Errorf("Code = %q, want NoSuchBucket", got)
	}
	if Status(errors.New("x")) != 0 || Code(errors.New("x")) != "" {
		t.Error("Status and Code of an error with no answer are 0 and empty")
	}
}
