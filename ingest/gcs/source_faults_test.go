package gcs_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"testing"

	"cloud.google.com/go/storage"
	"github.com/geoingest/geoingest/ingest/gcs"
	"github.com/geoingest/geoingest/internal/testsupport/faultproxy"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
	"google.golang.org/api/option"
)

// A Cloud Storage download cut short (a reset, a truncated body) never
// yields a partial file as the object: the Go client resumes the read of
// the same generation from where it broke, and the bytes fetched are
// whole. 5xx answers are retried. The fault proxy sits in front of
// fake-gcs-server, and each fault is checked to have fired.
func TestGCSFetchFaultsAreTransient(t *testing.T) {
	srv := testsrv.GCP(t)
	bucket := testsrv.Unique("faults")
	srv.NewBucket(t, bucket, false, "")
	body := bytes.Repeat([]byte(`{"type":"Feature","geometry":null,"properties":{}}`+"\n"), 2000)
	ev := put(t, srv, bucket, "parcels/big.geojsonl", body)
	p, err := faultproxy.New(srv.StorageURL, faultproxy.Options{Protocol: faultproxy.S3})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	ctx := context.Background()
	client, err := storage.NewClient(ctx, option.WithEndpoint(p.URL()+"/storage/v1/"), option.WithoutAuthentication(), storage.WithJSONReads())
	require.NoError(t, err)
	t.Cleanup(func() { client.Close() })
	_, f, err := gcs.Objects{Client: client}.Resolve(ctx, ev, false)
	require.NoError(t, err)
	got, err := f.Fetch(ctx, t.TempDir())
	require.NoError(t, err, "through the proxy, no fault")
	require.Equal(t, int64(len(body)), got.Size)
	want := sha256.Sum256(body)
	for _, kind := range []faultproxy.Kind{faultproxy.Reset, faultproxy.Truncate} {
		t.Run(string(kind), func(t *testing.T) {
			dir := t.TempDir()
			p.Arm("", kind)
			got, err := f.Fetch(ctx, dir)
			require.NoError(t, err, "the client resumes the read")
			require.Equal(t, hex.EncodeToString(want[:]), got.ContentHash, "whole, not the half before the fault")
			require.Equal(t, int64(len(body)), got.Size)
			require.Zero(t, p.Armed(), "the fault fired")
			left, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Len(t, left, 1)
		})
	}
	// The SDK's own retries absorb a 500 and a 503 before any byte.
	p.Arm("", faultproxy.SlowDown)
	p.Arm("", faultproxy.Error500)
	got, err = f.Fetch(ctx, t.TempDir())
	require.NoError(t, err)
	require.Equal(t, int64(len(body)), got.Size)
	require.Equal(t, map[faultproxy.Kind]int{faultproxy.Reset: 1, faultproxy.Truncate: 1, faultproxy.SlowDown: 1, faultproxy.Error500: 1}, p.KindCounts())
}
