package postgis_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/postgis"
	ingests3 "github.com/geoingest/geoingest/ingest/s3"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/require"
)

// TestS3ChangedObjectIsSuperseded: in an unversioned bucket only the ETag
// pins the version an event names. When the object was overwritten before
// the event's job ran, the fetch fails (a real S3 server, versitygw,
// answers If-Match with 412 PreconditionFailed; gofakes3 sends the new
// object, whose ETag differs). That job is committed as superseded, with
// no features and without touching the source's current generation, and
// its next delivery is a duplicate: never a permanent failure for the DLQ.
func TestS3ChangedObjectIsSuperseded(t *testing.T) {
	t.Parallel()
	servers := map[string]func(t *testing.T) *testsrv.S3Server{
		"gofakes3": func(t *testing.T) *testsrv.S3Server { return testsrv.S3(t) },
		"versitygw": func(t *testing.T) *testsrv.S3Server {
			hook := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
			t.Cleanup(hook.Close)
			return testsrv.Versitygw(t, hook.URL)
		},
	}
	for name, start := range servers {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			b := newService(t, pgtest.NewDB(t))
			srv := start(t)
			const bucket = "plain"
			srv.NewBucket(t, bucket, false)
			put := func(body string) ingest.Event {
				key := "parcels/county.geojson"
				out, err := srv.Client.PutObject(ctx, &awss3.PutObjectInput{Bucket: aws.String(bucket), Key: &key, Body: bytes.NewReader([]byte(body))})
				require.NoError(t, err)
				return ingest.Event{Name: "ObjectCreated:Put", Bucket: bucket, Key: key, Size: int64(len(body)),
					ETag: strings.Trim(aws.ToString(out.ETag), `"`), VersionID: aws.ToString(out.VersionId)}
			}
			square := func(x string) string {
				return `{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[` + x + `,52.5],[` + x + `.001,52.5],[` + x + `.001,52.501],[` + x + `,52.5]]]}}`
			}
			old := put(square("13"))
			old.Sequencer = "01"
			require.Empty(t, old.VersionID, "an unversioned bucket: the ETag is the version")
			cur := put(square("14"))
			cur.Sequencer = "02"
			require.NotEqual(t, old.ETag, cur.ETag)

			job := func(ev ingest.Event) ingest.Job {
				src, f, err := ingests3.NewSource(ctx, srv.Client, ev, ingests3.Options{})
				require.NoError(t, err)
				j, err := ingest.NewJob(src, ingest.DefaultParams("parcels"), f)
				require.NoError(t, err)
				return j
			}
			// The old event's fetch: the object changed.
			_, err := job(old).Fetch.Fetch(ctx, t.TempDir())
			require.ErrorIs(t, err, ingest.ErrObjectChanged)
			t.Logf("%s: %v", name, err)

			res := b.svc.Run(ctx, job(old))
			require.NoError(t, res.Err)
			require.Equal(t, ingest.Superseded, res.Outcome)
			require.Zero(t, res.Features)
			require.EqualValues(t, 1, testutil.ToFloat64(b.metrics.WriteGate.WithLabelValues("superseded")))
			require.Zero(t, testutil.ToFloat64(b.metrics.JobsFailed.WithLabelValues("permanent")))
			var status, claim string
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT j.status, c.state FROM jobs j JOIN claims c USING (job_id) WHERE job_id = $1`,
				res.JobID).Scan(&status, &claim))
			require.Equal(t, "superseded", status)
			require.Equal(t, "COMMITTED", claim)
			require.Zero(t, b.count(t, `SELECT count(*) FROM parcels`))

			again := b.svc.Run(ctx, job(old))
			require.Equal(t, ingest.AlreadyPresent, again.Outcome, "its next delivery is a duplicate")

			// The new version's event writes it.
			res = b.svc.Run(ctx, job(cur))
			require.NoError(t, res.Err)
			require.Equal(t, ingest.Written, res.Outcome)
			require.EqualValues(t, 1, b.count(t, `SELECT count(*) FROM parcels`))
			rep, err := b.svc.Store.(*postgis.Store).Verify(ctx)
			require.NoError(t, err)
			require.True(t, rep.OK(), "%+v", rep.Problems)
		})
	}
}
