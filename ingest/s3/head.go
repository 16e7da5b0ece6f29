package s3

import (
	"context"
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/geoingest/geoingest/ingest"
)

// ErrNoSuchObject is what Head's error wraps when the object (or its
// bucket) does not exist.
var ErrNoSuchObject = errors.New("no such object")

// Head describes the current version of s3://bucket/key as the creation
// event its upload sent (versionId, ETag, size, time), for a job made
// without an event (geoingest inspect). A missing object is a Permanent
// error that wraps ErrNoSuchObject; any other failure is classified as fetches are.
func Head(ctx context.Context, client *awss3.Client, bucket, key string) (ingest.Event, error) {
	out, err := client.HeadObject(ctx, &awss3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		if notFound(err) {
			return ingest.Event{}, ingest.Permanentf("s3://%s/%s: %w", bucket, key, ErrNoSuchObject)
		}
		return ingest.Event{}, classifyS3(err, "head s3://%s/%s", bucket, key)
	}
	vid := aws.ToString(out.VersionId)
	if vid == "null" {
		vid = ""
	}
	return ingest.Event{Name: "ObjectCreated:Put", Bucket: bucket, Key: key, RawKey: key,
		Size: aws.ToInt64(out.ContentLength), ETag: trimQuotes(aws.ToString(out.ETag)), VersionID: vid,
		Time: aws.ToTime(out.LastModified)}, nil
}
