package gcs_test

import (
	"context"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/ingest/gcs"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	pubsubqueue "github.com/geoingest/geoingest/queue/pubsub"
	"github.com/stretchr/testify/require"
)

// TestEventNames: a finalize is a creation; a delete or archive is a
// removal unless a new generation replaced the object (its own finalize
// counts); metadata updates are neither, so the trigger gate drops them.
func TestEventNames(t *testing.T) {
	ev := ingest.Event{Bucket: "b", Key: "parcels/a+b %.geojson", VersionID: "1700000000123456", Size: 12, ETag: "md5"}
	for _, c := range []struct {
		typ              string
		extra            map[string]string
		created, removed bool
	}{
		{gcs.ObjectFinalize, nil, true, false},
		{gcs.ObjectDelete, nil, false, true},
		{gcs.ObjectArchive, nil, false, true},
		{gcs.ObjectDelete, map[string]string{"overwrittenByGeneration": "1700000000999999"}, false, false},
		{gcs.ObjectArchive, map[string]string{"overwrittenByGeneration": "1700000000999999"}, false, false},
		{gcs.ObjectMetadataUpdate, nil, false, false},
	} {
		evs, err := gcs.ParseEvents(notification(t, ev, c.typ, c.extra))
		require.NoError(t, err, c.typ)
		require.Len(t, evs, 1)
		got := evs[0]
		require.Equal(t, c.created, got.Created(), "%s %v", c.typ, c.extra)
		require.Equal(t, c.removed, got.Removed(), "%s %v", c.typ, c.extra)
		require.Equal(t, "parcels/a+b %.geojson", got.Key, "object names are not encoded")
		require.Equal(t, got.Key, ingest.UnquotePlus(got.RawKey), "RawKey decodes to the name, as the key formula asks")
		require.Equal(t, "1700000000123456", got.VersionToken(), "the generation is the version token")
		require.Equal(t, "gs", got.Store)
	}
	// Generations order the versions of one name.
	older, _ := gcs.ParseEvents(notification(t, ingest.Event{Bucket: "b", Key: "k", VersionID: "999999", Size: 1}, gcs.ObjectFinalize, nil))
	newer, _ := gcs.ParseEvents(notification(t, ingest.Event{Bucket: "b", Key: "k", VersionID: "1000000", Size: 1}, gcs.ObjectFinalize, nil))
	older[0].Time = newer[0].Time.Add(time.Hour) // a later event time does not make it newer
	require.Equal(t, 1, ingest.CompareOrder(newer[0].Order(), older[0].Order()))

	for _, bad := range []string{`{"message":{"attributes":{"eventType":"OBJECT_FINALIZE","bucketId":"b","objectId":"k","objectGeneration":"x"}}}`,
		`{"message":{"attributes":{"eventType":"OBJECT_FINALIZE","bucketId":"b","objectId":"k","objectGeneration":"5"}}}`, // no resource
		`{"message":{"attributes":{"eventType":"OBJECT_FINALIZE","bucketId":"b","objectId":"k","objectGeneration":"5"},"data":"!!"}}`,
		`{"message":{"data":"e30="}}`, `{"Records":[]}`} {
		_, err := gcs.ParseEvents([]byte(bad))
		require.Error(t, err, bad)
		require.Equal(t, ingest.Permanent, ingest.KindOf(err), bad)
	}
}

// TestNotificationsFromTheEmulator: what fake-gcs-server publishes for an
// upload, an overwrite and a delete, received through queue/pubsub from
// the Pub/Sub emulator, decodes into the events the consumer acts on.
func TestNotificationsFromTheEmulator(t *testing.T) {
	srv := testsrv.GCP(t)
	topic := srv.NewTopic(t, "notify")
	sub := srv.NewSubscription(t, topic, 10*time.Second, "")
	bucket := testsrv.Unique("notified")
	srv.NewBucket(t, bucket, false, topic)
	r := pubsubqueue.New(srv.Pubsub, sub, pubsubqueue.Options{Wait: time.Second})

	first := put(t, srv, bucket, "parcels/a b.geojson", []byte(`{"v":1}`))
	second := put(t, srv, bucket, "parcels/a b.geojson", []byte(`{"v":2,"x":true}`))
	require.NoError(t, srv.Storage.Bucket(bucket).Object("parcels/a b.geojson").Delete(context.Background()))

	var got []ingest.Event
	deadline := time.Now().Add(15 * time.Second)
	for len(got) < 4 && time.Now().Before(deadline) {
		msgs, err := r.Receive(context.Background(), 10)
		require.NoError(t, err)
		for _, m := range msgs {
			evs, err := gcs.Objects{}.Events(m.Body)
			require.NoError(t, err, "%s", m.Body)
			got = append(got, evs...)
			require.NoError(t, r.Ack(context.Background(), m))
		}
	}
	var created, removed, replaced []ingest.Event
	for _, ev := range got {
		switch {
		case ev.Created():
			created = append(created, ev)
		case ev.Removed():
			removed = append(removed, ev)
		default:
			replaced = append(replaced, ev)
		}
	}
	require.Len(t, created, 2, "%v", got)
	tokens := map[string]int64{}
	for _, ev := range created {
		tokens[ev.VersionToken()] = ev.Size
	}
	require.Equal(t, map[string]int64{first.VersionID: 7, second.VersionID: 16}, tokens)
	require.Len(t, removed, 1, "the delete: %v", got)
	require.Equal(t, second.VersionID, removed[0].VersionID)
	require.Len(t, replaced, 1, "the overwrite's delete of the first generation is not a removal: %v", got)
}
