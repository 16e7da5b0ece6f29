package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/geoingest/geoingest/ingest"
	"github.com/geoingest/geoingest/internal/testsupport/pgtest"
	"github.com/geoingest/geoingest/internal/testsupport/testfiles"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// writeLargeGeoJSON writes n parcels at column x, padded so that the file
// is over the write gate's 8 MiB own-partition threshold.
func writeLargeGeoJSON(t *testing.T, path string, x, n int) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	w := bufio.NewWriter(f)
	pad := strings.Repeat("p", 400)
	fmt.Fprint(w, `{"type":"FeatureCollection","features":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			fmt.Fprint(w, ",")
		}
		lon, lat := 2+float64(x)*0.1+float64(i%150)*0.0003, 48+float64(i/150)*0.0003
		fmt.Fprintf(w, `{"type":"Feature","properties":{"i":%d,"pad":%q},"geometry":{"type":"Polygon","coordinates":[[[%f,%f],[%f,%f],[%f,%f],[%f,%f]]]}}`,
			i, pad, lon, lat, lon+0.0002, lat, lon+0.0002, lat+0.0002, lon, lat)
	}
	fmt.Fprint(w, `]}`)
	require.NoError(t, w.Flush())
	require.NoError(t, f.Close())
	st, err := os.Stat(path)
	require.NoError(t, err)
	require.GreaterOrEqual(t, st.Size(), int64(8<<20))
}

// compactRig is a database holding two generations of 21,000 parcels,
// each in a partition of its own, written by `geoingest ingest`.
func compactRig(t *testing.T) (db string, env map[string]string) {
	t.Helper()
	db = pgtest.NewDB(t)
	env = map[string]string{"DATABASE_URL": db, "GEOINGEST_HOME": t.TempDir()}
	dir := t.TempDir()
	for i := 0; i < 2; i++ {
		p := filepath.Join(dir, fmt.Sprintf("county%d.geojson", i))
		writeLargeGeoJSON(t, p, i, 21000)
		code, out, errOut := run(t, env, "ingest", "--no-compact", "--target", "parcels", p)
		require.Equal(t, 0, code, out+errOut)
	}
	require.EqualValues(t, 2, queryInt(t, db, `SELECT count(*) FROM jobs WHERE job_ref > 0 AND status = 'current'`))
	return db, env
}

// ledgerState is what no fold, finished or not, may change.
func ledgerState(t *testing.T, db string) string {
	t.Helper()
	var s string
	conn, err := pgx.Connect(context.Background(), db)
	require.NoError(t, err)
	defer conn.Close(context.Background())
	require.NoError(t, conn.QueryRow(context.Background(), `
		SELECT string_agg(job_id || ' ' || status || ' ' || feature_count || ' ' || total_area_m2 || ' ' || features_checksum, E'\n' ORDER BY job_id)
		FROM jobs`).Scan(&s))
	return s
}

// requireOnceAndClean: every parcel once, and verify clean.
func requireOnceAndClean(t *testing.T, db string, env map[string]string) {
	t.Helper()
	require.EqualValues(t, 42000, queryInt(t, db, `SELECT count(*) FROM parcels`))
	require.EqualValues(t, 42000, queryInt(t, db, `SELECT count(*) FROM geoingest_current_parcels`))
	code, out, errOut := run(t, env, "verify")
	require.Equal(t, 0, code, out+errOut)
}

// TestCompactKilledMidFold: `geoingest compact` is SIGKILLed, and then
// the database cuts its session, at the point where a fold has copied the
// rows, re-pointed the ledger row and emptied the own partition but not
// committed: nothing is lost or doubled, the ledger is unchanged, verify
// is clean; the next run folds both generations.
func TestCompactKilledMidFold(t *testing.T) {
	t.Parallel()
	db, env := compactRig(t)
	before := ledgerState(t, db)
	requireOnceAndClean(t, db, env)

	compact := func(extra ...string) (*exec.Cmd, *testfiles.SyncBuffer) {
		cmd := exec.Command(binary, "compact", "--keep", "0", "--database-url", db, "--log-level", "info")
		cmd.Env = append(os.Environ(), append([]string{"GEOINGEST_HOME=" + env["GEOINGEST_HOME"]}, extra...)...)
		var out testfiles.SyncBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		return cmd, &out
	}

	// SIGKILL before the fold's COMMIT.
	cmd, out := compact("GEOINGEST_TEST_CRASH_AT=" + ingest.HookBeforeFoldCommit)
	err := cmd.Run()
	require.Error(t, err, out.String())
	require.Contains(t, err.Error(), "killed", out.String())
	require.Equal(t, before, ledgerState(t, db))
	require.EqualValues(t, 2, queryInt(t, db, `SELECT count(*) FROM jobs WHERE job_ref > 0 AND status = 'current'`))
	require.Zero(t, queryInt(t, db, `SELECT count(*) FROM geoingest_folded`))
	requireOnceAndClean(t, db, env)

	// The database goes away (every session cut) while a fold waits to
	// commit.
	marker := filepath.Join(t.TempDir(), "paused")
	cmd, out = compact("GEOINGEST_TEST_PAUSE_AT="+ingest.HookBeforeFoldCommit, "GEOINGEST_TEST_MARKER="+marker)
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	require.Eventually(t, func() bool { _, err := os.Stat(marker); return err == nil }, time.Minute, 50*time.Millisecond, out.String())
	require.NoError(t, pgtest.Outage(context.Background(), t, db, 500*time.Millisecond))
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	require.Equal(t, before, ledgerState(t, db))
	requireOnceAndClean(t, db, env)

	// A run to the end folds both.
	inherited := `SELECT count(*) FROM pg_statistic WHERE starelid = 'geoingest_store.parcels'::regclass AND stainherit`
	require.Zero(t, queryInt(t, db, inherited))
	code, stdout, errOut := run(t, env, "compact", "--keep", "0")
	require.Equal(t, 0, code, stdout+errOut)
	require.Contains(t, stdout, "2 jobs folded (42000 rows), 2 emptied partitions dropped, 0 waiting")
	// The table folded into is analyzed as a whole, as the batch
	// commands' last rounds leave it.
	require.Positive(t, queryInt(t, db, inherited))
	require.Equal(t, before, ledgerState(t, db))
	require.Zero(t, queryInt(t, db, `SELECT count(*) FROM jobs WHERE job_ref > 0`))
	require.EqualValues(t, 1, queryInt(t, db, `SELECT count(*) FROM pg_inherits WHERE inhparent = 'geoingest_store.parcels'::regclass`))
	requireOnceAndClean(t, db, env)
}

// ogrLayers lists the layers GDAL's PostgreSQL driver shows for the
// database at conn (a keyword connection string), as QGIS and ogr2ogr
// meet them (`ogrinfo -ro -so PG:...`), each with its geometry type as
// ogrinfo prints it ("Multi Polygon"). A layer outside the user's current
// schema is named schema.table.
func ogrLayers(t *testing.T, conn string) map[string]string {
	t.Helper()
	out, err := exec.Command("ogrinfo", "-ro", "-so", "PG:"+conn).CombinedOutput()
	require.NoError(t, err, string(out))
	layers := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		// "1: parcels (Multi Polygon)"
		n, rest, ok := strings.Cut(line, ": ")
		if _, err := strconv.Atoi(n); err != nil || !ok {
			continue
		}
		name, typ, _ := strings.Cut(rest, " (")
		layers[name] = strings.TrimSuffix(typ, ")")
		t.Logf("ogrinfo: %s", line)
	}
	return layers
}

// storageLayer reports whether an ogrinfo layer name is a storage table
// listed unqualified, as if an analyst should open it.
var storageLayer = regexp.MustCompile(`^(parcels|admin_units)_(shared|job_[0-9]+)$`)

// analystLayers are the relations with a geometry column that a client may
// list unqualified: what analysts read. Internal tables with geometry
// (report_admin_generations, the report refresh's cache) hold it in the
// domain geoingest_internal_geometry (migration 0017), so none is listed.
var analystLayers = map[string]bool{
	"parcels": true, "admin_units": true, "geoingest_current_parcels": true, "geoingest_current_admin_units": true,
	"geoingest_features": true, "geoingest_report_parcels": true,
}

// TestCompactRolesAndWhatClientsList: what GDAL's PostgreSQL driver (QGIS,
// ogrinfo, ogr2ogr) lists, as the owner and as the analyst, before and
// after compaction: parcels, admin_units and the current views, each with
// its geometry type, and no storage table unqualified (a large job's own
// partition only as geoingest_store.parcels_job_<ref>, and none after
// compaction); the analyst opens parcels with its type and SRID, and
// PostGIS's geometry_columns shows it no storage. The writer compacts and
// the analyst may not; verify as the analyst is clean after.
func TestCompactRolesAndWhatClientsList(t *testing.T) {
	t.Parallel()
	requireGDALTool(t, "ogrinfo")
	d := setupLeastPrivilege(t)
	asWriter := map[string]string{"DATABASE_URL": d.writer, "GEOINGEST_OWN_PARTITION_BYTES": "1"}
	asAnalyst := map[string]string{"DATABASE_URL": d.analyst}
	dir := t.TempDir()
	for i, src := range []string{epinay, synthParcels, "../../testdata/corpus/montreal_landuse_overpass/export.geojson"} {
		p := filepath.Join(dir, fmt.Sprintf("parcels-%d.geojson", i))
		copyWithMtime(t, src, p, time.Now())
		code, out, errOut := run(t, asWriter, "ingest", "--no-compact", p)
		require.Equal(t, 0, code, out+errOut)
	}
	admin := filepath.Join(dir, "admin.geojson")
	copyWithMtime(t, synthAdmin, admin, time.Now())
	code, out, errOut := run(t, asWriter, "ingest", "--no-compact", "--target", "admin_units", admin)
	require.Equal(t, 0, code, out+errOut)

	requireListing := func(when string, conn string, ownPartitions int) {
		t.Helper()
		layers := ogrLayers(t, conn)
		for _, name := range []string{"parcels", "admin_units", "geoingest_current_parcels", "geoingest_current_admin_units"} {
			require.Equal(t, "Multi Polygon", layers[name], "%s: %s not listed with its geometry type: %v", when, name, layers)
		}
		own := 0
		for name := range layers {
			require.False(t, storageLayer.MatchString(name), "%s: storage table %s listed unqualified: %v", when, name, layers)
			require.True(t, strings.HasPrefix(name, "geoingest_store.") || analystLayers[name],
				"%s: %s listed unqualified, and it is not a relation analysts read: %v", when, name, layers)
			if strings.HasPrefix(name, "geoingest_store.") && strings.Contains(name, "_job_") {
				own++
			}
		}
		require.Equal(t, ownPartitions, own, "%s: own partitions listed (qualified): %v", when, layers)
	}
	for _, conn := range []string{d.owner, d.analyst} {
		requireListing("before compaction", conn, 4)
	}

	// The analyst opens parcels as a layer of its own: its type, its SRID
	// and every row; and geometry_columns shows it no storage table.
	info, err := exec.Command("ogrinfo", "-ro", "-so", "PG:"+d.analyst, "parcels").CombinedOutput()
	require.NoError(t, err, string(info))
	require.Contains(t, string(info), "Geometry: Multi Polygon")
	require.Contains(t, string(info), `ID["EPSG",4326]`)
	require.Contains(t, string(info), fmt.Sprintf("Feature Count: %d", queryInt(t, d.owner, `SELECT count(*) FROM parcels`)))
	require.Zero(t, queryInt(t, d.analyst, `SELECT count(*) FROM geometry_columns WHERE f_table_schema = 'geoingest_store'`))
	require.EqualValues(t, 2, queryInt(t, d.analyst, `SELECT count(*) FROM geometry_columns
		WHERE f_table_schema = 'public' AND f_table_name IN ('parcels', 'admin_units') AND type = 'MULTIPOLYGON' AND srid = 4326`))

	code, out, errOut = run(t, asAnalyst, "compact", "--keep", "0")
	require.Equal(t, 1, code, out+errOut)
	require.Contains(t, errOut, "permission denied")
	require.EqualValues(t, 4, queryInt(t, d.owner, `SELECT count(*) FROM jobs WHERE job_ref > 0`))

	code, out, errOut = run(t, map[string]string{"DATABASE_URL": d.writer}, "compact", "--keep", "0")
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, "4 jobs folded")
	// PostgreSQL 15 lets only the owner ANALYZE: the folds are done, and
	// the writer is told who may gather the statistics.
	require.Contains(t, errOut, "may not ANALYZE")
	for _, conn := range []string{d.owner, d.analyst} {
		requireListing("after compaction", conn, 0)
	}
	code, out, errOut = run(t, asAnalyst, "verify")
	require.Equal(t, 0, code, out+errOut)
}
