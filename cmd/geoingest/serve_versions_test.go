package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testsrv"
	"github.com/stretchr/testify/require"
)

// squaresFile writes n small squares as GeoJSON.
func squaresFile(t *testing.T, n int) string {
	t.Helper()
	var fs []string
	for i := 0; i < n; i++ {
		x := 13.0 + float64(i)*0.01
		fs = append(fs, fmt.Sprintf(`{"type":"Feature","properties":{"i":%d},"geometry":{"type":"Polygon","coordinates":[[[%g,52.5],[%g,52.5],[%g,52.501],[%g,52.501],[%g,52.5]]]}}`,
			i, x, x+0.001, x+0.001, x, x))
	}
	p := filepath.Join(t.TempDir(), fmt.Sprintf("sq%d.geojson", n))
	require.NoError(t, os.WriteFile(p, []byte(`{"type":"FeatureCollection","features":[`+strings.Join(fs, ",")+`]}`), 0o644))
	return p
}

// removal is the S3 record of a delete of o's key with sequencer seq.
func removal(bucket string, o object, seq int) string {
	rec := o.record(bucket)
	rec["eventName"] = "ObjectRemoved:DeleteMarkerCreated"
	obj := rec["s3"].(map[string]any)["object"].(map[string]any)
	delete(obj, "size")
	delete(obj, "eTag")
	obj["versionId"] = fmt.Sprintf("delete-marker-%d", seq)
	obj["sequencer"] = fmt.Sprintf("0065F1A2B3C4D5E6%02X", seq)
	b, _ := json.Marshal(map[string]any{"Records": []any{rec}})
	return string(b)
}

// TestServeVersionsAndDeletes: two versions of one key whose notifications
// arrive newest first, each twice, then a delete that the route mirrors,
// then the old version once more. The newest version is the only current
// generation until the delete retires it; the late old version never comes
// back.
func TestServeVersionsAndDeletes(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t)
	sq := testsrv.SQS(t)
	st := testsrv.S3(t)
	awsEnv := testsrv.EnvOf(t, sq.URL, st.URL)
	const bucket = "versions"
	st.NewBucket(t, bucket, true)
	qURL := sq.NewQueue(t, "versions", 30*time.Second)

	v1 := upload(t, st.Client, bucket, "parcels/county.geojson", squaresFile(t, 3), 1)
	v2 := upload(t, st.Client, bucket, "parcels/county.geojson", squaresFile(t, 5), 2)
	require.NotEqual(t, v1.versionID, v2.versionID)

	srv := startServe(t, awsEnv, "--queue-url", qURL, "--workers", "2", "--database-url", db,
		"--wait", "1s", "--route", "parcels/=parcels+deletes")
	// current returns how many generations hold rows, and how many rows.
	current := func() (int64, int64) {
		return queryInt(t, db, `SELECT count(DISTINCT job_ref) FROM parcels`), queryInt(t, db, `SELECT count(*) FROM parcels`)
	}
	for _, m := range []string{notification(bucket, v2), notification(bucket, v1), notification(bucket, v2), notification(bucket, v1)} {
		sendBody(t, sq.Client, qURL, m)
	}
	eventually(t, 20*time.Second, "both versions processed", func() bool {
		return srv.metric(t, "geoingest_events_received_total") >= 4 &&
			queryInt(t, db, `SELECT count(*) FROM jobs`) == 2
	})
	time.Sleep(300 * time.Millisecond)
	gens, rows := current()
	require.EqualValues(t, 1, gens, "one generation holds rows")
	require.EqualValues(t, 5, rows, "the newest version's features")
	// With two workers v1 may be written first and then replaced by v2, or
	// arrive second and be superseded: either way it holds no rows.
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE status IN ('superseded', 'replaced') AND version_token = $1`, v1.versionID))

	sendBody(t, sq.Client, qURL, removal(bucket, v2, 3))
	eventually(t, 10*time.Second, "the delete", func() bool {
		return srv.metric(t, `geoingest_write_gate_total{result="retired"}`) == 1
	})
	sendBody(t, sq.Client, qURL, notification(bucket, v1)) // late again
	sendBody(t, sq.Client, qURL, removal(bucket, v2, 3))   // the delete, duplicated
	eventually(t, 10*time.Second, "the late copies", func() bool {
		return srv.metric(t, "geoingest_events_received_total") >= 7
	})
	time.Sleep(300 * time.Millisecond)
	srv.stop(t)
	_, rows = current()
	require.Zero(t, rows, "the delete retired the current generation and nothing came back")
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'retired' AND version_token = $1`, v2.versionID))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'deleted'`))
	require.EqualValues(t, 0, queryInt(t, db, `SELECT count(*) FROM sources WHERE current_job_id IS NOT NULL`))
	code, out, errOut := run(t, map[string]string{"DATABASE_URL": db}, "verify")
	require.Equal(t, 0, code, out+errOut)
}
