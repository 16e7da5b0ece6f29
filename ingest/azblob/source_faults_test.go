package azblob_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	sdkblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/azblob"
	"github.com/geoingest/geoingest/internal/testsupport/faultproxy"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
)

// A Blob Storage download cut short (a reset, a truncated body) is a
// Transient failure that leaves no partial file behind, and the next
// attempt downloads the blob whole: the fault proxy sits in front of
// Azurite's Blob service.
func TestAzureFetchFaultsAreTransient(t *testing.T) {
	srv := testsrv.Azurite(t)
	container := srv.NewContainer(t, "faults")
	body := bytes.Repeat([]byte(`{"type":"Feature","geometry":null,"properties":{}}`+"\n"), 2000)
	ev := put(t, srv, container, "parcels/big.geojsonl", body)
	p, err := faultproxy.New(strings.TrimSuffix(srv.BlobURL, "/"+testsrv.AzureAccount), faultproxy.Options{Protocol: faultproxy.S3})
	require.NoError(t, err)
	t.Cleanup(p.Close)
	client, err := sdkblob.NewClientFromConnectionString(strings.Replace(srv.ConnectionString, srv.BlobURL, p.URL()+"/"+testsrv.AzureAccount, 1), nil)
	require.NoError(t, err)
	ctx := context.Background()
	_, f, err := azblob.Objects{Client: client}.Resolve(ctx, ev, false)
	require.NoError(t, err)
	for _, kind := range []faultproxy.Kind{faultproxy.Reset, faultproxy.Truncate} {
		t.Run(string(kind), func(t *testing.T) {
			dir := t.TempDir()
			p.Arm("", kind)
			_, err := f.Fetch(ctx, dir)
			require.Error(t, err)
			require.Equal(t, ingest.Transient, ingest.KindOf(err), "%v", err)
			left, err := os.ReadDir(dir)
			require.NoError(t, err)
			require.Empty(t, left, "the partial download is removed")
			got, err := f.Fetch(ctx, dir)
			require.NoError(t, err, "the retry")
			require.Equal(t, int64(len(body)), got.Size)
		})
	}
	// The SDK's own retries absorb a 500 and a 503 before any byte.
	p.Arm("", faultproxy.SlowDown)
	p.Arm("", faultproxy.Error500)
	got, err := f.Fetch(ctx, t.TempDir())
	require.NoError(t, err)
	require.Equal(t, int64(len(body)), got.Size)
	require.Equal(t, map[faultproxy.Kind]int{faultproxy.Reset: 1, faultproxy.Truncate: 1, faultproxy.SlowDown: 1, faultproxy.Error500: 1}, p.KindCounts())
}
