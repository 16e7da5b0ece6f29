package s3_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	ingests3 "github.com/geoingest/geoingest/ingest/s3"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
)

// TestCheckBucketLeastPrivilege runs CheckBucket against versitygw with
// IAM: credentials granted only s3:GetObject on parcels/ (a bucket
// policy) get 403 for HeadBucket, which is not fatal: the bucket is OK
// when a missing key under the prefix answers NoSuchKey, unknowable when
// it answers AccessDenied (outside the grant; what S3 answers for a
// missing key to credentials without s3:ListBucket). A wrong secret, an
// unknown key and a missing bucket are refusals.
func TestCheckBucketLeastPrivilege(t *testing.T) {
	t.Parallel()
	srv := testsrv.VersitygwIAM(t)
	ctx := context.Background()
	bucket := "uploads"
	_, err := srv.Client.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: &bucket})
	require.NoError(t, err)
	srv.CreateUser(t, "reader", "reader-secret")
	policy := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["reader"]},` +
		`"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::uploads/parcels/*"]}]}`
	_, err = srv.Client.PutBucketPolicy(ctx, &awss3.PutBucketPolicyInput{Bucket: &bucket, Policy: &policy})
	require.NoError(t, err)
	as := func(access, secret string) *awss3.Client {
		return awss3.New(awss3.Options{Region: testsrv.Region, BaseEndpoint: aws.String(srv.URL), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(access, secret, "")})
	}

	res, err := ingests3.CheckBucket(ctx, srv.Client, bucket, "parcels/")
	require.NoError(t, err)
	require.Equal(t, ingests3.BucketOK, res, "the owner may HeadBucket")

	reader := as("reader", "reader-secret")
	_, err = reader.HeadBucket(ctx, &awss3.HeadBucketInput{Bucket: &bucket})
	require.Error(t, err, "HeadBucket needs s3:ListBucket")
	res, err = ingests3.CheckBucket(ctx, reader, bucket, "parcels/")
	require.NoError(t, err, "GetObject-only credentials are enough to serve")
	require.Equal(t, ingests3.BucketOK, res)
	res, err = ingests3.CheckBucket(ctx, reader, bucket, "admin/")
	require.NoError(t, err, "outside the grant: not fatal either, the first download tells")
	require.Equal(t, ingests3.BucketUnknowable, res)

	_, err = ingests3.CheckBucket(ctx, as("reader", "wrong"), bucket, "parcels/")
	require.True(t, errors.Is(err, ingests3.ErrBadCredentials), "%v", err)
	_, err = ingests3.CheckBucket(ctx, as("nobody", "x"), bucket, "parcels/")
	require.True(t, errors.Is(err, ingests3.ErrBadCredentials), "%v", err)
	_, err = ingests3.CheckBucket(ctx, srv.Client, "nosuchbucket", "parcels/")
	require.True(t, errors.Is(err, ingests3.ErrNoSuchBucket), "%v", err)
	_, err = ingests3.CheckBucket(ctx, reader, "nosuchbucket", "parcels/")
	require.True(t, errors.Is(err, ingests3.ErrNoSuchBucket), "%v", err)
}
