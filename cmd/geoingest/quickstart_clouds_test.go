package main

import (
	"archive/zip"
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/storage"
	sdkblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/geoingest/geoingest/internal/testsupport/azgrid"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
)

// quickStartCommands returns the geoingest commands of the first sh block
// after the heading in docs/clouds.md, continuation lines joined, each
// split into its arguments (without "geoingest").
func quickStartCommands(t *testing.T, heading string) [][]string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/clouds.md")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(doc), "\n"+heading+"\n")
	require.True(t, ok, "docs/clouds.md has no heading %q", heading)
	_, rest, ok = strings.Cut(rest, "```sh\n")
	require.True(t, ok)
	block, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	var out [][]string
	for _, line := range strings.Split(strings.ReplaceAll(block, "\\\n", " "), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "geoingest" {
			out = append(out, f[1:])
		}
	}
	return out
}

// sixCountiesZip is a zip of testdata's six_counties shapefile set.
func sixCountiesZip(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, ext := range []string{".shp", ".shx", ".dbf", ".prj"} {
		w, err := zw.Create("county" + ext)
		require.NoError(t, err)
		data, err := os.ReadFile("../../testdata/corpus/six_counties/six_counties" + ext)
		require.NoError(t, err)
		_, err = w.Write(data)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// TestCloudQuickStartsAsWritten runs the geoingest commands of
// docs/clouds.md's two quick starts exactly as written (serve, then
// backfill), against the emulators set up as the quick start's gcloud and
// az commands set up the clouds: the upload lands once, and the backfill
// with --policy skip adds nothing.
func TestCloudQuickStartsAsWritten(t *testing.T) {
	t.Parallel()
	zipBody := sixCountiesZip(t)
	check := func(t *testing.T, cmds [][]string, env map[string]string, upload func()) {
		require.Len(t, cmds, 2, "serve and backfill")
		require.Equal(t, "serve", cmds[0][0])
		require.Equal(t, "backfill", cmds[1][0])
		db := pgtest.NewDB(t)
		env["DATABASE_URL"] = db
		upload()
		srv := startServe(t, env, cmds[0][1:]...)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("serve's log:\n%s", srv.stderr.String())
			}
		})
		eventually(t, 60*time.Second, "parcels/county.zip written", func() bool {
			return queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'current' AND source_key = 'parcels/county.zip'`) == 1
		})
		srv.stop(t)
		n := queryInt(t, db, `SELECT count(*) FROM parcels`)
		require.EqualValues(t, 6, n)
		code, out, errOut := run(t, env, cmds[1]...)
		require.Equal(t, 0, code, out+errOut)
		require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs`), "the backfill skipped the object already ingested: %s", out+errOut)
		require.EqualValues(t, n, queryInt(t, db, `SELECT count(*) FROM parcels`))
		t.Logf("geoingest %s\ngeoingest %s\n%s", strings.Join(cmds[0], " "), strings.Join(cmds[1], " "), strings.TrimSpace(out+errOut))
	}

	t.Run("gcp", func(t *testing.T) {
		t.Parallel()
		cmds := quickStartCommands(t, "## Quick start: Google Cloud Storage and Pub/Sub")
		g := testsrv.GCP(t)
		ctx := context.Background()
		// gcloud pubsub topics create, subscriptions create, storage
		// buckets notifications create (the bucket exists).
		topic, dlq := "projects/my-project/topics/uploads", "projects/my-project/topics/uploads-dlq"
		for _, name := range []string{topic, dlq} {
			_, err := g.Pubsub.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: name})
			require.NoError(t, err)
		}
		_, err := g.Pubsub.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{
			Name: "projects/my-project/subscriptions/geoingest", Topic: topic, AckDeadlineSeconds: 60,
			DeadLetterPolicy: &pubsubpb.DeadLetterPolicy{DeadLetterTopic: dlq, MaxDeliveryAttempts: 20}})
		require.NoError(t, err)
		g.NewBucket(t, "county-uploads", false, "")
		_, err = g.Storage.Bucket("county-uploads").AddNotification(ctx, &storage.Notification{TopicProjectID: "my-project", TopicID: "uploads",
			PayloadFormat: storage.JSONPayload, EventTypes: []string{storage.ObjectFinalizeEvent, storage.ObjectDeleteEvent, storage.ObjectArchiveEvent}})
		require.NoError(t, err)
		check(t, cmds, map[string]string{}, func() { // gcloud storage cp county.zip gs://county-uploads/parcels/county.zip
			w := g.Storage.Bucket("county-uploads").Object("parcels/county.zip").NewWriter(ctx)
			_, err := w.Write(zipBody)
			require.NoError(t, err)
			require.NoError(t, w.Close())
		})
	})

	t.Run("azure", func(t *testing.T) {
		t.Parallel()
		cmds := quickStartCommands(t, "## Quick start: Azure Blob Storage with Event Grid and a Storage Queue")
		az := testsrv.Azurite(t)
		ctx := context.Background()
		// az storage queue create (twice); the container exists; the
		// Event Grid subscription is the stand-in before Azurite.
		q := az.Queues.NewQueueClient("uploads")
		for _, name := range []string{"uploads", "uploads-dlq"} {
			_, err := az.Queues.NewQueueClient(name).Create(ctx, nil)
			require.NoError(t, err)
		}
		_, err := az.Blob.CreateContainer(ctx, "uploads", nil)
		require.NoError(t, err)
		br, err := azgrid.New(az.BlobURL, az.Blob, q)
		require.NoError(t, err)
		proxy := httptest.NewServer(br)
		t.Cleanup(proxy.Close)
		up, err := sdkblob.NewClientFromConnectionString(strings.Replace(az.ConnectionString, az.BlobURL, proxy.URL+"/"+testsrv.AzureAccount, 1), nil)
		require.NoError(t, err)
		check(t, cmds, map[string]string{"AZURE_STORAGE_CONNECTION_STRING": az.ConnectionString}, func() {
			// az storage blob upload -c uploads -n parcels/county.zip -f county.zip
			_, err := up.UploadBuffer(ctx, "uploads", "parcels/county.zip", zipBody, nil)
			require.NoError(t, err)
		})
	})
}
