package postgis

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/geomio/ogr"
	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/migrations"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// curvesCSV is a layer of three polygons with Z and M, two of them curved
// (a circle of radius 1, and a half disc bounded by an arc and a line).
const curvesCSV = `id,WKT
1,"CURVEPOLYGON ZM (CIRCULARSTRING ZM (0 0 5 7,1 1 5 7,2 0 5 7,1 -1 5 7,0 0 5 7))"
2,"POLYGON ZM ((0 0 1 2,1 0 1 2,1 1 1 2,0 0 1 2))"
3,"MULTISURFACE ZM (CURVEPOLYGON ZM (COMPOUNDCURVE ZM (CIRCULARSTRING ZM (0 0 1 2,1 1 1 2,2 0 1 2),(2 0 1 2,0 0 1 2))))"
`

// TestGeometryChangesRecorded: what a reader changed of the geometries
// (curves linearised, Z/M dropped) and the geometry field it chose are
// recorded on the written job, in the ledger (jobs: the job's totals) and
// per layer (job_crs), and shown by the Store's read of a job and the console. Files made
// with ogr2ogr: a GeoPackage with a curved ZM layer beside a plain one, the
// same curves as a zipped File Geodatabase, and a GML layer with two
// geometry fields; and a GeoJSON file with altitudes in one polygon.
func TestGeometryChangesRecorded(t *testing.T) {
	if !ogr.Available {
		t.Skip("built without GDAL")
	}
	requireGDAL(t)
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	dir := t.TempDir()
	csv := filepath.Join(dir, "curves.csv")
	require.NoError(t, os.WriteFile(csv, []byte(curvesCSV), 0o644))

	gpkg := filepath.Join(dir, "curves.gpkg")
	runOGR2OGR(t, "-f", "GPKG", gpkg, csv, "-a_srs", "EPSG:3857", "-nlt", "GEOMETRYZM", "-nln", "curves")
	runOGR2OGR(t, "-update", "-nlt", "PROMOTE_TO_MULTI", "-f", "GPKG", gpkg, corpusDir+"/six_counties/six_counties.shp", "-nln", "counties")
	gdb := filepath.Join(dir, "curves.gdb")
	runOGR2OGR(t, "-f", "OpenFileGDB", gdb, csv, "-a_srs", "EPSG:3857", "-nlt", "MULTISURFACE", "-dim", "XYZM", "-nln", "curves")
	zip := exec.Command("zip", "-qr", "curves.gdb.zip", "curves.gdb")
	zip.Dir = dir
	msg, err := zip.CombinedOutput()
	require.NoError(t, err, "zip: %s", msg)
	// A GML layer with two geometry fields, uploaded with its .xsd beside
	// it (the GML file's set).
	runOGR2OGR(t, "-f", "GML", "-dsco", "FORMAT=GML3", filepath.Join(dir, "two.gml"), corpusDir+"/six_counties/six_counties.shp", "-dialect", "SQLITE", "-nln", "parcel",
		"-sql", "SELECT ST_Buffer(ST_Centroid(geometry), 0.001) AS centre, geometry AS footprint, NAME FROM six_counties")
	gml := filepath.Join(dir, "two.gml")
	// GeoJSON with an altitude in one of its two polygons.
	gj := filepath.Join(dir, "z.geojson")
	require.NoError(t, os.WriteFile(gj, []byte(`{"type":"FeatureCollection","features":[
{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[2,48,35],[2.001,48,35],[2.001,48.001,36],[2,48,35]]]}},
{"type":"Feature","properties":{},"geometry":{"type":"Polygon","coordinates":[[[3,48],[3.001,48],[3.001,48.001],[3,48]]]}}]}`), 0o644))

	type layer struct {
		field          string
		linearised, zm int64
	}
	for _, tc := range []struct {
		file           string
		linearised, zm int64
		layers         map[string]layer
	}{
		{file: gpkg, linearised: 2, zm: 3, layers: map[string]layer{"curves": {"", 2, 3}, "counties": {"", 0, 0}}},
		// GDAL's OpenFileGDB writer stores the compound curve without its
		// Z and M (ogrinfo shows it so): two features with Z/M there.
		{file: filepath.Join(dir, "curves.gdb.zip"), linearised: 2, zm: 2, layers: map[string]layer{"curves": {"", 2, 2}}},
		{file: gml, layers: map[string]layer{"parcel": {"centre", 0, 0}}},
		{file: gj, zm: 1, layers: map[string]layer{"z": {"", 0, 1}}},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			job := localJob(t, tc.file, ingest.DefaultParams("parcels"))
			r := b.svc.Run(ctx, job)
			require.NoError(t, r.Err)
			require.Equal(t, ingest.Written, r.Outcome)

			var linearised, zm int64
			require.NoError(t, b.pool.QueryRow(ctx, `SELECT linearised_curves, dropped_zm FROM jobs WHERE job_id = $1`, job.ID).Scan(&linearised, &zm))
			require.Equal(t, tc.linearised, linearised, "jobs.linearised_curves")
			require.Equal(t, tc.zm, zm, "jobs.dropped_zm")

			rows, err := b.pool.Query(ctx, `SELECT layer, geometry_field, linearised_curves, dropped_zm FROM job_crs WHERE job_id = $1`, job.ID)
			require.NoError(t, err)
			got := map[string]layer{}
			for rows.Next() {
				var name string
				var l layer
				require.NoError(t, rows.Scan(&name, &l.field, &l.linearised, &l.zm))
				got[name] = l
			}
			require.NoError(t, rows.Err())
			require.Equal(t, tc.layers, got, "job_crs, per layer")

			d, err := b.store.ConsoleJob(ctx, job.ID)
			require.NoError(t, err)
			require.NotNil(t, d.Ledger)
			require.Equal(t, tc.linearised, d.Ledger.LinearisedCurves)
			require.Equal(t, tc.zm, d.Ledger.DroppedZM)
			require.Len(t, d.CRS, len(tc.layers))
			for _, c := range d.CRS {
				require.Equal(t, tc.layers[c.Layer], layer{c.GeometryField, c.LinearisedCurves, c.DroppedZM}, c.Layer)
			}
			rec, err := NewConsole(b.pool).ConsoleJob(ctx, job.ID)
			require.NoError(t, err)
			require.NotNil(t, rec.Ledger)
			require.Equal(t, tc.linearised, rec.Ledger.LinearisedCurves)
			require.Equal(t, tc.zm, rec.Ledger.DroppedZM)
			require.Len(t, rec.CRS, len(tc.layers))
			for _, c := range rec.CRS {
				require.Equal(t, tc.layers[c.Layer], layer{c.GeometryField, c.LinearisedCurves, c.DroppedZM}, c.Layer)
			}
		})
	}
}

