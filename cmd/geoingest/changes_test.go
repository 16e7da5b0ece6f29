package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestChangesCommandCountsAKeyedVersion ingests the Épinay cadastre, then
// a version of it with known changes under the same path, both with
// --key id, and checks `changes --job J --format json` against the
// truth: 10 attributes changed, 3 geometries moved, 5 removed, 2 added.
// The extents are GeoJSON objects in the JSON, not strings holding them.
func TestChangesCommandCountsAKeyedVersion(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": url}
	raw, err := os.ReadFile(epinay)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "epinay.geojson")
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	code, out, errOut := run(t, env, "ingest", "--json", "--key", "id", path)
	require.Equal(t, 0, code, errOut)
	first := parseLines(t, out)[0]
	require.Nil(t, first.Changes, "a first version's line has no changes")

	v2 := epinayV2(t, raw)
	require.NoError(t, os.WriteFile(path, v2, 0o644))
	code, out, errOut = run(t, env, "ingest", "--json", "--key", "id", path)
	require.Equal(t, 0, code, errOut)
	second := parseLines(t, out)[0]
	require.Equal(t, "written", second.Outcome)
	want := map[string]int64{"added": 2, "removed": 5, "geometry": 3, "attributes": 10, "unchanged": 4241 - 5 - 13}
	require.NotNil(t, second.Changes, out)
	require.Equal(t, first.JobID, second.Changes.Base, "ingest --json names the version it replaced")
	require.Equal(t, want, second.Changes.Counts, "ingest --json gives the version's changes")

	code, out, errOut = run(t, env, "changes", "--job", second.JobID, "--format", "json")
	require.Equal(t, 0, code, errOut)
	var got struct {
		Job     string           `json:"job"`
		Base    string           `json:"base_job"`
		Counts  map[string]int64 `json:"counts"`
		BBox    geoJSONPolygon   `json:"bbox"`
		Feature []struct {
			Kind    string         `json:"kind"`
			OldBBox geoJSONPolygon `json:"old_bbox"`
			NewBBox geoJSONPolygon `json:"new_bbox"`
		} `json:"features"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got), out)
	got.BBox.requireBox(t, "the job's bbox")
	for _, f := range got.Feature {
		if f.Kind != "added" {
			f.OldBBox.requireBox(t, f.Kind+" feature's old_bbox")
		}
		if f.Kind != "removed" {
			f.NewBBox.requireBox(t, f.Kind+" feature's new_bbox")
		}
	}
	require.Equal(t, first.JobID, got.Base)
	require.Equal(t, want, got.Counts)
	require.Len(t, got.Feature, 20)

	// The same in the JSON API, and the feed.
	base := startConsole(t, env)
	var api struct {
		Counts   map[string]int64 `json:"counts"`
		BBox     geoJSONPolygon   `json:"bbox"`
		Cursor   string           `json:"cursor"`
		Features []struct {
			Kind string `json:"kind"`
		} `json:"features"`
	}
	getJSON(t, base+"/api/jobs/"+second.JobID+"/changes", 200, &api)
	require.Equal(t, got.Counts, api.Counts)
	api.BBox.requireBox(t, "the API's bbox")
	require.Len(t, api.Features, 20)
	var e map[string]string
	getJSON(t, base+"/api/jobs/nope/changes", 404, &e)
	getJSON(t, base+"/api/changes/feed?after=x", 400, &e)
	var feed struct {
		Changes []struct {
			Job string `json:"job"`
		} `json:"changes"`
		Cursor string `json:"cursor"`
	}
	deadline := time.Now().Add(time.Minute)
	for getJSON(t, base+"/api/changes/feed", 200, &feed); len(feed.Changes) < 2 && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond) // the feed waits for the cluster's older transactions
		getJSON(t, base+"/api/changes/feed", 200, &feed)
	}
	require.Len(t, feed.Changes, 2)
	require.Equal(t, second.JobID, feed.Changes[1].Job)
	getJSON(t, base+"/api/changes/feed?after="+feed.Cursor, 200, &feed)
	require.Empty(t, feed.Changes, "nothing after the last cursor")

	code, out, errOut = run(t, env, "changes", "file://"+path)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "4241") // the first version: every feature added
	code, _, _ = run(t, env, "changes", "--job", "nope", "--format", "xml")
	require.Equal(t, 2, code)
}

// epinayV2 is a version of the Épinay cadastre with known changes: 10
// attributes changed, 3 geometries moved, 5 parcels removed, 2 added.
func epinayV2(t *testing.T, raw []byte) []byte {
	t.Helper()
	var fc struct {
		Type     string           `json:"type"`
		Features []map[string]any `json:"features"`
	}
	require.NoError(t, json.Unmarshal(raw, &fc))
	fs := fc.Features
	for i := 0; i < 10; i++ { // attributes
		fs[i]["properties"].(map[string]any)["updated"] = "2026-01-01"
	}
	for i := 10; i < 13; i++ { // geometry: the whole parcel shifted a little
		ring := fs[i]["geometry"].(map[string]any)["coordinates"].([]any)[0].([]any)
		for _, pt := range ring {
			p := pt.([]any)
			p[0] = p[0].(float64) + 1e-6
		}
	}
	added := []map[string]any{}
	for i := 20; i < 22; i++ { // added: copies of removed parcels' shapes far away, new ids
		cp := map[string]any{"type": "Feature", "properties": map[string]any{"id": "NEW" + itoa(int64(i))},
			"geometry": map[string]any{"type": "Polygon", "coordinates": [][][]float64{{{3, 49}, {3.001, 49}, {3.001, 49.001}, {3, 49}}}}}
		added = append(added, cp)
	}
	fs = append(fs[:100], fs[105:]...) // removed: 5
	fc.Features = append(fs, added...)
	v2, err := json.Marshal(fc)
	require.NoError(t, err)
	return v2
}

// currentDigest is the current parcels of the source at path, feature for
// feature (properties, geometry, area, sorted), and its ledger row.
func currentDigest(t *testing.T, db, path string) (string, string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), db)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	var rows, ledger string
	require.NoError(t, conn.QueryRow(context.Background(), `
		SELECT md5(string_agg(p.properties::text || md5(ST_AsEWKB(p.geom)) || p.area_m2::text, ',' ORDER BY p.properties::text || md5(ST_AsEWKB(p.geom)))),
		       min(j.feature_count::text || ' ' || round(j.total_area_m2::numeric, 3)::text || ' ' || j.features_checksum)
		FROM geoingest_current_parcels p JOIN jobs j ON j.job_id = p.job_id
		JOIN sources s ON s.current_job_id = j.job_id WHERE s.source_key = $1`, path).Scan(&rows, &ledger))
	return rows, ledger
}

// TestVersionsOracleOnBackfill: a backfill of a directory whose file is
// then republished with changes writes only what changed, and the
// source's current rows and ledger equal a full load of the new version
// into an empty database (by ingest).
func TestVersionsOracleOnBackfill(t *testing.T) {
	t.Parallel()
	db, empty := pgtest.NewDB(t), pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": db}
	raw, err := os.ReadFile(epinay)
	require.NoError(t, err)
	dir := t.TempDir()
	path := filepath.Join(dir, "epinay.geojson")
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	code, out, errOut := run(t, env, "backfill", "--dir", dir, "--key", "id")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "1 written")
	require.NoError(t, os.WriteFile(path, epinayV2(t, raw), 0o644))
	require.NoError(t, os.Chtimes(path, time.Now().Add(time.Minute), time.Now().Add(time.Minute)))
	code, out, errOut = run(t, env, "backfill", "--dir", dir, "--key", "id")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "1 written")
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM jobs WHERE status = 'replaced'`))
	require.EqualValues(t, 4241-5-13, queryInt(t, db, `SELECT unchanged FROM job_changes WHERE base_job_id IS NOT NULL`))

	full := filepath.Join(t.TempDir(), "epinay.geojson")
	require.NoError(t, os.WriteFile(full, epinayV2(t, raw), 0o644))
	code, out, errOut = run(t, map[string]string{"DATABASE_URL": empty}, "ingest", "--key", "id", full)
	require.Equal(t, 0, code, out+errOut)
	gotRows, gotLedger := currentDigest(t, db, path)
	wantRows, wantLedger := currentDigest(t, empty, full)
	require.Equal(t, wantRows, gotRows, "the current rows are a full load's, feature for feature")
	require.Equal(t, wantLedger, gotLedger, "the ledger's count, area and checksum are a full load's")
	code, out, errOut = run(t, env, "verify")
	require.Equal(t, 0, code, out+errOut)
}

// geoJSONPolygon is a GeoJSON Polygon object as a change record's extent
// is written; it fails to decode from a string holding one.
type geoJSONPolygon struct {
	Type        string         `json:"type"`
	Coordinates [][][2]float64 `json:"coordinates"`
}

func (g geoJSONPolygon) requireBox(t *testing.T, what string) {
	t.Helper()
	require.Equal(t, "Polygon", g.Type, what)
	require.Len(t, g.Coordinates, 1, what)
	require.GreaterOrEqual(t, len(g.Coordinates[0]), 4, what)
	for _, c := range g.Coordinates[0] {
		// Épinay-sur-Orge (91216), and epinayV2 adds parcels near 3, 49.
		require.True(t, c[0] > 2 && c[0] < 4 && c[1] > 48 && c[1] < 50, "%s: %v", what, c)
	}
}
