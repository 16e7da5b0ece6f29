package main

import (
	"archive/zip"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	sdkblob "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/geoingest/geoingest/internal/testsupport/azgrid"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
)

// TestServeCloudsZipLimitsAndConsole: on Pub/Sub with Cloud Storage and on
// a Storage Queue with Blob Storage, a zip of a shapefile set lands as
// one job with its features, a GeoJSON over --max-features fails as a bad
// upload (FAILED, dead-lettered, the reason naming the flag), and the
// console's API shows both, with the cloud's URL of each source.
func TestServeCloudsZipLimitsAndConsole(t *testing.T) {
	t.Parallel()
	six := "../../testdata/corpus/six_counties/six_counties"
	var zbuf bytes.Buffer
	zw := zip.NewWriter(&zbuf)
	for _, ext := range []string{".shp", ".shx", ".dbf", ".prj"} {
		w, err := zw.Create("six_counties" + ext)
		require.NoError(t, err)
		b, err := os.ReadFile(six + ext)
		require.NoError(t, err)
		_, err = w.Write(b)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	zipFile := t.TempDir() + "/six.zip"
	require.NoError(t, os.WriteFile(zipFile, zbuf.Bytes(), 0o644))

	type rig struct {
		env              map[string]string
		queueURL, dlqURL string
		scheme, bucket   string
		put              func(key, file string)
	}
	clouds := map[string]func(t *testing.T) rig{
		"pubsub": func(t *testing.T) rig {
			g := testsrv.GCP(t)
			topic, dlq := g.NewTopic(t, "rules"), g.NewTopic(t, "rules-dlq")
			sub := g.NewSubscription(t, topic, 10*time.Second, dlq)
			bucket := strings.ToLower(testsrv.Unique("rules"))
			g.NewBucket(t, bucket, false, topic)
			return rig{queueURL: "pubsub://" + sub, dlqURL: "pubsub://" + dlq, scheme: "gs://", bucket: bucket,
				put: func(key, file string) { gcsPut(t, g, bucket, key, file) }}
		},
		"azqueue": func(t *testing.T) rig {
			az := testsrv.Azurite(t)
			q, dlq := az.NewQueue(t, "rules"), az.NewQueue(t, "rules-dlq")
			br, err := azgrid.New(az.BlobURL, az.Blob, q)
			require.NoError(t, err)
			proxy := httptest.NewServer(br)
			t.Cleanup(proxy.Close)
			up, err := sdkblob.NewClientFromConnectionString(strings.Replace(az.ConnectionString, az.BlobURL, proxy.URL+"/"+testsrv.AzureAccount, 1), nil)
			require.NoError(t, err)
			container := az.NewContainer(t, "rules")
			return rig{env: map[string]string{"AZURE_STORAGE_CONNECTION_STRING": az.ConnectionString},
				queueURL: "azqueue://" + testsrv.AzureAccount + "/" + queueName(q), dlqURL: "azqueue://" + testsrv.AzureAccount + "/" + queueName(dlq),
				scheme: "azblob://", bucket: container,
				put: func(key, file string) { azurePut(t, up, container, key, file) }}
		},
	}
	for _, cloud := range []string{"pubsub", "azqueue"} {
		t.Run(cloud, func(t *testing.T) {
			t.Parallel()
			db := pgtest.NewDB(t)
			r := clouds[cloud](t)
			r.put("parcels/six.zip", zipFile)
			r.put("admin/admin.geojson", "../../testdata/synthetic/admin.geojson") // 120 features
			srv := startServe(t, r.env, "--queue-url", r.queueURL, "--dlq-url", r.dlqURL, "--database-url", db,
				"--workers", "2", "--wait", "1s", "--backoff", "1s", "--max-features", "100",
				"--route", "parcels/=parcels", "--route", "admin/=admin_units")
			t.Cleanup(func() {
				if t.Failed() {
					t.Logf("serve's log:\n%s", srv.stderr.String())
				}
			})
			eventually(t, 60*time.Second, "the zip written and the GeoJSON over the limit dead-lettered", func() bool {
				return srv.metric(t, `geoingest_write_gate_total{result="written"}`) >= 1 && srv.metric(t, "geoingest_messages_dead_lettered_total") >= 1
			})
			require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'current' AND source_key = 'parcels/six.zip'`))
			n := queryInt(t, db, `SELECT feature_count FROM jobs WHERE source_key = 'parcels/six.zip'`)
			require.Positive(t, n)
			require.EqualValues(t, n, queryInt(t, db, `SELECT count(*) FROM parcels`))
			require.Zero(t, queryInt(t, db, `SELECT count(*) FROM admin_units`))
			reason := queryString(t, db, `SELECT coalesce(last_error, '') FROM claims WHERE source_key = 'admin/admin.geojson' AND state = 'FAILED'`)
			require.Contains(t, reason, "--max-features", "the reason names the flag")
			require.True(t, strings.HasPrefix(reason, r.scheme+r.bucket+"/admin/admin.geojson: "), "the reason names the object: %s", reason)

			base := strings.TrimSuffix(srv.metrics, "/metrics")
			get := func(path string) string {
				resp, err := http.Get(base + path)
				require.NoError(t, err)
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, b)
				return string(b)
			}
			failures := get("/api/failures")
			require.Contains(t, failures, "admin/admin.geojson")
			require.Contains(t, failures, "--max-features")
			jobs := get("/api/jobs")
			require.Contains(t, jobs, "parcels/six.zip")
			require.Contains(t, get("/"), "geoingest")
			t.Logf("%s: the zip wrote %d features; the GeoJSON over the limit: %s", cloud, n, reason)
		})
	}
}
