package s3_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/s3"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
)

// put uploads body and returns the event S3 would send for it.
func put(t *testing.T, c *awss3.Client, bucket, key string, body []byte) ingest.Event {
	t.Helper()
	out, err := c.PutObject(context.Background(), &awss3.PutObjectInput{Bucket: &bucket, Key: &key, Body: bytes.NewReader(body)})
	require.NoError(t, err)
	return ingest.Event{Name: "ObjectCreated:Put", Bucket: bucket, Key: key, Size: int64(len(body)),
		ETag: strings.Trim(aws.ToString(out.ETag), `"`), VersionID: aws.ToString(out.VersionId)}
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func TestS3FetchVerifiesTheVersion(t *testing.T) {
	srv := testsrv.S3(t)
	ctx := context.Background()
	for _, versioned := range []bool{false, true} {
		bucket := "plain"
		if versioned {
			bucket = "versioned"
		}
		srv.NewBucket(t, bucket, versioned)
		v1 := put(t, srv.Client, bucket, "parcels/a b.geojson", []byte(`{"v":1}`))
		require.Equal(t, versioned, v1.VersionID != "", "versionId only from a versioned bucket")
		src, f, err := s3.NewSource(ctx, srv.Client, v1, s3.Options{})
		require.NoError(t, err)
		require.Equal(t, v1.VersionToken(), src.VersionToken)
		got, err := f.Fetch(ctx, t.TempDir())
		require.NoError(t, err)
		require.Equal(t, sha([]byte(`{"v":1}`)), got.ContentHash)
		b, err := os.ReadFile(got.Path)
		require.NoError(t, err)
		require.Equal(t, `{"v":1}`, string(b))
		require.Equal(t, "a b.geojson", filepath.Base(got.Path))

		// The object is overwritten: the old event's job must not read the
		// new bytes.
		put(t, srv.Client, bucket, "parcels/a b.geojson", []byte(`{"v":2,"changed":true}`))
		got, err = f.Fetch(ctx, t.TempDir())
		if versioned {
			require.NoError(t, err, "the old version is still readable by its versionId")
			require.Equal(t, sha([]byte(`{"v":1}`)), got.ContentHash)
		} else {
			require.Error(t, err)
			require.Equal(t, ingest.Permanent, ingest.KindOf(err), "%v", err)
			require.Contains(t, err.Error(), "changed")
		}
	}
}

func TestS3ShapefileSet(t *testing.T) {
	srv := testsrv.S3(t)
	ctx := context.Background()
	srv.NewBucket(t, "bkt", false)
	dir := "../../testdata/corpus/six_counties/six_counties"
	read := func(ext string) []byte {
		b, err := os.ReadFile(dir + ext)
		require.NoError(t, err)
		return b
	}
	shp := put(t, srv.Client, "bkt", "parcels/six.shp", read(".shp"))
	put(t, srv.Client, "bkt", "parcels/six.shx", read(".shx"))

	// No .dbf yet: a source whose Fetch is a Transient incomplete-set error,
	// Permanent on the final attempt.
	src1, f, err := s3.NewSource(ctx, srv.Client, shp, s3.Options{})
	require.NoError(t, err)
	_, err = f.Fetch(ctx, t.TempDir())
	require.True(t, errors.Is(err, ingest.ErrIncompleteShapefile), "%v", err)
	require.Equal(t, ingest.Transient, ingest.KindOf(err))
	require.Contains(t, err.Error(), ".dbf")
	_, f, err = s3.NewSource(ctx, srv.Client, shp, s3.Options{FinalAttempt: true})
	require.NoError(t, err)
	_, err = f.Fetch(ctx, t.TempDir())
	require.Equal(t, ingest.Permanent, ingest.KindOf(err))

	put(t, srv.Client, "bkt", "parcels/six.dbf", read(".dbf"))
	src2, f, err := s3.NewSource(ctx, srv.Client, shp, s3.Options{})
	require.NoError(t, err)
	require.NotEqual(t, src1.VersionToken, src2.VersionToken, "the token covers the sidecars")
	tmp := t.TempDir()
	got, err := f.Fetch(ctx, tmp)
	require.NoError(t, err)
	require.Equal(t, filepath.Join(tmp, "six.shp"), got.Path)
	for _, ext := range []string{".shp", ".shx", ".dbf"} {
		b, err := os.ReadFile(filepath.Join(tmp, "six"+ext))
		require.NoError(t, err)
		require.Equal(t, read(ext), b)
	}

	// A late .prj is a new version of the set.
	put(t, srv.Client, "bkt", "parcels/six.prj", read(".prj"))
	src3, _, err := s3.NewSource(ctx, srv.Client, shp, s3.Options{})
	require.NoError(t, err)
	require.NotEqual(t, src2.VersionToken, src3.VersionToken)
	// And the token is stable: the same set gives the same token.
	src4, _, err := s3.NewSource(ctx, srv.Client, shp, s3.Options{})
	require.NoError(t, err)
	require.Equal(t, src3.VersionToken, src4.VersionToken)
}

func TestS3MissingObjectIsPermanent(t *testing.T) {
	srv := testsrv.S3(t)
	srv.NewBucket(t, "bkt", false)
	ev := ingest.Event{Name: "ObjectCreated:Put", Bucket: "bkt", Key: "parcels/gone.geojson", Size: 3, ETag: "abc"}
	_, f, err := s3.NewSource(context.Background(), srv.Client, ev, s3.Options{})
	require.NoError(t, err)
	_, err = f.Fetch(context.Background(), t.TempDir())
	require.Error(t, err)
	require.Equal(t, ingest.Permanent, ingest.KindOf(err), "%v", err)
}

// TestS3GMLSet: a gzipped GML file's schema beside it (NAME.xsd, not
// NAME.gml.xsd) is an optional part of its set: absent, the file is
// fetched alone and waits for nothing; present, it is fetched beside it
// and the token covers it.
func TestS3GMLSet(t *testing.T) {
	srv := testsrv.S3(t)
	ctx := context.Background()
	srv.NewBucket(t, "bkt", false)
	gml := put(t, srv.Client, "bkt", "parcels/two.GML.GZ", []byte("gzipped gml"))
	alone, f, err := s3.NewSource(ctx, srv.Client, gml, s3.Options{})
	require.NoError(t, err)
	tmp := t.TempDir()
	got, err := f.Fetch(ctx, tmp)
	require.NoError(t, err, "a lone GML file waits for nothing")
	require.Equal(t, filepath.Join(tmp, "two.GML.GZ"), got.Path)

	put(t, srv.Client, "bkt", "parcels/two.XSD", []byte("<schema/>"))
	withXSD, f, err := s3.NewSource(ctx, srv.Client, gml, s3.Options{})
	require.NoError(t, err)
	require.NotEqual(t, alone.VersionToken, withXSD.VersionToken, "the token covers the schema")
	tmp = t.TempDir()
	_, err = f.Fetch(ctx, tmp)
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(tmp, "two.XSD"))
	require.NoError(t, err)
	require.Equal(t, "<schema/>", string(b))
}
