package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/geoingest/geoingest/geomio"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	"github.com/twpayne/go-geom"
)

// toGeoParquet writes the features of src to dst as GeoParquet with crs as
// the geometry column's crs member (nil: none, OGC:CRS84).
func toGeoParquet(t *testing.T, src, dst string, crs json.RawMessage) string {
	t.Helper()
	r, err := geomio.Open(src, geomio.Options{})
	require.NoError(t, err)
	defer r.Close()
	testfiles.GeoParquetFrom(t, dst, func(yield func(geom.T, []byte) bool) {
		for r.Next() {
			if !yield(r.Feature().Geom, r.Feature().Properties) {
				return
			}
		}
	}, testfiles.GeoParquetOptions{CRS: crs, RowGroupRows: 2000})
	require.NoError(t, r.Err())
	return dst
}

func readProjJSON(t *testing.T, name string) json.RawMessage {
	b, err := os.ReadFile(filepath.Join("../../geomio/geoparquet/testdata", name))
	require.NoError(t, err)
	return b
}

// TestIngestGeoParquet: a GeoParquet file lands as its GeoJSON (or
// shapefile) source does, the same count and area; one in a UTM zone,
// named by PROJJSON, is reprojected where the shapefile's .prj puts it.
func TestIngestGeoParquet(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	env := map[string]string{"DATABASE_URL": url}
	dir := t.TempDir()
	for _, tc := range []struct {
		src, dst string
		crs      json.RawMessage
	}{
		{"../../testdata/synthetic/parcels_10k.geojson", "parcels_10k.parquet", nil},
		{"../../testdata/corpus/utm18_polygon_a/a_utm.shp", "a_utm.geoparquet", readProjJSON(t, "epsg26918.projjson")},
	} {
		pq := toGeoParquet(t, tc.src, filepath.Join(dir, tc.dst), tc.crs)
		code, out, errOut := run(t, env, "ingest", "--json", tc.src, pq)
		require.Equal(t, 0, code, errOut)
		ls := parseLines(t, out)
		require.Len(t, ls, 2)
		require.Equal(t, "written", ls[1].Outcome, ls[1].Error)
		require.Equal(t, ls[0].Features, ls[1].Features, tc.dst)
		require.InEpsilon(t, ls[0].AreaM2, ls[1].AreaM2, 1e-9, tc.dst)
		// inspect, with no database, names the job ingest ran.
		code, out, errOut = run(t, nil, "inspect", "--json", pq)
		require.Equal(t, 0, code, errOut)
		var rep struct {
			JobKey string `json:"job_key"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		require.Equal(t, ls[1].JobID, rep.JobKey)
	}
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	// GDAL's load of a_utm.shp into EPSG:4326 (the corpus oracle).
	var x0, y0, x1, y1 float64
	require.NoError(t, conn.QueryRow(context.Background(), `SELECT ST_XMin(e), ST_YMin(e), ST_XMax(e), ST_YMax(e)
		FROM (SELECT ST_Extent(geom) AS e FROM parcels WHERE layer = 'a_utm') s`).Scan(&x0, &y0, &x1, &y1))
	for i, want := range []float64{-74.101857, 40.574103, -74.052253, 40.620517} {
		require.InDelta(t, want, []float64{x0, y0, x1, y1}[i], 1e-6)
	}
}

// TestIngestGeoParquetMissingGrid: a GeoParquet file in NAD27(CGQ77)
// fails, saying which grid would let PROJ transform it and how to install
// it.
func TestIngestGeoParquetMissingGrid(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDB(t)
	pq := testfiles.GeoParquet(t, filepath.Join(t.TempDir(), "quebec.parquet"), func(yield func(testfiles.GeoParquetRow) bool) {
		yield(testfiles.GeoParquetRow{})
	}, testfiles.GeoParquetOptions{CRS: readProjJSON(t, "epsg2016.projjson")})
	code, out, _ := run(t, map[string]string{"DATABASE_URL": url}, "ingest", "--json", pq)
	require.Equal(t, 1, code)
	ls := parseLines(t, out)
	require.Equal(t, "failed", ls[0].Outcome)
	require.Contains(t, ls[0].Error, "ca_que_mern_cq77na83.tif")
	require.Contains(t, ls[0].Error, "projsync")
}
