package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/gcs"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/geoingest/geoingest/queue"
	pubsubqueue "github.com/geoingest/geoingest/queue/pubsub"
	"github.com/stretchr/testify/require"
)

// gcsPut uploads file (or "literal:TEXT") to gs://bucket/key and returns
// its created event.
func gcsPut(t *testing.T, g *testsrv.GCPServer, bucket, key, file string) ingest.Event {
	t.Helper()
	body := []byte(strings.TrimPrefix(file, "literal:"))
	if !strings.HasPrefix(file, "literal:") {
		var err error
		body, err = os.ReadFile(file)
		require.NoError(t, err)
	}
	w := g.Storage.Bucket(bucket).Object(key).NewWriter(context.Background())
	_, err := w.Write(body)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return gcs.Created(w.Attrs())
}

// gcsTap reads every notification the bucket published, through a
// subscription of its own, so that a test can publish them again.
type gcsTap struct {
	g     *testsrv.GCPServer
	r     *pubsubqueue.Receiver
	topic string
	seen  []*pubsubpb.PubsubMessage
}

func (tp *gcsTap) drain(t *testing.T, atLeast int) {
	t.Helper()
	eventually(t, 2*time.Minute, "the bucket's notifications", func() bool {
		msgs, err := tp.r.Receive(context.Background(), 10)
		require.NoError(t, err)
		for _, m := range msgs {
			data, err := pubsubqueue.Data(m)
			require.NoError(t, err)
			tp.seen = append(tp.seen, &pubsubpb.PubsubMessage{Data: data, Attributes: m.Attributes})
			require.NoError(t, tp.r.Ack(context.Background(), m))
		}
		return len(tp.seen) >= atLeast
	})
}

// republish publishes the notifications again: a redelivery of each.
func (tp *gcsTap) republish(t *testing.T, msgs ...*pubsubpb.PubsubMessage) {
	t.Helper()
	_, err := tp.g.Pubsub.TopicAdminClient.Publish(context.Background(), &pubsubpb.PublishRequest{Topic: tp.topic, Messages: msgs})
	require.NoError(t, err)
}

func (tp *gcsTap) find(t *testing.T, key, generation string) *pubsubpb.PubsubMessage {
	for _, m := range tp.seen {
		if m.Attributes["objectId"] == key && m.Attributes["objectGeneration"] == generation && m.Attributes["eventType"] == gcs.ObjectFinalize {
			return m
		}
	}
	t.Fatalf("no notification for %s#%s", key, generation)
	return nil
}

