package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
)

// TestServeCrashPointsClouds is TestServeCrashPoints on Pub/Sub with
// Cloud Storage and on a Storage Queue with Blob Storage: a `geoingest
// serve` subprocess SIGKILLs itself at each point of a job's life, a
// second one runs with no one stepping in, and the job ends committed
// exactly once (0 lost, 0 doubled), the queue drained and the dead-letter
// queue empty.
func TestServeCrashPointsClouds(t *testing.T) {
	t.Parallel()
	const lease, visibility = 3 * time.Second, 2 * time.Second
	points := []string{ingest.HookBeforeClaim, ingest.HookAfterClaim, ingest.HookDuringDownload, ingest.HookDuringCopy,
		ingest.HookBeforeCommit, ingest.HookBeforeAck, ingest.HookAfterAck}
	type rig struct {
		c       *crashEnv
		drained func() bool
	}
	clouds := map[string]func(t *testing.T, name string) rig{
		"pubsub": func(t *testing.T, name string) rig {
			g := testsrv.GCP(t)
			topic, dlq := g.NewTopic(t, name), g.NewTopic(t, name+"-dlq")
			sub := g.NewSubscription(t, topic, visibility, dlq)
			bucket := strings.ToLower(testsrv.Unique("crash"))
			g.NewBucket(t, bucket, false, topic)
			gcsPut(t, g, bucket, "parcels/county.geojson", squaresFile(t, 40))
			c := &crashEnv{db: pgtest.NewDB(t), queueURL: "pubsub://" + sub, dlqURL: "pubsub://" + dlq, bucket: bucket,
				env: append(os.Environ(), "GEOINGEST_HOME="+t.TempDir(), "GEOINGEST_TEST_CRASH_AT=", "GEOINGEST_TEST_PAUSE_AT=")}
			return rig{c: c, drained: func() bool {
				n := 0
				for _, m := range g.Published() {
					if m.Attributes["bucketId"] == bucket {
						n++
						if m.Acks == 0 {
							return false
						}
					}
				}
				return n == 1 // the one notification, acked; nothing dead-lettered
			}}
		},
		"azqueue": func(t *testing.T, name string) rig {
			az := testsrv.Azurite(t)
			q, dlq := az.NewQueue(t, name), az.NewQueue(t, name+"-dlq")
			container := az.NewContainer(t, "crash")
			br := newAzgridClient(t, az, q)
			azurePut(t, br, container, "parcels/county.geojson", squaresFile(t, 40))
			c := &crashEnv{db: pgtest.NewDB(t), bucket: container,
				queueURL: "azqueue://" + testsrv.AzureAccount + "/" + queueName(q), dlqURL: "azqueue://" + testsrv.AzureAccount + "/" + queueName(dlq),
				env: append(os.Environ(), "AZURE_STORAGE_CONNECTION_STRING="+az.ConnectionString, "GEOINGEST_HOME="+t.TempDir(),
					"GEOINGEST_TEST_CRASH_AT=", "GEOINGEST_TEST_PAUSE_AT=")}
			return rig{c: c, drained: func() bool {
				pq, err := q.GetProperties(context.Background(), nil)
				require.NoError(t, err)
				pd, err := dlq.GetProperties(context.Background(), nil)
				require.NoError(t, err)
				return *pq.ApproximateMessagesCount == 0 && *pd.ApproximateMessagesCount == 0
			}}
		},
	}
	for cloud, open := range clouds {
		t.Run(cloud, func(t *testing.T) {
			t.Parallel()
			for _, point := range points {
				t.Run(point, func(t *testing.T) {
					t.Parallel()
					r := open(t, "crash-"+point)
					c := r.c
					args := []string{"--lease", lease.String(), "--visibility", visibility.String()}
					a := c.serve(t, []string{"GEOINGEST_TEST_CRASH_AT=" + point}, args...)
					select {
					case <-a.exited:
					case <-time.After(90 * time.Second):
						t.Fatalf("worker A never reached %s:\n%s", point, a.stderr.String())
					}
					killedAt := time.Now()
					require.True(t, a.killed(), "worker A died of SIGKILL at %s:\n%s", point, a.stderr.String())
					require.Zero(t, queryInt(t, c.db, `SELECT count(*) FROM parcels WHERE job_ref NOT IN (SELECT job_ref FROM jobs)`))
					b := c.serve(t, nil, args...)
					eventually(t, lease+visibility+60*time.Second, "the job committed and the queue drained", func() bool {
						return c.committed(t) && r.drained()
					})
					t.Logf("%s: killed at %s; committed and drained %.1fs after the kill", cloud, point, time.Since(killedAt).Seconds())
					b.stop(t)
					require.EqualValues(t, 1, queryInt(t, c.db, `SELECT count(*) FROM jobs`))
					require.EqualValues(t, 1, queryInt(t, c.db, `SELECT count(*) FROM jobs WHERE status = 'current'`))
					require.EqualValues(t, 40, queryInt(t, c.db, `SELECT count(*) FROM parcels`))
					require.EqualValues(t, 40, queryInt(t, c.db, `SELECT count(DISTINCT feature_index) FROM parcels`))
					code, out, errOut := run(t, map[string]string{"DATABASE_URL": c.db}, "verify")
					require.Equal(t, 0, code, out+errOut)
				})
			}
		})
	}
}
