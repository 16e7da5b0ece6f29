package s3

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/geoingest/geoingest/ingest"
)

// List calls fn for the latest version of every object under prefix in
// bucket (ListObjectVersions, so that a versioned bucket's jobs get the
// same versionId-based keys as live events; objects whose latest version
// is a delete marker are left out), as a created event ordered by its
// LastModified time.
func List(ctx context.Context, client *awss3.Client, bucket, prefix string, fn func(ingest.BackfillObject) error) error {
	p := awss3.NewListObjectVersionsPaginator(client, &awss3.ListObjectVersionsInput{Bucket: &bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return ingest.Transientf("list s3://%s/%s: %w", bucket, prefix, err)
		}
		for _, v := range page.Versions {
			if !aws.ToBool(v.IsLatest) {
				continue
			}
			vid := aws.ToString(v.VersionId)
			if vid == "null" {
				vid = ""
			}
			ev := ingest.Event{Name: "ObjectCreated:Put", Bucket: bucket, Key: aws.ToString(v.Key), RawKey: aws.ToString(v.Key),
				Size: aws.ToInt64(v.Size), ETag: trimQuotes(aws.ToString(v.ETag)), VersionID: vid,
				Time: aws.ToTime(v.LastModified)}
			if err := fn(ingest.BackfillObject{Event: ev}); err != nil {
				return err
			}
		}
	}
	return nil
}

func trimQuotes(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return s[1 : len(s)-1]
	}
	return s
}
