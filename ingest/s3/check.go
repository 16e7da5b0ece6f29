package s3

import (
	"context"
	"errors"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/geoingest/geoingest/internal/awserr"
)

// What CheckBucket found when the server answered no. Each is wrapped by
// the error CheckBucket returns; an error wrapping none of them means no
// answer came (the network, a 5xx, throttling), which may pass.
var (
	// ErrNoSuchBucket: the bucket does not exist.
	ErrNoSuchBucket = errors.New("the bucket does not exist")
	// ErrBadCredentials: S3 refused the credentials (unknown key, wrong
	// secret, expired token).
	ErrBadCredentials = errors.New("the credentials were refused")
	// ErrRefused: any other refusal (a bucket in another region, an
	// invalid name): retrying cannot help.
	ErrRefused = errors.New("the request was refused")
)

// CheckError is CheckBucket's refusal: Reason is one of ErrNoSuchBucket,
// ErrBadCredentials or ErrRefused, Err S3's answer. errors.Is finds
// either.
type CheckError struct {
	Reason, Err error
}

func (e *CheckError) Error() string   { return e.Reason.Error() + ": " + e.Err.Error() }
func (e *CheckError) Unwrap() []error { return []error{e.Reason, e.Err} }

// CheckResult is what CheckBucket could tell about a bucket it did not
// find wrong.
type CheckResult int

const (
	// BucketOK: HeadBucket answered 200.
	BucketOK CheckResult = iota
	// BucketUnknowable: the credentials may not ask (HeadBucket needs
	// s3:ListBucket; credentials allowed only s3:GetObject get 403 for
	// it, and 403 for a missing key too), so whether the objects can be
	// read is known only at the first download.
	BucketUnknowable
)

// probeKey is the key CheckBucket reads under a route's prefix when
// HeadBucket is forbidden: a name no upload has, so that the answer is
// NoSuchKey (the bucket exists and may be listed) or AccessDenied (it may
// not), never an object.
const probeKey = ".geoingest-start-up-check/no-such-object"

// CheckBucket asks whether bucket exists and these credentials reach it,
// with the least privilege the service needs (s3:GetObject) in mind:
// HeadBucket first; when it is forbidden (403, which carries no reason),
// a GetObject of a key that does not exist under prefix, whose error
// says why (NoSuchBucket, InvalidAccessKeyId, AccessDenied). It returns
// BucketUnknowable, nil when the credentials may not tell; a *CheckError
// when S3 refused; any other error when no answer came.
func CheckBucket(ctx context.Context, client *awss3.Client, bucket, prefix string) (CheckResult, error) {
	_, err := client.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: &bucket})
	if err == nil {
		return BucketOK, nil
	}
	switch awserr.Classify(err) {
	case awserr.NoAnswer:
		return BucketOK, err
	case awserr.NotFound:
		return BucketOK, &CheckError{Reason: ErrNoSuchBucket, Err: err}
	case awserr.AccessDenied: // HeadBucket's 403 says no more: ask GetObject
	default:
		return BucketOK, &CheckError{Reason: ErrRefused, Err: err}
	}
	key := prefix + probeKey
	out, err := client.GetObject(ctx, &awss3.GetObjectInput{Bucket: &bucket, Key: &key})
	if err == nil {
		out.Body.Close()
		return BucketOK, nil
	}
	switch awserr.Classify(err) {
	case awserr.NoAnswer:
		return BucketOK, err
	case awserr.NotFound:
		if awserr.Code(err) == "NoSuchBucket" {
			return BucketOK, &CheckError{Reason: ErrNoSuchBucket, Err: err}
		}
		return BucketOK, nil // NoSuchKey: the bucket exists and may be read
	case awserr.BadCredentials:
		return BucketOK, &CheckError{Reason: ErrBadCredentials, Err: err}
	case awserr.AccessDenied:
		return BucketUnknowable, nil
	}
	return BucketOK, &CheckError{Reason: ErrRefused, Err: err}
}