// TestServeGCSEndToEnd: serve --queue-url pubsub://… on the emulators.
// fake-gcs-server publishes its own notifications for the uploads to the
// Pub/Sub emulator; every one is then published a second time. serve
// writes each object's features exactly once, stops every duplicate at a
// gate, filters the sidecars, and dead-letters the unparseable object to
// the dead-letter topic with its reason. A second generation of one object
// replaces the first, and a late copy of the first generation's
// notification changes nothing.
func TestServeGCSEndToEnd(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	g := testsrv.GCP(t)
	topic, dlq := g.NewTopic(t, "uploads"), g.NewTopic(t, "uploads-dlq")
	sub := g.NewSubscription(t, topic, 10*time.Second, dlq)
	dlqSub := g.NewSubscription(t, dlq, 10*time.Second, "")
	tap := &gcsTap{g: g, topic: topic, r: pubsubqueue.New(g.Pubsub, g.NewSubscription(t, topic, 10*time.Second, ""), pubsubqueue.Options{Wait: time.Second})}
	bucket := strings.ToLower(testsrv.Unique("uploads"))
	g.NewBucket(t, bucket, false, topic)

	six := "../../testdata/corpus/six_counties/six_counties"
	a := gcsPut(t, g, bucket, "parcels/city a+b.geojson", "../../testdata/corpus/montreal_landuse_overpass/export.geojson")
	gcsPut(t, g, bucket, "admin/admin.geojson", "../../testdata/synthetic/admin.geojson")
	for _, ext := range []string{".shx", ".dbf", ".prj", ".shp"} {
		gcsPut(t, g, bucket, "parcels/six"+ext, six+ext)
	}
	gcsPut(t, g, bucket, "parcels/bad.geojson", "literal:this is not GeoJSON at all")
	const goodJobs, events = 3, 7
	tap.drain(t, events)

	srv := startServe(t, nil, "--queue-url", "pubsub://"+sub, "--dlq-url", "pubsub://"+dlq, "--workers", "4",
		"--database-url", db, "--visibility", "10s", "--wait", "1s", "--backoff", "1s", "--max-receives", "3", "--lease", "10s",
		"--route", "parcels/=parcels?guards=off", "--route", "admin/=admin_units") // the second version shrinks on purpose
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve's log:\n%s", srv.stderr.String())
		}
	})
	eventually(t, 2*time.Minute, "every notification acked or dead-lettered", func() bool {
		return srv.metric(t, "geoingest_events_received_total") >= events &&
			srv.metric(t, "geoingest_messages_dead_lettered_total") >= 1 &&
			queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'current'`) >= goodJobs
	})
	tap.republish(t, tap.seen...) // a second delivery of every notification
	eventually(t, 2*time.Minute, "the second copies, acked or dead-lettered", func() bool {
		return srv.metric(t, "geoingest_events_received_total") >= 2*events &&
			srv.metric(t, "geoingest_messages_dead_lettered_total") >= 2 &&
			// a copy that found its claim held comes back after the lease
			srv.metric(t, `geoingest_claims_total{result="duplicate"}`)+srv.metric(t, `geoingest_write_gate_total{result="already_present"}`) >= goodJobs
	})
	written := srv.metric(t, `geoingest_write_gate_total{result="written"}`)
	lost := srv.metric(t, `geoingest_claims_total{result="duplicate"}`)
	present := srv.metric(t, `geoingest_write_gate_total{result="already_present"}`)
	require.EqualValues(t, goodJobs, written)
	require.EqualValues(t, goodJobs, lost+present, "each duplicate is stopped at the claim gate or the write gate")
	require.EqualValues(t, 2*3, srv.metric(t, `geoingest_events_filtered_total{reason="sidecar"}`), ".shx, .dbf, .prj, twice each")
	require.EqualValues(t, goodJobs, queryInt(t, db, `SELECT count(*) FROM jobs`))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE source_key = 'parcels/six.shp'`))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE source_bucket = $1 AND source_key = 'parcels/city a+b.geojson' AND version_token = $2`,
		bucket, a.VersionID), "the job names the generation")
	require.EqualValues(t, 0, queryInt(t, db, `
		SELECT count(*) FROM jobs j WHERE j.feature_count <>
		  (SELECT count(*) FROM parcels p WHERE p.job_ref = j.job_ref) + (SELECT count(*) FROM admin_units u WHERE u.job_ref = j.job_ref)`))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM claims WHERE state = 'FAILED' AND source_key = 'parcels/bad.geojson' AND last_error <> ''`))

	// The dead letters carry the reason.
	d := pubsubqueue.New(g.Pubsub, dlqSub, pubsubqueue.Options{Wait: time.Second})
	var reasons []string
	eventually(t, 2*time.Minute, "the dead letters", func() bool {
		msgs, err := d.Receive(context.Background(), 10)
		require.NoError(t, err)
		for _, m := range msgs {
			reasons = append(reasons, m.Attributes[queue.ReasonAttribute])
			require.Equal(t, "parcels/bad.geojson", m.Attributes["objectId"], "the notification is dead-lettered as it came")
			require.NoError(t, d.Ack(context.Background(), m))
		}
		return len(reasons) >= 2
	})
	for _, r := range reasons {
		require.Contains(t, r, "gs://"+bucket+"/parcels/bad.geojson")
	}

	// A second generation replaces the first; a late copy of the first's
	// notification changes nothing.
	a2 := gcsPut(t, g, bucket, a.Key, "../../testdata/corpus/mixed_feature_geojson/mixed_feature.json")
	require.NotEqual(t, a.VersionID, a2.VersionID)
	eventually(t, 2*time.Minute, "the second generation to become current", func() bool {
		return queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'current' AND version_token = $1`, a2.VersionID) == 1
	})
	tap.drain(t, events+2) // its finalize, and the first generation's delete (replaced: filtered)
	tap.republish(t, tap.find(t, a.Key, a.VersionID))
	eventually(t, 2*time.Minute, "the late copy, received", func() bool {
		return srv.metric(t, "geoingest_events_received_total") >= 2*events+3
	})
	time.Sleep(time.Second)
	require.EqualValues(t, goodJobs+1, srv.metric(t, `geoingest_write_gate_total{result="written"}`))
	srv.stop(t)
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE source_key = $1 AND status = 'current' AND version_token = $2`,
		a.Key, a2.VersionID), "the newest generation is the only current one")
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(DISTINCT p.job_ref) FROM parcels p JOIN jobs j USING (job_ref) WHERE j.source_key = $1`, a.Key))
	code, out, errOut := run(t, map[string]string{"DATABASE_URL": db}, "verify")
	require.Equal(t, 0, code, out+errOut)
}
