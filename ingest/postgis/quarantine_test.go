package postgis

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoingest/geoingest/ingest"
	"github.com/stretchr/testify/require"
)

// badFeaturesFile writes n good squares (APN with leading zeros) followed
// by the five features the policies leave out: two null geometries, a
// point, a line, and a polygon with no area (a collapsed ring: invalid,
// nothing left after repair).
func badFeaturesFile(t *testing.T, name string, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"type":"FeatureCollection","features":[`)
	for i := 0; i < n; i++ {
		x, y := 13+float64(i%50)*0.002, 52.5+float64(i/50)*0.002
		fmt.Fprintf(&b, `{"type":"Feature","properties":{"APN":"%07d"},"geometry":{"type":"Polygon","coordinates":[[[%g,%g],[%g,%g],[%g,%g],[%g,%g],[%g,%g]]]}},`,
			i, x, y, x+0.001, y, x+0.001, y+0.001, x, y+0.001, x, y)
	}
	b.WriteString(`{"type":"Feature","properties":{"APN":"0000901","note":"no geometry"},"geometry":null},`)
	b.WriteString(`{"type":"Feature","properties":{"APN":"0000902"},"geometry":{"type":"Polygon","coordinates":[]}},`)
	b.WriteString(`{"type":"Feature","properties":{"APN":"0000903"},"geometry":{"type":"Point","coordinates":[13.5,52.6]}},`)
	b.WriteString(`{"type":"Feature","properties":{"APN":"0000904"},"geometry":{"type":"LineString","coordinates":[[13.5,52.6],[13.6,52.7]]}},`)
	b.WriteString(`{"type":"Feature","properties":{"APN":"0000905"},"geometry":{"type":"Polygon","coordinates":[[[13.1,52.1],[13.2,52.1],[13.3,52.1],[13.1,52.1]]]}}`)
	b.WriteString("]}")
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path
}

// TestQuarantineKeepsEachLeftOutFeature: the features the policies leave
// out of a job (null, empty, not polygonal, collapsed by the repair) are
// each kept in the quarantine with the rule, the reason, the raw
// attributes and the geometry where there was one; a duplicate delivery
// quarantines nothing twice; verify reconciles landed plus quarantined
// with the ledger and finds a quarantine that lost a row; the exports
// keep the attributes as they were (leading zeros). In a fresh load (in
// the shared partition and in one of its own) and in a diff write, where
// the quarantine guard holds the version: 5 of 45 features left out is
// over its 10 %.
func TestQuarantineKeepsEachLeftOutFeature(t *testing.T) {
	t.Parallel()
	good := parcelsFile(t, "good.geojson", 40, 13, apn)
	bad := badFeaturesFile(t, "bad.geojson", 40)
	for _, mode := range []string{"fresh", "fresh-own", "diff"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			if mode == "fresh-own" {
				b.store.OwnPartitionBytes = 1
			}
			ctx := context.Background()
			job := version(t, bad, "v1", "01", ingest.DefaultParams("parcels"))
			if mode == "diff" {
				require.Equal(t, ingest.Written, b.svc.Run(ctx, version(t, good, "v1", "01", ingest.DefaultParams("parcels"))).Outcome)
				job = version(t, bad, "v2", "02", ingest.DefaultParams("parcels"))
			}
			res := b.svc.Run(ctx, job)
			require.NoError(t, res.Err)
			require.EqualValues(t, 5, res.Quarantined)
			if mode == "diff" {
				require.Equal(t, ingest.Pending, res.Outcome)
				require.Contains(t, res.Reason, "quarantine: 5 of 45 features (11.1%) left out (collapsed 1, null-geometry 2, wrong-type 2)")
			} else {
				require.Equal(t, ingest.Written, res.Outcome)
			}
			require.EqualValues(t, 40, res.Features)

			feats, err := b.store.QuarantinedFeatures(ctx, job.ID, ingest.FirstQuarantinePage(0))
			require.NoError(t, err)
			require.Len(t, feats, 5)
			want := []struct {
				index      int64
				rule, apn  string
				reason     string
				geomPrefix string
			}{
				{40, ingest.RuleNullGeometry, "0000901", "null or empty geometry", "null"},
				{41, ingest.RuleNullGeometry, "0000902", "null or empty geometry", "null"},
				{42, ingest.RuleWrongType, "0000903", "Point is not polygonal", `{"type":"Point","coordinates":[13.5,52.6]}`},
				{43, ingest.RuleWrongType, "0000904", "LineString is not polygonal", `{"type":"LineString"`},
				{44, ingest.RuleCollapsed, "0000905", "no polygonal area left after repair", `{"type":"MultiPolygon"`},
			}
			for i, w := range want {
				f := feats[i]
				require.Equal(t, w.index, f.Index, "feature %d", i)
				require.Equal(t, w.rule, f.Rule, "feature %d", w.index)
				require.Contains(t, f.Reason, w.reason, "feature %d", w.index)
				var props map[string]string
				require.NoError(t, json.Unmarshal(f.Properties, &props))
				require.Equal(t, w.apn, props["APN"], "feature %d", w.index)
				require.True(t, strings.HasPrefix(string(f.Geometry), w.geomPrefix), "feature %d: geometry %s", w.index, f.Geometry)
			}
			one, err := b.store.QuarantinedFeatures(ctx, job.ID, ingest.QuarantinePage{AfterIndex: -1 << 63, Index: 42})
			require.NoError(t, err)
			require.Len(t, one, 1)
			require.Equal(t, ingest.RuleWrongType, one[0].Rule)

			var skippedNull, skippedType, quarantined int64
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT skipped_null, skipped_type, quarantined FROM jobs WHERE job_id = $1`, job.ID).
				Scan(&skippedNull, &skippedType, &quarantined))
			require.Equal(t, [3]int64{3, 2, 5}, [3]int64{skippedNull, skippedType, quarantined})

			// A duplicate delivery quarantines nothing twice.
			require.Equal(t, ingest.AlreadyPresent, b.svc.Run(ctx, job).Outcome)
			var n int64
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM geoingest_quarantine`).Scan(&n))
			require.EqualValues(t, 5, n)

			js, err := b.store.QuarantinedJobs(ctx, 0)
			require.NoError(t, err)
			require.Len(t, js, 1)
			require.Equal(t, map[string]int64{"null-geometry": 2, "wrong-type": 2, "collapsed": 1}, js[0].ByRule)
			require.EqualValues(t, 5, js[0].Quarantined, "the job's features, not its rules")

			var csvOut, gjOut bytes.Buffer
			require.NoError(t, ingest.ExportQuarantine(ctx, &csvOut, b.store, job.ID, "csv"))
			recs, err := csv.NewReader(&csvOut).ReadAll()
			require.NoError(t, err)
			require.Equal(t, []string{"index", "layer", "rule", "reason", "APN", "note", "geometry"}, recs[0])
			require.Len(t, recs, 6)
			require.Equal(t, []string{"40", recs[1][1], ingest.RuleNullGeometry}, recs[1][:3])
			require.Equal(t, "0000901", recs[1][4])
			require.Equal(t, "no geometry", recs[1][5])
			require.NoError(t, ingest.ExportQuarantine(ctx, &gjOut, b.store, job.ID, "geojson"))
			var fc struct {
				Features []struct {
					ID         int64             `json:"id"`
					Properties map[string]string `json:"properties"`
				} `json:"features"`
			}
			require.NoError(t, json.Unmarshal(gjOut.Bytes(), &fc), gjOut.String())
			require.Len(t, fc.Features, 5)
			require.Equal(t, "0000904", fc.Features[3].Properties["APN"])
			require.Equal(t, ingest.RuleWrongType, fc.Features[3].Properties["geoingest_rule"])

			v := verifiedStore(t, b.store)
			require.EqualValues(t, 5, v.Quarantined)
			_, err = b.pool.Exec(ctx, `DELETE FROM geoingest_quarantine WHERE feature_index = 43`)
			require.NoError(t, err)
			v, err = b.store.Verify(ctx)
			require.NoError(t, err)
			require.Len(t, v.Problems, 1)
			require.Equal(t, "quarantine", v.Problems[0].Check)
			require.Contains(t, v.Problems[0].Detail, "the quarantine holds 4")
		})
	}
}

// TestQuarantineOfAFailedJobIsRolledBack: a job that fails after its
// skipped features were spooled (a policy refuses a later feature)
// leaves nothing in the quarantine; its retry under a policy that
// accepts quarantines each once.
func TestQuarantineOfAFailedJobIsRolledBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	bad := badFeaturesFile(t, "bad.geojson", 10)
	p := ingest.DefaultParams("parcels")
	p.Invalid = ingest.PolicyFail // the collapsed ring, last, fails the job
	res := b.svc.Run(ctx, version(t, bad, "v1", "01", p))
	require.Equal(t, ingest.Failed, res.Outcome)
	var n int64
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM geoingest_quarantine`).Scan(&n))
	require.Zero(t, n)
	res = b.svc.Run(ctx, version(t, bad, "v1", "01", ingest.DefaultParams("parcels")))
	require.Equal(t, ingest.Written, res.Outcome, "%v", res.Err)
	require.NoError(t, b.pool.QueryRow(ctx, `SELECT count(*) FROM geoingest_quarantine`).Scan(&n))
	require.EqualValues(t, 5, n)
	verifiedStore(t, b.store)
}