// TestMigration0013DownAndUp: version 13 adds the counts of linearised
// curves and dropped Z/M to jobs and job_crs, and job_crs's geometry
// field; down removes them keeping every job and layer row, and up brings
// them back, as zeros and ” for the jobs written meanwhile.
func TestMigration0013DownAndUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDB(t)
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	columns := func() int {
		var n int
		require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.columns
			WHERE (table_name, column_name) IN (('jobs', 'linearised_curves'), ('jobs', 'dropped_zm'),
				('job_crs', 'geometry_field'), ('job_crs', 'linearised_curves'), ('job_crs', 'dropped_zm'))`).Scan(&n))
		return n
	}
	_, err = pool.Exec(ctx, `INSERT INTO jobs (job_id, source_bucket, source_key, version_token, params, pipeline,
			pipeline_version, target_table, status, content_hash, job_ref, linearised_curves, dropped_zm)
		VALUES (repeat('a', 64), 'b', 'k', 'v', '{}', 'geoingest', '1', 'parcels', 'current', 'h', -1, 2, 3)`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO job_crs (job_id, layer, method, srid, geometry_field, linearised_curves, dropped_zm)
		VALUES (repeat('a', 64), 'curves', 'authority', 3857, 'shape', 2, 3)`)
	require.NoError(t, err)
	require.Equal(t, 5, columns())

	require.NoError(t, migrations.To(url, 12))
	require.Zero(t, columns())
	var jobs, layers int
	require.NoError(t, pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM job_crs)`).Scan(&jobs, &layers))
	require.Equal(t, []int{1, 1}, []int{jobs, layers}, "down keeps every job and layer row")

	require.NoError(t, migrations.To(url, migrations.Latest()))
	require.Equal(t, 5, columns())
	var linearised, zm int64
	var field string
	require.NoError(t, pool.QueryRow(ctx, `SELECT j.linearised_curves, j.dropped_zm, c.geometry_field
		FROM jobs j JOIN job_crs c USING (job_id)`).Scan(&linearised, &zm, &field))
	require.Equal(t, []int64{0, 0}, []int64{linearised, zm})
	require.Empty(t, field)
}
